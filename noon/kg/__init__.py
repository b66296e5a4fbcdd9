"""The knowledge graph of the official MCP memory server, on noon's replicated store.

Pure: :mod:`noon.kg.graph` holds the official graph's rules (keys, texts, matching),
:mod:`noon.kg.plan` turns each of the nine tool calls into drafts, :mod:`noon.kg.text` renders
values the way the official server does, :mod:`noon.kg.uri` renders one entity as a
URI-readable node.
"""
