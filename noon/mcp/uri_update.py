"""update_memory: edit a memory by quoting (or appending), and/or set its placement's priority and
disclosure. The edit is :func:`noon.app.memories.edit`; here are its argument model and the text
the agent reads (with notices on how its quote matched)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from noon.app import memories
from noon.graph.memory_view import when
from noon.graph.reader import version_id
from noon.mcp.spec import ToolContext, Tools, tool_hints
from noon.mcp.uri_base import (
    Args,
    Disclosure,
    LongText,
    Out,
    Priority,
    Reply,
    UriText,
    Version,
    actor,
    uri_tool,
)
from noon.store.access import GraphService

tools = Tools()
NOTICE_PREVIEW = 160


class UpdateArgs(Args):
    uri: UriText
    old_string: (
        Annotated[
            LongText, Field(description="Exact text copied from the memory (must match one place).")
        ]
        | None
    ) = None
    new_string: (
        Annotated[LongText, Field(description="Replacement for old_string ('' deletes it).")] | None
    ) = None
    replace_all: (
        Annotated[bool, Field(description="Replace every occurrence of old_string.")] | None
    ) = None
    append: (
        Annotated[
            LongText,
            Field(
                description="Text to add at the end as new line(s), instead of old/new_string: "
                "one line break goes before it unless the memory ends with one or the text "
                "starts with one (Nocturne adds none)."
            ),
        ]
        | None
    ) = None
    priority: Priority | None = None
    disclosure: Disclosure | None = None
    expected_version: Version | None = None


class UpdateOut(Out):
    uri: str
    version: str | None = None


def _preview(text: str) -> str:
    shown = repr(text)[1:-1]
    return shown if len(shown) <= NOTICE_PREVIEW else shown[: NOTICE_PREVIEW - 3] + "..."


def _notes(done: memories.Edited, old_string: str | None) -> list[str]:
    """What the agent should know about how its quote matched."""
    notes = []
    if done.literal_newlines:
        notes.append(
            "Auto-normalized old_string: converted literal '\\n' sequences to real newlines "
            "because they matched the stored content.\n"
            f"- Original: {_preview(old_string or '')}"
        )
    if done.normalised:
        notes.append(
            "Matched after normalising quotes, dashes or whitespace; only the matched span changed."
        )
    if done.concurrent is not None:
        h = done.concurrent
        notes.append(
            f"old_string was not in the latest version but in the concurrent version "
            f"{version_id(h)} ({h.by or 'unknown'} on {h.node}, {when(h.hlc >> 16)}): the edit "
            "was made to that version, which is now the memory's text and settles the "
            "conflict. The other version(s) stay in memory_history; merge anything you still "
            "need from them."
        )
    return notes


@uri_tool(
    tools,
    title="Update Memory",
    description="Edit a memory you have read: patch (old_string copied exactly from the memory, "
    "new_string to put there; must match one place unless replace_all), or append; and/or "
    "set priority/disclosure of this URI's placement. There is no full overwrite. Pass "
    "expected_version (from read_memory) to refuse the edit if the memory changed since. "
    "Any edit settles concurrent versions (old_string may quote any of them).",
    args=UpdateArgs,
    output=UpdateOut,
    annotations=tool_hints(read_only=False, destructive=True, idempotent=False),
    writes=True,
)
def update_memory(svc: GraphService, args: UpdateArgs, ctx: ToolContext) -> Reply:
    change = memories.Edit(
        uri=args.uri,
        old=args.old_string,
        new=args.new_string,
        replace_all=args.replace_all,
        append=args.append,
        priority=args.priority,
        disclosure=args.disclosure,
        expected_version=args.expected_version,
    )
    done = memories.edit(svc, actor(ctx), change)
    text = f"Success: Memory at '{done.uri}' updated (version {done.version})"
    for note in _notes(done, args.old_string):
        text += "\n\n[SYSTEM NOTICE] " + note
    return text, {"uri": done.uri, "version": done.version}
