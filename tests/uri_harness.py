"""Test support: a store per node id in a directory, and the MCP server serving the URI tools."""

from __future__ import annotations

from pathlib import Path

from noon.config import Settings
from noon.mcp.server import NoonServer, create_server
from noon.store.store import Store


def open_store(directory: Path, node: str, namespace: str = "default") -> tuple[Store, Settings]:
    settings = Settings.from_env({}, dir=directory, node_id=node, fsync=False, namespace=namespace)
    return Store(settings), settings


def make_server(store: Store, settings: Settings) -> NoonServer:
    """The project's MCP server serving the URI-graph tools on ``store``."""
    return create_server(store, settings, {"uri"})
