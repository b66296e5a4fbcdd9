"""Test support: a store per node id in one directory, and an MCP server serving the URI tools.

Uses the project's server (``noon.mcp.server.create_server``) when it is present; otherwise a
minimal low-level server over the same ToolSpec tables, so the tools are exercised through a
real MCP client either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp.types as types
from mcp.server import Server

from noon.config import Settings
from noon.mcp.spec import ToolContext
from noon.mcp.uri_tools import INSTRUCTIONS, URI_RESOURCES, URI_TOOLS
from noon.store.store import Store


def open_store(directory: Path, node: str, namespace: str = "default") -> tuple[Store, Settings]:
    settings = Settings.from_env({}, dir=directory, node_id=node, fsync=False,
                                 namespace=namespace)
    return Store(settings), settings


def make_server(store: Store, settings: Settings) -> Any:
    try:
        from noon.mcp.server import create_server  # type: ignore[import-not-found]
    except ModuleNotFoundError:
        return _minimal_server(store, settings)
    return create_server(store, settings, {"uri"})


def _minimal_server(store: Store, settings: Settings) -> Server[Any]:
    tools = {t.name: t for t in URI_TOOLS}
    resources = {r.uri: r for r in URI_RESOURCES}

    async def changed() -> None:
        return None

    def context() -> ToolContext:
        return ToolContext(store, settings, settings.namespace, "test-client", changed)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, title=t.title, description=t.description,
                       input_schema=t.input_schema, output_schema=t.output_schema,
                       annotations=t.annotations)
            for t in URI_TOOLS
        ])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = tools.get(params.name)
        if spec is None:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Unknown tool {params.name}")],
                is_error=True)
        return await spec.handler(params.arguments or {}, context())

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=r.uri, name=r.name, title=r.title, description=r.description,
                           mime_type=r.mime_type) for r in URI_RESOURCES
        ])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        spec = resources[str(params.uri)]
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=spec.uri, mime_type=spec.mime_type, text=spec.read(context()))])

    return Server("noon-test", instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool, on_list_resources=list_resources,
                  on_read_resource=read_resource)
