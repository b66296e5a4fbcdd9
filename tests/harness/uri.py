"""A store per node id in a directory, the MCP server serving the URI tools, and a client
session with helpers for the URI tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client

from noon.config import Settings
from noon.mcp.server import NoonServer, create_server
from noon.store.store import Store
from tests.harness.mcp import tool_text


def open_store(directory: Path, node: str, namespace: str = "default") -> tuple[Store, Settings]:
    settings = Settings.from_env({}, dir=directory, node_id=node, fsync=False, namespace=namespace)
    return Store(settings), settings


def make_server(store: Store, settings: Settings) -> NoonServer:
    """The project's MCP server serving the URI-graph tools on ``store``."""
    return create_server(store, settings, {"uri"})


class Session:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def call(self, name: str, **args: Any) -> tuple[str, dict[str, Any]]:
        r = await self.client.call_tool(name, args)
        text = tool_text(r)
        assert not r.is_error, text
        return text, r.structured_content or {}

    async def fail(self, name: str, **args: Any) -> str:
        r = await self.client.call_tool(name, args)
        text = tool_text(r)
        assert r.is_error, text
        return text

    async def read(self, uri: str) -> str:
        return (await self.call("read_memory", uri=uri))[0]

    async def create(
        self,
        parent: str,
        title: str | None,
        content: str,
        priority: int = 1,
        disclosure: str = "When testing",
    ) -> dict[str, Any]:
        args: dict[str, Any] = {
            "parent_uri": parent,
            "content": content,
            "priority": priority,
            "disclosure": disclosure,
        }
        if title is not None:
            args["title"] = title
        return (await self.call("create_memory", **args))[1]


def mcp_test(fn: Callable[[Session], Awaitable[None]]) -> Callable[[Path], Awaitable[None]]:
    """Run ``fn`` with a fresh store and an MCP client session (opened and closed in the test's
    own task, as the client's task group requires)."""

    async def test(tmp_path: Path) -> None:
        store, settings = open_store(tmp_path, "laptop")
        async with Client(make_server(store, settings)) as client:
            await fn(Session(client))

    test.__name__ = fn.__name__
    test.__doc__ = fn.__doc__
    return test
