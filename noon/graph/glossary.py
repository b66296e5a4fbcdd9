"""Glossary auto-linking: find bound keywords in a text with one Aho-Corasick pass.

One automaton per namespace, rebuilt only when that namespace's keywords change. Matching
ignores case; a keyword that starts or ends with a letter or digit must sit on a word boundary
there ("Sal" does not fire inside "Salem"), while scripts written without spaces (CJK) match
anywhere.

Matches do not overlap: at each place the longest keyword wins and the scan goes on after it
(leftmost-longest, :meth:`ahocorasick.Automaton.iter_long`). So the work is linear in the text
whatever the keywords (the keywords ``-`` to ``-`` × 100 over 200,000 dashes were 44 s of
overlapping matches), a longest match failing the word boundary is not retried shorter, and
the callers bound what they show: :data:`MAX_SPANS` marked places on the page,
:data:`MAX_LINKS` linked memories in a read, each saying when it cut.
"""

from __future__ import annotations

from collections.abc import Iterator

import ahocorasick

from noon.graph.reader import GraphReader


def _fold(text: str) -> str:
    # str.lower keeps lengths for nearly every script; positions are only used on the folded
    # text itself, so an exception can only cost a boundary check, never a wrong index.
    return text.lower()


def _wordish(ch: str) -> bool:
    return (ch.isalnum() and ord(ch) < 0x2E80) or ch == "_"


MAX_SPANS = 1000
"""The most places of one text the page marks as links."""
MAX_LINKS = 100
"""The most linked memories one read lists."""


class Glossary:
    def __init__(self, graph: GraphReader) -> None:
        self.graph = graph
        self._automata: dict[
            str, tuple[int, ahocorasick.Automaton | None, dict[str, set[str]]]
        ] = {}

    def _automaton(
        self, namespace: str
    ) -> tuple[ahocorasick.Automaton | None, dict[str, set[str]]]:
        version = self.graph.glossary_version(namespace)
        cached = self._automata.get(namespace)
        if cached is not None and cached[0] == version and version:
            return cached[1], cached[2]
        keywords = self.graph.keywords(namespace)
        auto: ahocorasick.Automaton | None = None
        if keywords:
            auto = ahocorasick.Automaton()
            by_folded: dict[str, list[str]] = {}
            for kw in keywords:
                by_folded.setdefault(_fold(kw), []).append(kw)
            for folded, kws in by_folded.items():
                auto.add_word(folded, (folded, tuple(sorted(kws))))
            auto.make_automaton()
        self._automata[namespace] = (version, auto, keywords)
        return auto, keywords

    def bound(self, namespace: str) -> dict[str, set[str]]:
        """Every keyword of ``namespace`` and the nodes it is bound to."""
        return self._automaton(namespace)[1]

    def matches(self, namespace: str, text: str) -> Iterator[tuple[int, int, tuple[str, ...]]]:
        """Where bound keywords occur in ``text``, in order and without overlap: ``(start,
        end, keywords)`` with ``end`` exclusive, positions in the case-folded text (the same
        as in ``text`` unless folding changed its length)."""
        auto, _ = self._automaton(namespace)
        if auto is None or not text:
            return
        folded = _fold(text)
        for last, (word, kws) in auto.iter_long(folded):
            start, end = last - len(word) + 1, last + 1
            if _wordish(word[0]) and start > 0 and _wordish(folded[start - 1]):
                continue
            if _wordish(word[-1]) and end < len(folded) and _wordish(folded[end]):
                continue
            yield start, end, kws

    def find(self, namespace: str, text: str) -> dict[str, set[str]]:
        """Keywords present in ``text`` mapped to the nodes they are bound to (the scan stops
        once every keyword is found)."""
        _, keywords = self._automaton(namespace)
        found: dict[str, set[str]] = {}
        for _, _, kws in self.matches(namespace, text):
            for kw in kws:
                nodes = keywords.get(kw)
                if nodes:
                    found[kw] = set(nodes)
            if len(found) == len(keywords):
                break
        return found
