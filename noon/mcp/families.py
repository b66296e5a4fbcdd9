"""The tool families ``noon serve --tools`` can offer: the URI memory graph and the official
memory server's knowledge graph."""

from __future__ import annotations

from noon.mcp import (
    kg_tools,
    uri_base,
    uri_read,
    uri_recall,
    uri_undo,
    uri_update,
    uri_views,
    uri_write,
)
from noon.mcp.instructions import INSTRUCTIONS
from noon.mcp.spec import Family

URI = Family(
    name="uri",
    tools=[
        *uri_read.tools,
        *uri_recall.tools,
        *uri_update.tools,
        *uri_write.tools,
        *uri_undo.tools,
    ],
    resources=uri_views.RESOURCES,
    templates=uri_views.TEMPLATES,
    read_uri=uri_views.read_resource,
    instructions=INSTRUCTIONS,
    refusals=uri_base.REFUSALS,
    error_prefix="Error: ",
)

FAMILIES: dict[str, Family] = {"uri": URI, "kg": kg_tools.FAMILY}
"""In the order their tools are listed."""
