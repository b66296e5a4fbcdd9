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


ANSWER_TWO_AFTER = [
    ("asked", "Where did you two get married?"),
    ("between", "Guess!"),
    ("answer", "It was Porto, in the summer, with everyone there."),
    ("later", "We should go back sometime."),
    ("far", "Porto again, they say, is lovely in summer."),
    ("other", "Porto in summer."),
]
"""Turns of a conversation whose answer comes two turns after its question ("Guess!" between),
with two memories sharing the answer's words but written far from the question: "married in
Porto" ranks the answer second only through the neighbour step."""


def write_turns(svc: GraphService, ns: str, turns: list[tuple[str, str]]) -> dict[str, str]:
    """Each turn ``(name, text)`` as the memory ``core://NAME``, one batch each, in order (so
    they are neighbours as written); name -> memory id."""
    ids: dict[str, str] = {}
    for name, text in turns:
        ids |= write_texts(svc, ns, {name: text})
    return ids


def ranked(svc: GraphService, query: str, limit: int = 10) -> list[str]:
    """The URIs ``search_memory`` answers for ``query`` in namespace ``default``, best first."""
    _, data = svc.read(lambda s: search_memory(s, "default", query, None, limit))
    return [r["uri"] for r in data["results"]]
