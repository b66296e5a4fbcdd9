"""What a tool or resource module hands to the server: plain tables, no SDK wiring.

The server (``noon.mcp.server``) owns the MCP SDK objects and transports; tool modules
(URI graph tools, knowledge-graph tools) only describe their tools and implement handlers
against a :class:`ToolContext`. This keeps each tool family testable on its own and lets
``noon serve --tools`` pick families without either knowing about the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp.types as types

from noon.config import Settings
from noon.store.store import Store


@dataclass
class ToolContext:
    store: Store
    settings: Settings
    namespace: str
    client: str
    """The writing client's name (MCP ``clientInfo.name``), recorded as provenance."""
    changed: Callable[[], Awaitable[None]]
    """Call after a successful write: notifies resource subscribers."""


ToolResult = types.CallToolResult | dict[str, Any]
"""A result model, or its wire form (camelCase keys) when building the model would cost a
serialisation pass too many on a large result."""

ToolHandler = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    annotations: types.ToolAnnotations
    handler: ToolHandler


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    title: str
    description: str
    mime_type: str
    read: Callable[[ToolContext], str]
