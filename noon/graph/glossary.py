"""Glossary auto-linking: find bound keywords in a text with one Aho-Corasick pass.

One automaton per namespace, rebuilt only when that namespace's keywords change. Matching
ignores case; a keyword that starts or ends with a letter or digit must sit on a word boundary
there ("Sal" does not fire inside "Salem"), while scripts written without spaces (CJK) match
anywhere.
"""

from __future__ import annotations

import ahocorasick

from noon.graph.reader import GraphReader


def _fold(text: str) -> str:
    # str.lower keeps lengths for nearly every script; positions are only used on the folded
    # text itself, so an exception can only cost a boundary check, never a wrong index.
    return text.lower()


def _wordish(ch: str) -> bool:
    return (ch.isalnum() and ord(ch) < 0x2E80) or ch == "_"


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

    def find(self, namespace: str, text: str) -> dict[str, set[str]]:
        """Keywords present in ``text`` mapped to the nodes they are bound to."""
        auto, keywords = self._automaton(namespace)
        if auto is None or not text:
            return {}
        folded = _fold(text)
        found: dict[str, set[str]] = {}
        for end, (word, kws) in auto.iter(folded):
            start = end - len(word) + 1
            if _wordish(word[0]) and start > 0 and _wordish(folded[start - 1]):
                continue
            if _wordish(word[-1]) and end + 1 < len(folded) and _wordish(folded[end + 1]):
                continue
            for kw in kws:
                nodes = keywords.get(kw)
                if nodes:
                    found[kw] = set(nodes)
        return found
