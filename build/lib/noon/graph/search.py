"""Ranked full-text search over memories: content, URI segments, disclosures and keywords.

An inverted index per namespace, scored with BM25 over field-weighted term frequencies. It is
maintained lazily: the graph reports which nodes an update touched, and only those documents
are re-tokenised at the next search. Query terms match whole tokens, or token prefixes (at a
lower weight) when a term has no exact hit; documents that match every term rank first.
"""

from __future__ import annotations

import gc
import heapq
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from noon.graph.model import Dirty, Graph, live_text

_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
WEIGHTS = {"content": 1.0, "uri": 2.0, "disclosure": 1.5, "keyword": 2.0}
K1 = 1.2
B = 0.75
PREFIX_WEIGHT = 0.5


def tokens(text: str) -> list[str]:
    """Lowercased word tokens; runs of CJK characters become overlapping bigrams."""
    words = _WORD.findall(text.casefold())
    if not _CJK.search(text):
        return words
    out: list[str] = []
    for word in words:
        if _CJK.search(word):
            run = word
            if len(run) == 1:
                out.append(run)
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            out.append(word)
    return out


@dataclass
class Doc:
    tf: Counter[str]
    length: float


@dataclass(frozen=True)
class Hit:
    node: str
    score: float
    matched: tuple[str, ...]


class NsIndex:
    def __init__(self) -> None:
        self.docs: dict[str, Doc] = {}
        self.postings: dict[str, dict[str, float]] = {}
        self.total_length = 0.0

    def remove(self, node: str) -> None:
        doc = self.docs.pop(node, None)
        if doc is None:
            return
        self.total_length -= doc.length
        for tok in doc.tf:
            p = self.postings.get(tok)
            if p is not None:
                p.pop(node, None)
                if not p:
                    del self.postings[tok]

    def add(self, node: str, tf: Counter[str]) -> None:
        length = float(sum(tf.values()))
        self.docs[node] = Doc(tf, length)
        self.total_length += length
        postings = self.postings
        for tok, w in tf.items():
            p = postings.get(tok)
            if p is None:
                postings[tok] = {node: w}
            else:
                p[node] = w


class SearchIndex:
    """Search over a :class:`Graph`, kept current through the graph's dirty reports."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.dirty = Dirty(reset=True)
        graph.listeners.append(self.dirty)
        self.spaces: dict[str, NsIndex] = {}
        self.pending: list[tuple[str, str]] = []

    def _document(self, namespace: str, node: str) -> Counter[str] | None:
        g = self.graph
        el = g.content(namespace, node)
        if el is None or el.deleted:
            return None
        tf: Counter[str] = Counter(tokens(live_text(el)))  # content weighs 1
        for uri, _ in g.uris(namespace, node, limit=4):
            for tok in set(tokens(" ".join((uri.domain, *uri.path)))):
                tf[tok] += WEIGHTS["uri"]  # type: ignore[assignment]
        for pl in g.placements(namespace, node):
            for tok in tokens(pl.disclosure):
                tf[tok] += WEIGHTS["disclosure"]  # type: ignore[assignment]
        for kw in g.keywords_of(namespace, node):
            for tok in tokens(kw):
                tf[tok] += WEIGHTS["keyword"]  # type: ignore[assignment]
        return tf

    def _index(self, namespace: str, node: str) -> None:
        idx = self.spaces.get(namespace)
        if idx is None:
            idx = self.spaces[namespace] = NsIndex()
        idx.remove(node)
        tf = self._document(namespace, node)
        if tf:
            idx.add(node, tf)

    def start_rebuild(self) -> None:
        """Drop the index and queue every document (``build_some`` or a search indexes them)."""
        d = self.dirty
        d.reset = False
        d.nodes.clear()
        d.moved.clear()
        self.spaces = {}
        self.pending = [(ns, n) for ns, g in self.graph.spaces.items() for n in g.nodes]

    def build_some(self, count: int) -> bool:
        """Index up to ``count`` queued documents; False once nothing is left to build. Lets a
        caller build a large index in slices, releasing its lock in between."""
        if self.dirty.reset:
            self.start_rebuild()
        for _ in range(min(count, len(self.pending))):
            self._index(*self.pending.pop())
        return bool(self.pending)

    def _sync(self) -> None:
        d = self.dirty
        if d.reset:
            self.start_rebuild()
        if self.pending:
            was_enabled = gc.isenabled()
            gc.disable()  # as in Graph.rebuild: no cycles here, and full collections cost
            try:
                self.build_some(len(self.pending))
            finally:
                if was_enabled:
                    gc.enable()
        if not d.nodes and not d.moved:
            return
        todo = set(d.nodes)
        for namespace, node in d.moved:
            # URI tokens of a whole subtree change when a node is placed or moved.
            todo.update((namespace, n) for n in self.graph.subtree(namespace, node))
        d.nodes.clear()
        d.moved.clear()
        for namespace, node in todo:
            self._index(namespace, node)

    def search(
        self,
        namespace: str,
        query: str,
        limit: int = 10,
        accept: Callable[[str], bool] | None = None,
    ) -> list[Hit]:
        """The best ``limit`` documents for ``query``, among nodes ``accept`` lets through."""
        self._sync()
        idx = self.spaces.get(namespace)
        terms = list(dict.fromkeys(tokens(query)))
        if idx is None or not idx.docs or not terms:
            return []
        n = len(idx.docs)
        avg = idx.total_length / n if n else 1.0
        docs = idx.docs
        scores: dict[str, float] = {}
        matched: dict[str, int] = {}
        for bit, term in enumerate(terms):
            postings = [(term, 1.0)] if term in idx.postings else []
            if not postings and len(term) >= 2:
                postings = [(tok, PREFIX_WEIGHT) for tok in idx.postings if tok.startswith(term)][
                    :64
                ]
            flag = 1 << bit
            for tok, weight in postings:
                p = idx.postings[tok]
                idf = math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) * weight * (K1 + 1)
                base, slope = K1 * (1 - B), K1 * B / avg
                for node, tf in p.items():
                    s = idf * tf / (tf + base + slope * docs[node].length)
                    scores[node] = scores.get(node, 0.0) + s
                    matched[node] = matched.get(node, 0) | flag
        if not scores:
            return []

        def rank(nd: str) -> tuple[int, float, str]:
            return (matched[nd].bit_count(), scores[nd], nd)

        hits: list[Hit] = []
        want = limit * 4 + 16
        while True:
            ranked = heapq.nlargest(want, scores, key=rank)
            hits = []
            for nd in ranked:
                if len(hits) >= limit:
                    break
                if accept is None or accept(nd):
                    found = tuple(t for i, t in enumerate(terms) if matched[nd] >> i & 1)
                    hits.append(Hit(nd, round(scores[nd], 4), found))
            if len(hits) >= limit or len(ranked) < want:
                return hits
            want *= 4


def snippet(text: str, query: str, terms: tuple[str, ...], width: int = 40) -> str:
    """A short excerpt around the first hit of the query, else of a matched term."""
    flat = " ".join(text.split())
    low = flat.casefold()
    pos = low.find(query.casefold().strip())
    size = len(query.strip())
    if pos < 0 or not query.strip():
        pos, size = -1, 0
        for t in terms:
            pos = low.find(t)
            if pos >= 0:
                size = len(t)
                break
    if pos < 0:
        return flat[: width * 2] + ("..." if len(flat) > width * 2 else "")
    start, end = max(0, pos - width), min(len(flat), pos + size + width)
    return ("..." if start else "") + flat[start:end] + ("..." if end < len(flat) else "")
