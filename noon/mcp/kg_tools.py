"""The nine tools and the resource of ``@modelcontextprotocol/server-memory``, on noon's store.

Names, titles, descriptions, annotations and schemas are the official ones verbatim (as listed by
the official server 2026.8.31, see docs/knowledge-graph.md); results, messages and ``isError``
behaviour too. The semantics live in :mod:`noon.kg.plan`; this module only binds them to MCP.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread

from noon.kg import plan
from noon.kg.graph import KgReader
from noon.kg.text import pretty
from noon.mcp.spec import (
    Family,
    ResourceSpec,
    ToolContext,
    ToolResult,
    Tools,
    tool_hints,
    tool_text,
)
from noon.store.access import kg_mutate, kg_read
from noon.store.kg_answers import graph_answer, graph_text

GRAPH_URI = "memory://knowledge-graph"

_DRAFT07 = "http://json-schema.org/draft-07/schema#"
_ENTITY_PROPS: dict[str, Any] = {
    "name": {"type": "string", "description": "The name of the entity"},
    "entityType": {"type": "string", "description": "The type of the entity"},
    "observations": {
        "type": "array",
        "items": {"type": "string"},
        "description": "An array of observation contents associated with the entity",
    },
}
_RELATION_PROPS: dict[str, Any] = {
    "from": {"type": "string", "description": "The name of the entity where the relation starts"},
    "to": {"type": "string", "description": "The name of the entity where the relation ends"},
    "relationType": {"type": "string", "description": "The type of the relation"},
}
_ENTITY_REQUIRED = ["name", "entityType", "observations"]
_RELATION_REQUIRED = ["from", "to", "relationType"]


def _obj(props: dict[str, Any], required: list[str], *, closed: bool) -> dict[str, Any]:
    """An object schema as zod-to-json-schema writes it: output objects are closed."""
    out: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    if closed:
        out["additionalProperties"] = False
    return out


def _top(props: dict[str, Any], required: list[str] | None, *, closed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"$schema": _DRAFT07, "type": "object", "properties": props}
    if required is not None:
        out["required"] = required
    if closed:
        out["additionalProperties"] = False
    return out


def _entities(closed: bool) -> dict[str, Any]:
    return {"type": "array", "items": _obj(_ENTITY_PROPS, _ENTITY_REQUIRED, closed=closed)}


def _relations(closed: bool) -> dict[str, Any]:
    return {"type": "array", "items": _obj(_RELATION_PROPS, _RELATION_REQUIRED, closed=closed)}


_GRAPH_OUT = _top(
    {"entities": _entities(True), "relations": _relations(True)},
    ["entities", "relations"],
    closed=True,
)
_STATUS_OUT = _top(
    {"success": {"type": "boolean"}, "message": {"type": "string"}},
    ["success", "message"],
    closed=True,
)


_ADD = tool_hints(read_only=False, destructive=False, idempotent=False)
_DELETE = tool_hints(read_only=False, destructive=True, idempotent=True)
_READ = tool_hints(read_only=True, destructive=False, idempotent=True)

tools = Tools()


Planner = Callable[[KgReader, Any], plan.Planned]


async def _mutate(ctx: ToolContext, planner: Planner, arg: Any) -> Any:
    """Plan and write one batch off the event loop (it fsyncs); notify subscribers after.
    A refusal (``KGError``: an unknown entity, an over-long name) writes nothing; a call
    listing too many items is refused before the store is touched."""
    plan.check_size(planner.__name__, arg)
    result = await anyio.to_thread.run_sync(
        lambda: kg_mutate(ctx.store, ctx.namespace, planner, arg, ctx.client, ctx.via)
    )
    await ctx.changed()
    return result


async def _read(ctx: ToolContext, fn: Callable[[KgReader], Any]) -> Any:
    return await anyio.to_thread.run_sync(lambda: kg_read(ctx.store, ctx.namespace, fn))


@tools.tool(
    name="create_entities",
    title="Create Entities",
    description="Create multiple new entities in the knowledge graph",
    input_schema=_top({"entities": _entities(False)}, ["entities"], closed=False),
    output_schema=_top({"entities": _entities(True)}, ["entities"], closed=True),
    annotations=_ADD,
)
async def create_entities(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    created = await _mutate(ctx, plan.create_entities, args["entities"])
    return tool_text(pretty(created), {"entities": created})


@tools.tool(
    name="create_relations",
    title="Create Relations",
    description=(
        "Create multiple new relations between entities in the knowledge graph. "
        "Relations should be in active voice"
    ),
    input_schema=_top({"relations": _relations(False)}, ["relations"], closed=False),
    output_schema=_top({"relations": _relations(True)}, ["relations"], closed=True),
    annotations=_ADD,
)
async def create_relations(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    created = await _mutate(ctx, plan.create_relations, args["relations"])
    return tool_text(pretty(created), {"relations": created})


@tools.tool(
    name="add_observations",
    title="Add Observations",
    description="Add new observations to existing entities in the knowledge graph",
    input_schema=_top(
        {
            "observations": {
                "type": "array",
                "items": _obj(
                    {
                        "entityName": {
                            "type": "string",
                            "description": "The name of the entity to add the observations to",
                        },
                        "contents": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "An array of observation contents to add",
                        },
                    },
                    ["entityName", "contents"],
                    closed=False,
                ),
            }
        },
        ["observations"],
        closed=False,
    ),
    output_schema=_top(
        {
            "results": {
                "type": "array",
                "items": _obj(
                    {
                        "entityName": {"type": "string"},
                        "addedObservations": {"type": "array", "items": {"type": "string"}},
                    },
                    ["entityName", "addedObservations"],
                    closed=True,
                ),
            }
        },
        ["results"],
        closed=True,
    ),
    annotations=_ADD,
)
async def add_observations(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    results = await _mutate(ctx, plan.add_observations, args["observations"])
    return tool_text(pretty(results), {"results": results})


async def _status(ctx: ToolContext, planner: Planner, arg: Any) -> ToolResult:
    message = await _mutate(ctx, planner, arg)
    return tool_text(message, {"success": True, "message": message})


@tools.tool(
    name="delete_entities",
    title="Delete Entities",
    description="Delete multiple entities and their associated relations from the knowledge graph",
    input_schema=_top(
        {
            "entityNames": {
                "type": "array",
                "items": {"type": "string"},
                "description": "An array of entity names to delete",
            }
        },
        ["entityNames"],
        closed=False,
    ),
    output_schema=_STATUS_OUT,
    annotations=_DELETE,
)
async def delete_entities(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return await _status(ctx, plan.delete_entities, args["entityNames"])


@tools.tool(
    name="delete_observations",
    title="Delete Observations",
    description="Delete specific observations from entities in the knowledge graph",
    input_schema=_top(
        {
            "deletions": {
                "type": "array",
                "items": _obj(
                    {
                        "entityName": {
                            "type": "string",
                            "description": "The name of the entity containing the observations",
                        },
                        "observations": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "An array of observations to delete",
                        },
                    },
                    ["entityName", "observations"],
                    closed=False,
                ),
            }
        },
        ["deletions"],
        closed=False,
    ),
    output_schema=_STATUS_OUT,
    annotations=_DELETE,
)
async def delete_observations(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return await _status(ctx, plan.delete_observations, args["deletions"])


@tools.tool(
    name="delete_relations",
    title="Delete Relations",
    description="Delete multiple relations from the knowledge graph",
    input_schema=_top(
        {"relations": {**_relations(False), "description": "An array of relations to delete"}},
        ["relations"],
        closed=False,
    ),
    output_schema=_STATUS_OUT,
    annotations=_DELETE,
)
async def delete_relations(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return await _status(ctx, plan.delete_relations, args["relations"])


@tools.tool(
    name="read_graph",
    title="Read Graph",
    description="Read the entire knowledge graph",
    input_schema=_top({}, None, closed=False),
    output_schema=_GRAPH_OUT,
    annotations=_READ,
)
async def read_graph(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    text, graph = await anyio.to_thread.run_sync(lambda: graph_answer(ctx.store, ctx.namespace))
    return tool_text(text, graph)


@tools.tool(
    name="search_nodes",
    title="Search Nodes",
    description="Search for nodes in the knowledge graph based on a query",
    input_schema=_top(
        {
            "query": {
                "type": "string",
                "description": (
                    "The search query to match against entity names, types, and observation content"
                ),
            }
        },
        ["query"],
        closed=False,
    ),
    output_schema=_GRAPH_OUT,
    annotations=_READ,
)
async def search_nodes(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    found = await _read(ctx, lambda view: view.search(args["query"]))
    return tool_text(pretty(found), found)


@tools.tool(
    name="open_nodes",
    title="Open Nodes",
    description="Open specific nodes in the knowledge graph by their names",
    input_schema=_top(
        {
            "names": {
                "type": "array",
                "items": {"type": "string"},
                "description": "An array of entity names to retrieve",
            }
        },
        ["names"],
        closed=False,
    ),
    output_schema=_GRAPH_OUT,
    annotations=_READ,
)
async def open_nodes(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    found = await _read(ctx, lambda view: view.open(args["names"]))
    return tool_text(pretty(found), found)


def read_graph_resource(ctx: ToolContext) -> str:
    return graph_text(ctx.store, ctx.namespace)


FAMILY = Family(
    name="kg",
    tools=list(tools),
    resources=[
        ResourceSpec(
            uri=GRAPH_URI,
            name="knowledge-graph",
            title="Knowledge Graph",
            description="The full knowledge graph with all entities and relations",
            mime_type="application/json",
            read=read_graph_resource,
        )
    ],
    refusals=(plan.KGError,),
    # The drop-in keeps the official server's messages byte for byte: no argument hints.
    argument_hints=False,
    # Its adds skip what is held, so a retry writes nothing again (tests/store/test_retries.py).
    recognises_retries=False,
)
