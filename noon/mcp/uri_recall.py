"""The ``recall`` tool: what the conversation's current text should bring to mind.

Three reasons a memory is recalled, each said: a disclosure of one of its placements that the
context meets (most of the disclosure's words are in the context: "When deploying noon" meets
a text about deploying noon), a glossary keyword bound to it that the context mentions, and
the best ``search_memory`` hits for the context's words. The work is bounded by the context's
length (at most :data:`MAX_CONTEXT` characters, :data:`MAX_TERMS` distinct words looked up)
and the answer by ``limit`` memories.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from noon.graph.search import query_terms
from noon.mcp.spec import ToolContext, Tools, tool_hints
from noon.mcp.uri_base import Args, Out, Reply, uri_tool
from noon.store.access import GraphService
from noon.store.readmodel.vectorizer import describe

tools = Tools()
MAX_CONTEXT = 20_000
MAX_TERMS = 32
"""The context's words looked up (its first distinct ones after stop words)."""
DISCLOSURE_CANDIDATES = 50
"""Memories whose disclosures share a word with the context that are checked."""
MEETS = 0.5
"""The share of a disclosure's words the context must hold for the disclosure to be met."""


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


class Recalled(Out):
    uri: str
    memory_id: str
    why: list[str]


class RecallOut(Out):
    results: list[Recalled]


def meets(disclosure: str, context_words: set[str]) -> list[str]:
    """The disclosure's words the context holds, when they are at least :data:`MEETS` of them
    (a word counts when the context has it or a word it starts); else nothing."""
    words = query_terms(disclosure)
    held = [w for w in words if w in context_words or any(c.startswith(w) for c in context_words)]
    return held if words and len(held) >= MEETS * len(words) else []


def recalled(svc: GraphService, ns: str, context: str, limit: int) -> Reply:
    g = svc.graph
    terms = query_terms(context)[:MAX_TERMS]
    context_words = set(query_terms(context))
    why: dict[str, list[str]] = {}

    def note(node: str, reason: str) -> None:
        if g.is_live(ns, node) and g.uris(ns, node):
            why.setdefault(node, []).append(reason)

    for row, _ in svc.search.disclosures(ns, terms, DISCLOSURE_CANDIDATES):
        node = svc.search.node_of(row)
        if node is None:
            continue
        for pl in g.placements(ns, node):
            held = meets(pl.disclosure, context_words)
            if held:
                note(
                    node, f"its disclosure '{pl.disclosure}' meets the context ({', '.join(held)})"
                )
                break
    for keyword, nodes in sorted(svc.glossary.find(ns, context).items()):
        for node in sorted(nodes):
            note(node, f"the context mentions its keyword '{keyword}'")
    for hit in svc.search.search(ns, context, limit, lambda n: bool(g.uris(ns, n)), hybrid=True):
        shared = ", ".join(hit.matched) or "close in meaning, no word in common"
        note(hit.node, f"search hit (score {hit.score}): {shared}")
    chosen = list(why.items())[:limit]
    if not chosen:
        return "Nothing in memory meets this context.", {"results": []}
    lines = [f"{len(chosen)} memories to bring to mind:", ""]
    results = []
    for node, reasons in chosen:
        uri = str(g.uris(ns, node)[0][0])
        lines.append(f"- {uri}")
        lines += [f"  why: {r}" for r in reasons]
        results.append({"uri": uri, "memory_id": node, "why": reasons})
    lines.append("")
    lines.append("Read the ones that matter with read_memory.")
    return "\n".join(lines), {"results": results}


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
    return svc.read(lambda s: recalled(s, ctx.namespace, args.context, args.limit or 8))
