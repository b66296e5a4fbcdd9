"""``noon web``: the page where a person sees, reviews and undoes what their agents remember
(docs/web.md). ``data.WebData`` is the page's only access to the data."""
