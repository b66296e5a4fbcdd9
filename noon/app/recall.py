"""What the conversation's current text should bring to mind (the ``recall`` tool).

Three reasons a memory is recalled, each said: a disclosure of one of its placements that the
context meets (most of the disclosure's words are in the context: "When deploying noon" meets
a text about deploying noon), a glossary keyword bound to it that the context mentions, and
the best search hits for the context's words. The work is bounded by the context's length
(the edge caps it) and :data:`MAX_TERMS` distinct words looked up, the answer by ``limit``.
"""

from __future__ import annotations

from dataclasses import dataclass

from noon.graph.search import query_terms
from noon.store.access import GraphService

MAX_TERMS = 32
"""The context's words looked up (its first distinct ones after stop words)."""
DISCLOSURE_CANDIDATES = 50
"""Memories whose disclosures share a word with the context that are checked."""
MEETS = 0.5
"""The share of a disclosure's words the context must hold for the disclosure to be met."""


@dataclass(frozen=True)
class Recalled:
    uri: str
    """The memory's first URI."""
    node: str
    why: list[str]
    """Each reason it was recalled, in words."""


@dataclass(frozen=True)
class Recall:
    found: list[Recalled]
    semantic: bool
    """The search hits were ranked by meaning too (hybrid); else by words only."""


def meets(disclosure: str, context_words: set[str]) -> list[str]:
    """The disclosure's words the context holds, when they are at least :data:`MEETS` of them
    (a word counts when the context has it or a word it starts); else nothing."""
    words = query_terms(disclosure)
    held = [w for w in words if w in context_words or any(c.startswith(w) for c in context_words)]
    return held if words and len(held) >= MEETS * len(words) else []


def recall(svc: GraphService, ns: str, context: str, limit: int) -> Recall:
    """At most ``limit`` live memories with a URI that ``context`` should bring to mind, each
    with why, disclosures first, then keywords, then search hits."""

    def fn(s: GraphService) -> Recall:
        g = s.graph
        terms = query_terms(context)[:MAX_TERMS]
        context_words = set(query_terms(context))
        why: dict[str, list[str]] = {}

        def note(node: str, reason: str) -> None:
            if g.is_live(ns, node) and g.uris(ns, node):
                why.setdefault(node, []).append(reason)

        for row, _ in s.search.disclosures(ns, terms, DISCLOSURE_CANDIDATES):
            node = s.search.node_of(row)
            if node is None:
                continue
            for pl in g.placements(ns, node):
                held = meets(pl.disclosure, context_words)
                if held:
                    said = ", ".join(held)
                    note(node, f"its disclosure '{pl.disclosure}' meets the context ({said})")
                    break
        for keyword, nodes in sorted(s.glossary.find(ns, context).items()):
            for node in sorted(nodes):
                note(node, f"the context mentions its keyword '{keyword}'")

        def placed(node: str) -> bool:
            return bool(g.uris(ns, node))

        found = s.search.search(ns, context, limit, placed, hybrid=True)
        for hit in found.hits:
            shared = ", ".join(hit.matched) or "close in meaning, no word in common"
            note(hit.node, f"search hit (score {hit.score}): {shared}")
        recalled = [
            Recalled(str(g.uris(ns, node)[0][0]), node, reasons)
            for node, reasons in list(why.items())[:limit]
        ]
        return Recall(recalled, found.semantic)

    return svc.read(fn)
