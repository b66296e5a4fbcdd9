"""The knowledge graph of the official MCP memory server, on noon's replicated store.

Pure: :mod:`noon.kg.graph` turns the fold into the official graph, :mod:`noon.kg.plan` turns
each of the nine tool calls into drafts, :mod:`noon.kg.text` renders values the way the official
server does, :mod:`noon.kg.uri` renders one entity as a URI-readable node.
"""
