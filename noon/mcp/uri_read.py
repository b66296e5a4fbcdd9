"""The URI-graph tools that only read: read_memory, search_memory, memory_history."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from noon.app import history
from noon.app import search as app_search
from noon.graph import plan, views
from noon.graph.memory_view import when
from noon.graph.uri import node_view
from noon.mcp.spec import ToolContext, Tools, tool_hints
from noon.mcp.uri_base import Args, Out, Reply, UriText, uri_tool
from noon.mcp.uri_views import VIEWS, read
from noon.store.access import GraphService
from noon.store.readmodel.running import SEARCHES
from noon.store.readmodel.vectorizer import describe, ranking

tools = Tools()
READS = tool_hints(read_only=True, destructive=False, idempotent=True)


class HistoryRow(Out):
    version: str
    change: str
    time: str
    client: str | None = None
    machine: str
    deleted: bool
    current: bool


class MemoryOut(Out):
    uri: str
    memory_id: str | None = None
    version: str | None = None
    aliases: list[str] | None = None
    priority: int | None = None
    disclosure: str | None = None
    keywords: list[str] | None = None
    conflicted: bool | None = None
    deleted: bool | None = None
    heads: list[str] | None = None
    children: list[str] | None = None
    view: str | None = None
    versions: list[HistoryRow] | None = None


class ReadArgs(Args):
    uri: Annotated[
        UriText,
        Field(
            description="A memory URI (core://agent) or a view (system://boot, "
            "system://index/core, system://recent/20, ...)."
        ),
    ]


@uri_tool(
    tools,
    title="Read Memory",
    description="Read a memory by URI (e.g. core://agent), or a generated view: "
    f"{VIEWS.replace('system://boot', 'system://boot (start every session with it)', 1)}. "
    "Shows content, version, aliases, keywords, glossary links and children with their "
    "disclosures. Same Memory ID = same memory (alias).",
    args=ReadArgs,
    output=MemoryOut,
    annotations=READS,
    writes=False,
)
def read_memory(svc: GraphService, args: ReadArgs, ctx: ToolContext) -> Reply:
    return svc.read(lambda s: read(s, ctx.namespace, args.uri))


class SearchArgs(Args):
    query: Annotated[
        str,
        Field(
            min_length=1,
            max_length=1000,
            description=f"Words to look for ({describe()}): ranked over content, "
            "URIs, disclosures and keywords; any word finds, more words rank higher, and a "
            "word no memory holds is looked up as the start of one.",
        ),
    ]
    domain: Annotated[str, Field(max_length=32, description="Only this domain.")] | None = None
    limit: Annotated[int, Field(ge=1, le=100)] | None = None


class SearchHit(Out):
    uri: str
    memory_id: str
    score: float
    priority: int
    disclosure: str
    version: str | None = None


class SearchOut(Out):
    query: str
    results: list[SearchHit]
    ranking: Literal["hybrid", "lexical"]
    """How this search ranked: by meaning too, or by words only (the model absent, turned off,
    still loading or failed to load)."""


def search(svc: GraphService, ns: str, query: str, domain: str | None, limit: int) -> Reply:
    found = app_search.search(svc, ns, query, domain, limit)
    text, results = _listed(found.hits, query, domain)
    how, said = ranking(found.semantic)
    return text + said, {"query": query, "results": results, "ranking": how}


def _listed(hits: list[app_search.Hit], query: str, domain: str | None) -> tuple[str, list[Any]]:
    if not hits:
        where = f"in '{domain.strip().lower()}'" if domain else "across all domains"
        return f"No matching memories found {where}.", []
    lines = [f"Found {len(hits)} matches for '{query}':", ""]
    for h in hits:
        lines.append(f"- {h.uri}  (score {h.score})")
        lines.append(f"  Priority: {h.priority}")
        if h.disclosure:
            lines.append(f"  Disclosure: {h.disclosure}")
        lines += [f"  {h.snippet}", ""]
    results = [
        {
            "uri": str(h.uri),
            "memory_id": h.node,
            "score": h.score,
            "priority": h.priority,
            "disclosure": h.disclosure,
            "version": h.version,
        }
        for h in hits
    ]
    return "\n".join(lines), results


@uri_tool(
    tools,
    title="Search Memory",
    description=f"Ranked search ({describe()}) over memory content, URIs, disclosures and "
    "keywords, optionally in one domain. Use words from the conversation; read the best hits "
    "with read_memory.",
    args=SearchArgs,
    output=SearchOut,
    annotations=READS,
    writes=False,
)
def search_memory(svc: GraphService, args: SearchArgs, ctx: ToolContext) -> Reply:
    with SEARCHES.held():  # the refresh and the answer's rows too: the vectorizer waits
        return svc.read(
            lambda s: search(s, ctx.namespace, args.query, args.domain, args.limit or 10)
        )


class HistoryArgs(Args):
    uri: UriText
    limit: Annotated[int, Field(ge=1, le=1000)] | None = None


class ChangeRow(Out):
    change: str
    time: str
    client: str | None = None
    machine: str
    what: list[str]


class HistoryOut(Out):
    uri: str
    memory_id: str
    versions: list[HistoryRow]
    changes: list[ChangeRow]
    changes_total: int


@uri_tool(
    tools,
    title="Memory History",
    description="List a memory's kept versions, newest first, with who wrote each (client and "
    "machine) and when, and the change (tool call) that wrote each. Roll back with "
    "rollback_memory; undo a whole change with undo_change.",
    args=HistoryArgs,
    output=HistoryOut,
    annotations=READS,
    writes=False,
)
def memory_history(svc: GraphService, args: HistoryArgs, ctx: ToolContext) -> Reply:
    limit = args.limit or 20

    def fn(s: GraphService) -> Reply:
        node, uri = plan.locate_past(s.graph, ctx.namespace, args.uri)
        text, rows = views.history(s.graph, ctx.namespace, node, str(uri or node_view(node)), limit)
        total, found = history.memory_changes(s.graph, ctx.namespace, node, limit)
        lines = [
            f"## Changes that touched it: {total} (newest first; one change is one tool call: "
            "undo one with undo_change)",
            "",
        ]
        for c in found:
            more = f" (and {c.more} more op(s))" if c.more else ""
            lines.append(
                f"- change {c.id} {when(c.time_ms)} by {c.client or 'unknown'} on {c.machine}: "
                f"{'; '.join(c.what)}{more}"
            )
        shown = [
            {
                "change": c.id,
                "time": when(c.time_ms),
                "client": c.client,
                "machine": c.machine,
                "what": c.what,
            }
            for c in found
        ]
        data = {
            "uri": args.uri.strip(),
            "memory_id": node,
            "versions": rows,
            "changes": shown,
            "changes_total": total,
        }
        return text + "\n" + "\n".join(lines) + "\n", data

    return svc.read(fn)
