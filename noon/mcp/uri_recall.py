"""The ``recall`` tool: its arguments and the text an agent reads around
:func:`noon.app.recall.recall` (which memories, and why). The context is at most
:data:`MAX_CONTEXT` characters."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from noon.app.recall import Recall
from noon.app.recall import recall as recall_of
from noon.mcp.spec import ToolContext, Tools, tool_hints
from noon.mcp.uri_base import Args, Out, Reply, uri_tool
from noon.store.access import GraphService
from noon.store.readmodel.vectorizer import describe, ranking

tools = Tools()
MAX_CONTEXT = 20_000


class RecallArgs(Args):
    context: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_CONTEXT,
            description="The conversation's current text (the last messages, the task).",
        ),
    ]
    limit: Annotated[int, Field(ge=1, le=50)] | None = None


class RecalledOut(Out):
    uri: str
    memory_id: str
    why: list[str]


class RecallOut(Out):
    results: list[RecalledOut]
    ranking: Literal["hybrid", "lexical"]
    """How the search hits ranked: by meaning too, or by words only."""


def rendered(recalled: Recall) -> Reply:
    found = recalled.found
    how, said = ranking(recalled.semantic)
    if not found:
        return f"Nothing in memory meets this context.{said}", {"results": [], "ranking": how}
    lines = [f"{len(found)} memories to bring to mind:", ""]
    for r in found:
        lines.append(f"- {r.uri}")
        lines += [f"  why: {w}" for w in r.why]
    lines.append("")
    lines.append("Read the ones that matter with read_memory.")
    results = [{"uri": r.uri, "memory_id": r.node, "why": r.why} for r in found]
    return "\n".join(lines) + said, {"results": results, "ranking": how}


@uri_tool(
    tools,
    title="Recall",
    description="Give the conversation's current text; get the memories it should bring to "
    "mind, each with why: disclosures the text meets, glossary keywords it mentions, and the "
    f"best search hits for it ({describe()}). Read them with read_memory.",
    args=RecallArgs,
    output=RecallOut,
    annotations=tool_hints(read_only=True, destructive=False, idempotent=True),
    writes=False,
)
def recall(svc: GraphService, args: RecallArgs, ctx: ToolContext) -> Reply:
    return rendered(recall_of(svc, ctx.namespace, args.context, args.limit or 8))
