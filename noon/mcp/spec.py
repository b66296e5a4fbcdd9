"""What a tool family hands to the server: tools registered by decorator, resources, and how its
refusals read. No SDK wiring: the server (``noon.mcp.server``) owns the MCP SDK objects and
transports; families only describe their tools and implement handlers against a
:class:`ToolContext`, so each is testable on its own and ``noon serve --tools`` can pick them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
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
    """The writing client's name (MCP ``clientInfo.name``): its own claim, recorded as
    information only."""
    changed: Callable[[], Awaitable[None]]
    """Call after a successful write: notifies resource subscribers."""
    via: str = "mcp"
    """The edge every write of a tool call is recorded as (``via``): always this one, whatever
    the client calls itself, so the review queue can trust it."""


ToolResult = types.CallToolResult | dict[str, Any]
"""A result model, or its wire form (camelCase keys) when building the model would cost a
serialisation pass too many on a large result."""

ToolHandler = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]
"""Called with arguments the server has already validated against the input schema."""


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


def tool_hints(*, read_only: bool, destructive: bool, idempotent: bool) -> types.ToolAnnotations:
    """Tool hints; every noon tool works on this store only (closed world)."""
    return types.ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def tool_text(text: str, structured: dict[str, Any]) -> ToolResult:
    """A success result in its wire form. A ``CallToolResult`` model would cost the SDK one
    more pydantic pass over the result (a third of read_graph's time on a 2 MB graph); the SDK
    still validates this dict against the protocol's result schema before sending it."""
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": False,
        "resultType": "complete",  # required from 2026-07-28, dropped for older revisions
    }


def tool_error(text: str) -> types.CallToolResult:
    """The one shape of a refused or failed tool call: ``isError`` with the text to act on."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


class Tools:
    """Tools registered by decorator next to their handlers, in registration order."""

    def __init__(self) -> None:
        self._specs: dict[str, ToolSpec] = {}

    def tool(
        self,
        *,
        name: str,
        title: str,
        description: str,
        input_schema: dict[str, Any],
        output_schema: dict[str, Any] | None,
        annotations: types.ToolAnnotations,
    ) -> Callable[[ToolHandler], ToolHandler]:
        def register(handler: ToolHandler) -> ToolHandler:
            if name in self._specs:
                raise ValueError(f"two tools named {name!r}")
            self._specs[name] = ToolSpec(
                name, title, description, input_schema, output_schema, annotations, handler
            )
            return handler

        return register

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._specs.values())


@dataclass(frozen=True)
class Family:
    """One tool family as ``noon serve --tools`` offers it."""

    name: str
    tools: list[ToolSpec]
    resources: list[ResourceSpec] = field(default_factory=list)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    """URI templates of resources readable beyond ``resources`` (through ``read_uri``)."""
    read_uri: Callable[[ToolContext, str], str] | None = None
    """Reads any resource URI the templates describe; refusals as :attr:`refusals`."""
    instructions: str | None = None
    refusals: tuple[type[Exception], ...] = ()
    """Exceptions handlers raise to refuse a call (nothing written): an error result follows."""
    error_prefix: str = ""
    argument_hints: bool = True
    """Whether argument errors suggest the argument a misspelled one probably meant (off for the
    drop-in, whose messages stay the official server's byte for byte)."""
    recognises_retries: bool = True
    """Whether a retry of a call that is not idempotent, written before and whose answer was
    lost, is answered from what it wrote instead of written again (:mod:`noon.store.retries`).
    Off for the drop-in: its adds are sets (a retry adds nothing) and its answers stay the
    official server's."""

    def refusal(self, exc: Exception) -> types.CallToolResult:
        text = str(exc)
        return tool_error(text if text.startswith(self.error_prefix) else self.error_prefix + text)
