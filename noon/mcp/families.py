"""The tool families ``noon serve --tools`` can offer: the URI memory graph and the official
memory server's knowledge graph.

Each family's modules are imported when a server serves it, not before: ``noon serve --tools kg``
(the official server's drop-in) never imports the URI graph's tools, which would lengthen every
session's first answer."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from noon.mcp.spec import Family


@cache
def uri_family() -> Family:
    from noon.mcp import uri_base, uri_read, uri_recall, uri_undo, uri_update, uri_views, uri_write
    from noon.mcp.instructions import INSTRUCTIONS

    return Family(
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


def kg_family() -> Family:
    from noon.mcp import kg_tools

    return kg_tools.FAMILY


FAMILIES: dict[str, Callable[[], Family]] = {"uri": uri_family, "kg": kg_family}
"""Each family's loader, in the order their tools are listed."""
