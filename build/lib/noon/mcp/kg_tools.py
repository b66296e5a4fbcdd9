"""The nine tools and the resource of ``@modelcontextprotocol/server-memory``, on noon's store.

Names, titles, descriptions, annotations and schemas are the official ones verbatim (as listed by
the official server 2026.8.31, see docs/knowledge-graph.md); results, messages and ``isError``
behaviour too. The semantics live in :mod:`noon.kg.plan`; this module only binds them to MCP.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread
import mcp.types as types

from noon.kg import plan
from noon.kg.graph import View
from noon.kg.live import mutate, read
from noon.kg.text import pretty
from noon.mcp.spec import ResourceSpec, ToolContext, ToolResult, ToolSpec

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


def _annotations(read_only: bool, destructive: bool, idempotent: bool) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


_ADD = _annotations(False, False, False)
_DELETE = _annotations(False, True, True)
_READ = _annotations(True, False, True)


def _text(text: str, structured: dict[str, Any]) -> ToolResult:
    """A success result in its wire form. A ``CallToolResult`` model would cost the SDK one
    more pydantic pass over the result (a third of read_graph's time on a 2 MB graph); the SDK
    still validates this dict against the protocol's result schema before sending it."""
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": False,
        "resultType": "complete",  # required from 2026-07-28, dropped for older revisions
    }


def _error(text: str) -> ToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


Planner = Callable[[View, Any], plan.Planned]


async def _mutate(ctx: ToolContext, planner: Planner, arg: Any) -> Any:
    """Plan and write one batch off the event loop (it fsyncs); notify subscribers after."""
    result = await anyio.to_thread.run_sync(
        lambda: mutate(ctx.store, ctx.namespace, planner, arg, ctx.client)
    )
    await ctx.changed()
    return result


async def _read(ctx: ToolContext, fn: Callable[[View], Any]) -> Any:
    return await anyio.to_thread.run_sync(lambda: read(ctx.store, ctx.namespace, fn))


async def create_entities(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    created = await _mutate(ctx, plan.create_entities, args["entities"])
    return _text(pretty(created), {"entities": created})


async def create_relations(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    created = await _mutate(ctx, plan.create_relations, args["relations"])
    return _text(pretty(created), {"relations": created})


async def add_observations(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    try:
        results = await _mutate(ctx, plan.add_observations, args["observations"])
    except plan.KGError as exc:
        return _error(str(exc))
    return _text(pretty(results), {"results": results})


def _status_tool(planner: Planner, field: str) -> Callable[..., Any]:
    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        message = await _mutate(ctx, planner, args[field])
        return _text(message, {"success": True, "message": message})

    return handler


async def read_graph(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    graph = await _read(ctx, View.graph)
    return _text(pretty(graph), graph)


async def search_nodes(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    found = await _read(ctx, lambda view: view.search(args["query"]))
    return _text(pretty(found), found)


async def open_nodes(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    found = await _read(ctx, lambda view: view.open(args["names"]))
    return _text(pretty(found), found)


def _wrap_errors(handler: Callable[..., Any]) -> Callable[..., Any]:
    """Refusals of the store (an over-long name, a forked shard) become isError results with
    the reason, as the official server reports its own failures."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            result: ToolResult = await handler(args, ctx)
        except plan.KGError as exc:
            return _error(str(exc))
        return result

    return run


KG_TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="create_entities",
        title="Create Entities",
        description="Create multiple new entities in the knowledge graph",
        input_schema=_top({"entities": _entities(False)}, ["entities"], closed=False),
        output_schema=_top({"entities": _entities(True)}, ["entities"], closed=True),
        annotations=_ADD,
        handler=_wrap_errors(create_entities),
    ),
    ToolSpec(
        name="create_relations",
        title="Create Relations",
        description=(
            "Create multiple new relations between entities in the knowledge graph. "
            "Relations should be in active voice"
        ),
        input_schema=_top({"relations": _relations(False)}, ["relations"], closed=False),
        output_schema=_top({"relations": _relations(True)}, ["relations"], closed=True),
        annotations=_ADD,
        handler=_wrap_errors(create_relations),
    ),
    ToolSpec(
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
        handler=_wrap_errors(add_observations),
    ),
    ToolSpec(
        name="delete_entities",
        title="Delete Entities",
        description=(
            "Delete multiple entities and their associated relations from the knowledge graph"
        ),
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
        handler=_wrap_errors(_status_tool(plan.delete_entities, "entityNames")),
    ),
    ToolSpec(
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
        handler=_wrap_errors(_status_tool(plan.delete_observations, "deletions")),
    ),
    ToolSpec(
        name="delete_relations",
        title="Delete Relations",
        description="Delete multiple relations from the knowledge graph",
        input_schema=_top(
            {
                "relations": {
                    **_relations(False),
                    "description": "An array of relations to delete",
                }
            },
            ["relations"],
            closed=False,
        ),
        output_schema=_STATUS_OUT,
        annotations=_DELETE,
        handler=_wrap_errors(_status_tool(plan.delete_relations, "relations")),
    ),
    ToolSpec(
        name="read_graph",
        title="Read Graph",
        description="Read the entire knowledge graph",
        input_schema=_top({}, None, closed=False),
        output_schema=_GRAPH_OUT,
        annotations=_READ,
        handler=read_graph,
    ),
    ToolSpec(
        name="search_nodes",
        title="Search Nodes",
        description="Search for nodes in the knowledge graph based on a query",
        input_schema=_top(
            {
                "query": {
                    "type": "string",
                    "description": (
                        "The search query to match against entity names, types, "
                        "and observation content"
                    ),
                }
            },
            ["query"],
            closed=False,
        ),
        output_schema=_GRAPH_OUT,
        annotations=_READ,
        handler=search_nodes,
    ),
    ToolSpec(
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
        handler=open_nodes,
    ),
]


def read_graph_resource(ctx: ToolContext) -> str:
    return pretty(read(ctx.store, ctx.namespace, View.graph))


KG_RESOURCES: list[ResourceSpec] = [
    ResourceSpec(
        uri=GRAPH_URI,
        name="knowledge-graph",
        title="Knowledge Graph",
        description="The full knowledge graph with all entities and relations",
        mime_type="application/json",
        read=read_graph_resource,
    )
]
