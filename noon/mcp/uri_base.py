"""What every URI-graph tool shares: argument and result models, and the decorator that turns a
blocking implementation into a registered tool.

Arguments and results are pydantic models; their JSON schemas are what ``tools/list`` shows, so a
tool's schema and the fields its handler reads are one declaration (mypy checks the reads). The
server validates arguments against the schema once; the handler then gets the model built without
validating again. Optional fields are optional properties (never ``"type": [..., "null"]``, which
strict clients flag), and results leave out what is unset.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio.to_thread
import mcp.types as types
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue

from noon import errors
from noon.app.actor import Actor
from noon.mcp.spec import ToolContext, ToolResult, Tools, tool_text
from noon.store.access import GraphService, service

REFUSALS = errors.REFUSALS
"""What URI tools raise to refuse a call (every refusal kind of :mod:`noon.errors`); nothing
is written then."""


def actor(ctx: ToolContext) -> Actor:
    """The tool call's caller, as the use cases of :mod:`noon.app` take it."""
    return Actor(ctx.namespace, ctx.client, ctx.via)


# -- argument fields ------------------------------------------------------------------------

UriText = Annotated[str, Field(min_length=1, max_length=4096)]
Priority = Annotated[
    int,
    Field(
        ge=0, le=1000, description="Lower = recalled first. 0 for the few memories that define you."
    ),
]
Disclosure = Annotated[
    str,
    Field(
        max_length=4096,
        description="WHEN to recall this memory: an outside signal or an intent, e.g. "
        "'When the user asks about deploying noon'.",
    ),
]
Keyword = Annotated[str, Field(min_length=1, max_length=100)]
Keywords = Annotated[list[Keyword], Field(max_length=100)]
Version = Annotated[
    str,
    Field(
        max_length=200,
        description="The Version shown by read_memory; the edit is refused if the memory "
        "changed since.",
    ),
]
LONG_TEXT_CHARS = 1_000_000
"""The longest text argument (characters): a memory's content, an edit's old or new string."""
LongText = Annotated[str, Field(max_length=LONG_TEXT_CHARS)]


class Args(BaseModel):
    """A tool's arguments: unknown ones are refused."""

    model_config = ConfigDict(extra="forbid")


class Out(BaseModel):
    """A tool's structured result (its ``outputSchema``)."""


class _PlainSchema(GenerateJsonSchema):
    """JSON schemas as a person would write them: no titles, no defaults, an optional field
    is an optional property rather than a nullable one."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def nullable_schema(self, schema: Any) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: Any) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def generate(self, schema: Any, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        out = super().generate(schema, mode)
        out.pop("title", None)
        return _inline(out, out.pop("$defs", {}))


def _inline(value: Any, defs: dict[str, Any]) -> Any:
    """Nested models written in place instead of through ``$defs`` references."""
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            target = dict(defs[ref.rsplit("/", 1)[-1]])
            target.pop("title", None)
            return _inline(target, defs)
        return {k: _inline(v, defs) for k, v in value.items()}
    if isinstance(value, list):
        return [_inline(v, defs) for v in value]
    return value


def schema_of(model: type[BaseModel], mode: JsonSchemaMode = "validation") -> dict[str, Any]:
    return model.model_json_schema(schema_generator=_PlainSchema, mode=mode)


# -- results --------------------------------------------------------------------------------


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def reply(text: str, data: dict[str, Any]) -> ToolResult:
    """Text for the agent, structured content for programs (unset fields left out)."""
    return tool_text(text, _without_none(data))


Reply = tuple[str, dict[str, Any]]
A = TypeVar("A", bound=Args)


def uri_tool(
    tools: Tools,
    *,
    title: str,
    description: str,
    args: type[A],
    output: type[Out],
    annotations: types.ToolAnnotations,
    writes: bool,
) -> Callable[[Callable[[GraphService, A, ToolContext], Reply]], Callable[..., Reply]]:
    """Register a blocking implementation (named like the tool) as a tool: it runs in a worker
    thread on the store's graph service, and after a write that changed something the
    subscribers hear of it. Refusals (:data:`REFUSALS`) become error results in the server."""

    def register(
        impl: Callable[[GraphService, A, ToolContext], Reply],
    ) -> Callable[[GraphService, A, ToolContext], Reply]:
        @functools.wraps(impl)
        async def handler(raw: dict[str, Any], ctx: ToolContext) -> ToolResult:
            parsed = args.model_construct(**raw)  # validated by the server against the schema
            text, data = await anyio.to_thread.run_sync(impl, service(ctx.store), parsed, ctx)
            if writes and data.get("written", True):
                await ctx.changed()
            return reply(text, data)

        tools.tool(
            name=impl.__name__,
            title=title,
            description=description,
            input_schema=schema_of(args),
            output_schema=schema_of(output, "serialization"),
            annotations=annotations,
        )(handler)
        return impl

    return register
