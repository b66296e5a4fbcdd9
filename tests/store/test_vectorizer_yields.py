"""The vectorizer yields to this process's searches: while one runs it neither takes the store's
lock nor starts a piece of its batch, and after waiting for one its next piece is one text.
Each test waits on the signal the code gives (a thread waiting in ``SEARCHES.wait_quiet``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from noon.store.access import GraphService, service
from noon.store.readmodel import vectorizer
from noon.store.readmodel.embedder import DIMENSIONS, MODEL
from noon.store.readmodel.running import SEARCHES
from noon.store.store import Store
from tests.harness.texts import write_texts
from tests.harness.uri import open_store

np = pytest.importorskip("numpy")

SIGNAL_S = 30.0
"""How long a test waits for the worker's signal before it fails (never a synchronisation)."""


class Recorded:
    """The model's stand-in: each piece's texts, and what to do when one is embedded."""

    def __init__(self) -> None:
        self.pieces: list[list[str]] = []
        self.during: Callable[[], None] | None = None

    def embed(self, texts: list[str]) -> Any:
        self.pieces.append(list(texts))
        if self.during is not None:
            during, self.during = self.during, None
            during()
        return np.ones((len(texts), DIMENSIONS), dtype=np.float32)


@pytest.fixture
def backlog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Store, GraphService, Recorded]]:
    """Four memories, none embedded; a batch of four in pieces of at most two."""
    model = Recorded()
    monkeypatch.setattr(MODEL, "embed", model.embed)
    monkeypatch.setattr(vectorizer, "BATCH", 4)
    monkeypatch.setattr(vectorizer, "PIECE", 2)
    store, _ = open_store(tmp_path, "n1")
    svc = service(store)
    for i in range(1, 5):  # one by one: m4 the newest
        write_texts(svc, "default", {f"m{i}": f"memory {i}"})
    yield store, svc, model
    store.close()


def stepping(store: Store) -> tuple[threading.Thread, list[int]]:
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(store.vectorizer.step()))
    worker.start()
    return worker, done


def stored(store: Store) -> int:
    with store.lock:
        return int(store.model.conn.execute("SELECT count(*) FROM vectors").fetchone()[0])


def test_a_search_that_starts_while_a_batch_is_pending_ends_before_the_worker_takes_the_lock(
    backlog: tuple[Store, GraphService, Recorded],
) -> None:
    store, svc, model = backlog
    seen: dict[str, Any] = {}

    def accept(node: str) -> bool:
        if not seen:  # inside the search: the worker starts its step now
            worker, done = stepping(store)
            seen["worker"], seen["done"] = worker, done
            seen["waited"] = SEARCHES.changed(lambda: SEARCHES.waiting == 1, SIGNAL_S)
            seen["pieces"] = list(model.pieces)
        return True

    hits = svc.read(lambda s: s.search.search("default", "memory", 10, accept).hits)
    assert len(hits) == 4
    # the worker waited for the search before it looked for its batch under the lock (else
    # it would block on the lock this search holds, never waiting for the search itself)
    assert seen["waited"]
    assert seen["pieces"] == []
    seen["worker"].join(SIGNAL_S)
    assert seen["done"] == [4]
    assert stored(store) == 4


def test_a_search_that_starts_during_a_piece_stops_the_batch_until_it_ends(
    backlog: tuple[Store, GraphService, Recorded],
) -> None:
    store, _, model = backlog
    model.during = SEARCHES.begin  # a search starts while the first piece is embedded
    worker, done = stepping(store)
    try:
        assert SEARCHES.changed(lambda: SEARCHES.waiting == 1, SIGNAL_S)
        assert model.pieces == [["memory 4", "memory 3"]]
        assert stored(store) == 0
    finally:
        SEARCHES.end()
    worker.join(SIGNAL_S)
    assert done == [4]
    # after waiting for a search, one text; then twice that (the last one left)
    assert model.pieces == [["memory 4", "memory 3"], ["memory 2"], ["memory 1"]]
    assert stored(store) == 4


def test_with_no_search_running_the_batch_goes_in_whole_pieces(
    backlog: tuple[Store, GraphService, Recorded],
) -> None:
    store, _, model = backlog
    assert store.vectorizer.step() == 4
    assert model.pieces == [["memory 4", "memory 3"], ["memory 2", "memory 1"]]
    assert not SEARCHES.busy
