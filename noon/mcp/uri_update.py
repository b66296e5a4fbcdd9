"""update_memory: edit a memory by quoting (or appending), and/or set its placement's priority and
disclosure. Planned inside ``Store.write`` so the expected-version check holds at the moment of
writing; any edit settles concurrent versions (the new version names every head)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from noon.core.elements import CONTENT
from noon.core.ops import Draft
from noon.graph import plan
from noon.graph.memory_view import when
from noon.graph.plan import GraphError
from noon.graph.quote import QuoteError, append_text
from noon.graph.reader import GraphReader, version_id
from noon.graph.uri import Uri
from noon.mcp.spec import ToolContext, Tools, tool_hints
from noon.mcp.uri_base import (
    Args,
    Disclosure,
    LongText,
    Out,
    Priority,
    Reply,
    ToolInputError,
    UriText,
    Version,
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


def _check_modes(args: UpdateArgs, label: str) -> None:
    old, new, add = args.old_string, args.new_string, args.append
    if (old is not None or new is not None) and add is not None:
        raise ToolInputError(
            "Cannot use both old_string/new_string (patch) and append at the same time. Pick one."
        )
    if old is not None and new is None:
        raise ToolInputError(
            'old_string provided without new_string. To delete a section, use new_string="".'
        )
    if new is not None and old is None:
        raise ToolInputError(
            "new_string provided without old_string. Both are required for patch mode."
        )
    if old is not None and old == new:
        raise ToolInputError("old_string and new_string are identical. No change would be made.")
    if add is not None and not add.strip():
        raise ToolInputError(f"Empty append for '{label}'. Provide non-empty text to append.")
    if old is None and add is None and args.priority is None and args.disclosure is None:
        raise ToolInputError(
            f"No update fields provided for '{label}'. Use patch mode (old_string + "
            "new_string), append mode (append), or metadata fields (priority/disclosure)."
        )
    if old is None and args.replace_all is not None:
        raise ToolInputError("replace_all only applies with old_string/new_string.")


def _preview(text: str) -> str:
    shown = repr(text)[1:-1]
    return shown if len(shown) <= NOTICE_PREVIEW else shown[: NOTICE_PREVIEW - 3] + "..."


def _new_text(
    g: GraphReader, ns: str, node: str, uri: Uri, shown: str, args: UpdateArgs, notes: list[str]
) -> str:
    current = plan.current_text(g, ns, node, uri)
    if args.old_string is None:
        return append_text(current, args.append or "")
    try:
        quoted = plan.edit_quoted(
            g, ns, node, uri, args.old_string, args.new_string or "", bool(args.replace_all)
        )
    except QuoteError as exc:
        raise GraphError(f"In '{shown}': {exc}") from None
    edit = quoted.edit
    if edit.literal_newlines:
        notes.append(
            "Auto-normalized old_string: converted literal '\\n' sequences to real newlines "
            "because they matched the stored content.\n"
            f"- Original: {_preview(args.old_string)}"
        )
    if edit.normalised:
        notes.append(
            "Matched after normalising quotes, dashes or whitespace; only the matched span changed."
        )
    if quoted.concurrent is not None:
        h = quoted.concurrent
        notes.append(
            f"old_string was not in the latest version but in the concurrent version "
            f"{version_id(h)} ({h.by or 'unknown'} on {h.node}, {when(h.hlc >> 16)}): the edit "
            "was made to that version, which is now the memory's text and settles the "
            "conflict. The other version(s) stay in memory_history; merge anything you still "
            "need from them."
        )
    return edit.text


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
    label = args.uri.strip()
    _check_modes(args, label)
    ns = ctx.namespace
    notes: list[str] = []

    def fn(g: GraphReader) -> tuple[list[Draft], str]:
        notes.clear()  # the planner may run again when the store retries
        node, uri, pl = plan.locate(g, ns, label)
        shown = str(uri) if uri else label
        where = uri or Uri("system", ())
        plan.check_version(g, ns, node, where, args.expected_version)
        drafts: list[Draft] = []
        if args.old_string is not None or args.append is not None:
            text = _new_text(g, ns, node, where, shown, args, notes)
            el = g.content(ns, node)
            unsettled = el is not None and (el.conflicted or el.deleted)
            if text == plan.current_text(g, ns, node, where) and not unsettled:
                raise GraphError(
                    f"Replacement produced identical content at '{shown}'. Check "
                    "for subtle whitespace differences."
                )
            drafts.append(plan.set_text(ns, node, text))
        if args.priority is not None or args.disclosure is not None:
            if pl is None:
                raise GraphError(
                    "priority and disclosure belong to a placement: address the "
                    "memory by a URI, not by its id."
                )
            prio = args.priority if args.priority is not None else pl.priority
            plan.check_priority(prio)
            disc = args.disclosure if args.disclosure is not None else pl.disclosure
            drafts.append(plan.place(g, ns, pl.parent, pl.key_name, node, prio, disc))
        return drafts, shown

    ops, shown = svc.write(fn, ctx.client, ctx.via)
    content_op = next((o for o in ops if o.el[0] == CONTENT), None)
    version = version_id(content_op) if content_op else None
    if version is None:
        version = svc.read(lambda s: _current_version(s, ns, label))
    text = f"Success: Memory at '{shown}' updated (version {version})"
    for note in notes:
        text += "\n\n[SYSTEM NOTICE] " + note
    return text, {"uri": shown, "version": version}


def _current_version(svc: GraphService, ns: str, label: str) -> str | None:
    node, _, _ = plan.locate(svc.graph, ns, label)
    el = svc.graph.content(ns, node)
    return version_id(el.winner) if el is not None else None
