"""The use cases of noon, one room for every edge: what creating, editing, moving, deleting,
undoing, reviewing and searching a memory does and refuses.

Each use case is a function taking the store's :class:`~noon.store.access.GraphService`, the
:class:`~noon.app.actor.Actor` asking (namespace, client and edge), and typed arguments; it
returns a typed result (a frozen dataclass) and refuses with one of the kinds of
:mod:`noon.errors`, having written nothing. The edges only translate: MCP tools
(:mod:`noon.mcp`) turn argument models into these calls and results into text for agents; the
page (:mod:`noon.web`) turns them into JSON; refusals map to each edge's form once.
"""
