"""Search text: how queries and memories are cut into words, and the excerpt shown beside a
hit. The index itself is the read model's (:mod:`noon.store.readmodel.search`: SQLite FTS5,
BM25).
"""

from __future__ import annotations

import re
from functools import cache

from noon.graph.stopwords import STOP_WORDS

_WORD = re.compile(r"\w+")
_SCRIPTS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"


@cache
def cjk() -> re.Pattern[str]:
    """A character of a script written without spaces (kana, CJK ideographs, Hangul): the memory
    index makes each one a word of its own (:func:`noon.store.readmodel.documents.segment`).
    Compiled on first use: a class of some 40,000 characters takes ``re`` about 2 ms to compile,
    which a session that never cuts such text (every knowledge-graph call but a search) need not
    pay before its first answer."""
    return re.compile(f"[{_SCRIPTS}]")


@cache
def _runs() -> re.Pattern[str]:
    """A word cut where it changes between such a script and another ("用python写": "用",
    "python", "写"); compiled on first use, as :func:`cjk`."""
    return re.compile(f"[{_SCRIPTS}]+|[^\\W{_SCRIPTS}]+")


def tokens(text: str) -> list[str]:
    """Lowercased word tokens; runs of CJK characters become overlapping bigrams (a lone one
    stays itself), and a word mixing scripts ("用Python写代码", "noonの設定") is cut where the
    script changes, so its other words stay whole ("python", "noon") as the index holds them."""
    words = _WORD.findall(text.casefold())
    if text.isascii() or not cjk().search(text):  # isascii is a flag: no scan
        return words
    out: list[str] = []
    in_script = cjk().match
    for word in words:
        for run in _runs().findall(word):
            if not in_script(run):
                out.append(run)
                continue
            if len(run) == 1:
                out.append(run)
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


def query_terms(query: str) -> list[str]:
    """The distinct words of a query that can tell memories apart: its tokens without English
    stop words, or all of them when nothing else is left ("who am I")."""
    words = list(dict.fromkeys(tokens(query)))
    kept = [w for w in words if w not in STOP_WORDS]
    return kept or words


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
