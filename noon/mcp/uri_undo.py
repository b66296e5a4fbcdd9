"""undo_change: an agent undoes one or more changes (tool calls) by the change ids
``memory_history`` shows, through :func:`noon.app.changes.undo_changes`. The undo is one more
change of this agent (``via=mcp``): it waits for review like the agent's other changes and
decides nothing about the changes it undid."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from noon.app import changes
from noon.mcp.spec import ToolContext, Tools, tool_hints
from noon.mcp.uri_base import Args, Out, Reply, actor, uri_tool
from noon.store.access import GraphService

tools = Tools()

ChangeId = Annotated[str, Field(min_length=3, max_length=200)]


class UndoArgs(Args):
    changes: Annotated[
        list[ChangeId],
        Field(
            min_length=1,
            max_length=changes.MAX_IDS,
            description="Change ids, as memory_history shows them beside each version "
            "('(change laptop:43)'): the tool calls to undo, taken together.",
        ),
    ]


class UndoOut(Out):
    changes: list[str]
    elements: int
    change: str | None = None


@uri_tool(
    tools,
    title="Undo Change",
    description="Undo whole changes (one change = one tool call: a create, an edit, a move, a "
    "delete, ...) by the change id memory_history shows beside each version: every text, "
    "placement, alias, keyword and boot membership they touched goes back to what it was "
    "before them, written as one new change (undo that to redo). To bring back one memory's "
    "text as of a version, use rollback_memory instead.",
    args=UndoArgs,
    output=UndoOut,
    annotations=tool_hints(read_only=False, destructive=True, idempotent=False),
    writes=True,
)
def undo_change(svc: GraphService, args: UndoArgs, ctx: ToolContext) -> Reply:
    ids = list(dict.fromkeys(c.strip() for c in args.changes))
    done = changes.undo_changes(svc, actor(ctx), ids, None, review=False)
    named = ", ".join(ids)
    if done.batch is None:
        text = f"Nothing to undo: what {named} wrote already reads as it did before."
    else:
        text = (
            f"Success: undid {named} ({done.restored} element(s) put back as they were before), "
            f"written as change {done.batch}: undo_change it to redo."
        )
    return text, {"changes": ids, "elements": done.restored, "change": done.batch}
