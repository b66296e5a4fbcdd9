"""Finding memories: ranked search (``search_memory`` and the page's search box; hybrid where the
``semantic`` extra is installed), each hit with the snippet shown for it, computed once here."""

from __future__ import annotations

from dataclasses import dataclass

from noon.graph.plan import GraphError
from noon.graph.reader import version_of
from noon.graph.search import snippet
from noon.graph.uri import Uri
from noon.store.access import GraphService


@dataclass(frozen=True)
class Hit:
    uri: Uri
    """The memory's first URI (in ``domain`` when one was asked for)."""
    node: str
    score: float
    priority: int
    disclosure: str
    version: str | None
    snippet: str


@dataclass(frozen=True)
class Results:
    hits: list[Hit]
    semantic: bool
    """Ranked by meaning too (hybrid); else by words only."""


def search(svc: GraphService, ns: str, query: str, domain: str | None, limit: int) -> Results:
    """At most ``limit`` live memories ranked for ``query`` (:mod:`noon.store.readmodel.search`
    ranks), only those with a URI in ``domain`` when given, and whether meaning ranked too.
    Refused for a domain holding no memory. Call inside :meth:`GraphService.read`."""
    g = svc.graph
    if domain is not None:
        domain = domain.strip().lower()
        if domain not in g.domains(ns):
            raise GraphError(
                f"Unknown domain '{domain}'. Domains with memories: "
                f"{', '.join(g.domains(ns)) or '(none yet)'}."
            )

    placed: dict[str, list[tuple[Uri, int]]] = {}

    def accept(node: str) -> bool:
        if not g.is_live(ns, node):
            return False
        us = placed[node] = g.uris(ns, node)
        return bool(us) and (domain is None or any(u.domain == domain for u, _ in us))

    found = svc.search.search(ns, query, limit, accept, hybrid=True, neighbours=True)
    shown = svc.search.shown(ns, [h.node for h in found.hits])
    hits = []
    for h in found.hits:
        us = placed[h.node]
        if domain:
            us = [u for u in us if u[0].domain == domain]
        uri, prio = us[0]
        at = g.resolve(ns, uri)
        row = shown.get(h.node)  # the text and the op that wrote it, as the fold projected them
        hits.append(
            Hit(
                uri=uri,
                node=h.node,
                score=h.score,
                priority=prio,
                disclosure=at[1].disclosure if at and at[1] else "",
                version=version_of(row[1], row[2]) if row else None,
                snippet=snippet(row[0] if row else "", query, h.matched),
            )
        )
    return Results(hits, found.semantic)
