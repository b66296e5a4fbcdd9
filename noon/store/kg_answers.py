"""read_graph's answer, kept between calls while the graph it shows stands.

read_graph builds the whole namespace (three scans and a dict per entity: about 30 ms of CPU at
10k entities) and renders it; a client often reads the graph at the start of each conversation,
unchanged since the last. So the rendered text of each namespace's last answer is kept with what
it was read from: the read model's generation in the snapshot it was read in, and the connection
(a damaged read model is replaced by a new file, whose generations start again). Every fold that
changes an element moves the generation, whichever process folded it and whichever machine wrote
the ops (a replica's shard is folded like the own one), the rule a write already relies on to
know its plan is still current (:meth:`noon.store.store.Store.write`). Each read still refreshes
first, so what it shows is as current as a read that builds.

A read whose snapshot holds the kept generation answers with the kept text, and with the graph
parsed back from it (orjson, about a sixth of the build): every caller gets objects of its own.
At most :data:`KEEP_CHARS` characters are kept per store, the namespace read least recently
dropped first; a larger answer is not kept.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from noon.kg.text import pretty
from noon.store.store import Store

KEEP_CHARS = 8 * 2**20
"""Characters of rendered answers kept per store: a graph of about 60k entities with two short
observations each (the parsed graph, built on each read, is about four times the text)."""


@dataclass(frozen=True)
class _Kept:
    conn: sqlite3.Connection
    generation: int
    text: str


class _Answers:
    """The kept answers of one store, by namespace, least recently read first."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, namespace: str, conn: sqlite3.Connection, generation: int) -> str | None:
        with self._lock:
            kept = self._kept.get(namespace)
            if kept is None or kept.conn is not conn or kept.generation != generation:
                return None
            self._kept.move_to_end(namespace)
            return kept.text

    def put(self, namespace: str, kept: _Kept) -> None:
        with self._lock:
            self._kept.pop(namespace, None)
            if len(kept.text) > KEEP_CHARS:
                return
            self._kept[namespace] = kept
            while sum(len(k.text) for k in self._kept.values()) > KEEP_CHARS:
                self._kept.popitem(last=False)


_stores: weakref.WeakKeyDictionary[Store, _Answers] = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


def _answers(store: Store) -> _Answers:
    with _stores_lock:
        answers = _stores.get(store)
        if answers is None:
            answers = _stores[store] = _Answers()
        return answers


def _read(store: Store, namespace: str) -> tuple[str, dict[str, Any] | None]:
    """The namespace's graph as text, and the graph itself when it was built by this read."""
    answers = _answers(store)
    with store.lock:
        store.refresh()
        with store.graph.reading():
            conn = store.model.conn
            generation = store.model.generation  # in the snapshot the graph is read from
            text = answers.get(namespace, conn, generation)
            if text is not None:
                return text, None
            graph = store.kg(namespace).graph()
    text = pretty(graph)
    answers.put(namespace, _Kept(conn, generation, text))
    return text, graph


def parse(text: str) -> dict[str, Any]:
    """The value :func:`~noon.kg.text.pretty` rendered as ``text``."""
    try:
        found: dict[str, Any] = orjson.loads(text)
    except orjson.JSONDecodeError:  # a lone surrogate, which pretty escapes and orjson refuses
        found = json.loads(text)
    return found


def graph_text(store: Store, namespace: str) -> str:
    """read_graph's text (``JSON.stringify(graph, null, 2)``), current as of this call."""
    return _read(store, namespace)[0]


def graph_answer(store: Store, namespace: str) -> tuple[str, dict[str, Any]]:
    """read_graph's text and its structured content, current as of this call."""
    text, graph = _read(store, namespace)
    return text, graph if graph is not None else parse(text)
