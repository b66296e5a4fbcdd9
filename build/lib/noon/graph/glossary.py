"""Glossary auto-linking: find bound keywords in a text with one Aho-Corasick pass.

One automaton per namespace, rebuilt only when that namespace's keywords change. Matching
ignores case; a keyword that starts or ends with a letter or digit must sit on a word boundary
there ("Sal" does not fire inside "Salem"), while scripts written without spaces (CJK) match
anywhere.
"""

from __future__ import annotations

import ahocorasick

from noon.graph.model import Graph


def _fold(text: str) -> str:
    # str.lower keeps lengths for nearly every script; positions are only used on the folded
    # text itself, so an exception can only cost a boundary check, never a wrong index.
    return text.lower()


def _wordish(ch: str) -> bool:
    return (ch.isalnum() and ord(ch) < 0x2E80) or ch == "_"


class Glossary:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._automata: dict[str, tuple[int, ahocorasick.Automaton | None]] = {}

    def _automaton(self, namespace: str) -> ahocorasick.Automaton | None:
        g = self.graph.ns(namespace)
        cached = self._automata.get(namespace)
        if cached is not None and cached[0] == g.glossary_version and g.glossary_version:
            return cached[1]
        auto: ahocorasick.Automaton | None = None
        if g.keywords:
            auto = ahocorasick.Automaton()
            by_folded: dict[str, list[str]] = {}
            for kw in g.keywords:
                by_folded.setdefault(_fold(kw), []).append(kw)
            for folded, kws in by_folded.items():
                auto.add_word(folded, (folded, tuple(sorted(kws))))
            auto.make_automaton()
        self._automata[namespace] = (g.glossary_version, auto)
        return auto

    def find(self, namespace: str, text: str) -> dict[str, set[str]]:
        """Keywords present in ``text`` mapped to the nodes they are bound to."""
        auto = self._automaton(namespace)
        if auto is None or not text:
            return {}
        folded = _fold(text)
        g = self.graph.ns(namespace)
        found: dict[str, set[str]] = {}
        for end, (word, kws) in auto.iter(folded):
            start = end - len(word) + 1
            if _wordish(word[0]) and start > 0 and _wordish(folded[start - 1]):
                continue
            if _wordish(word[-1]) and end + 1 < len(folded) and _wordish(folded[end + 1]):
                continue
            for kw in kws:
                nodes = g.keywords.get(kw)
                if nodes:
                    found[kw] = set(nodes)
        return found
