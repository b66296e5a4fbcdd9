"""Memories written in one batch through the write path, and the URIs a search ranks, without
an MCP client."""

from __future__ import annotations

from noon.core.ops import Draft
from noon.graph import plan
from noon.graph.reader import GraphReader
from noon.graph.uri import parse
from noon.mcp.uri_read import search as search_memory
from noon.store.access import GraphService


def write_texts(
    svc: GraphService, ns: str, texts: dict[str, str], update: dict[str, str] | None = None
) -> dict[str, str]:
    """Each text as the memory ``core://NAME`` (created, or with ``update`` its text set), in
    one batch through the write path; name -> memory id."""

    def planner(graph: GraphReader) -> tuple[list[Draft], dict[str, str]]:
        drafts: list[Draft] = []
        made = {}
        for name, text in texts.items():
            if update is not None:
                drafts.append(plan.set_text(ns, update[name], text))
                made[name] = update[name]
                continue
            more, node, _ = plan.create(graph, ns, parse("core://"), name, text, 1, "When asked")
            drafts += more
            made[name] = node
        return drafts, made

    _, made = svc.write(planner, client="test")
    return made


def ranked(svc: GraphService, query: str, limit: int = 10) -> list[str]:
    """The URIs ``search_memory`` answers for ``query`` in namespace ``default``, best first."""
    _, data = svc.read(lambda s: search_memory(s, "default", query, None, limit))
    return [r["uri"] for r in data["results"]]
