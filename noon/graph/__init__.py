"""The URI memory graph: derived from the fold, pure (no I/O).

- :mod:`noon.graph.uri`: URIs, names, domain roots (``@domain``), node ids.
- :mod:`noon.graph.reader`: placements, parents, keywords, boot; URIs derived by walking names.
- :mod:`noon.graph.plan`: one edit -> the drafts of one atomic batch, with its checks.
- :mod:`noon.graph.views`: the ``system://`` views (conflicts and orphans are
  :mod:`noon.mcp.uri_views` over :mod:`noon.app.conflicts` and :mod:`noon.app.orphans`).
- :mod:`noon.graph.search`: ranked full-text search; :mod:`noon.graph.glossary`: auto-linking.
- :mod:`noon.graph.quote`: editing memory text by quoting.
"""
