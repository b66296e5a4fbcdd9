"""The vectorizer embeds a backlog in passes from the newest memory down, each batch looked for
below the last one's, and starts again from the top when a change is reported (a new memory
or an edit is embedded before the older backlog) or when it reaches the bottom; a search reads
the vectors stored since its last by their stamps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from noon.store.access import GraphService, service
from noon.store.readmodel import vectorizer, vectors
from noon.store.readmodel.embedder import DIMENSIONS, MODEL
from noon.store.store import Store
from tests.harness.texts import write_texts
from tests.harness.uri import open_store

np = pytest.importorskip("numpy")


@pytest.fixture
def backlog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Store, GraphService, dict[str, str], list[list[str]]]]:
    """Five memories written one by one (m1 the oldest), none embedded yet; two a batch; each
    batch's texts recorded instead of embedded by the model."""
    batches: list[list[str]] = []

    def embed(texts: list[str]) -> Any:
        batches.append(list(texts))
        return np.ones((len(texts), DIMENSIONS), dtype=np.float32)

    monkeypatch.setattr(MODEL, "embed", embed)
    monkeypatch.setattr(vectorizer, "BATCH", 2)
    store, _ = open_store(tmp_path, "n1")
    svc = service(store)
    ids: dict[str, str] = {}
    for i in range(1, 6):
        ids |= write_texts(svc, "default", {f"m{i}": f"memory {i}"})
    yield store, svc, ids, batches
    store.close()


def test_a_pass_goes_down_the_backlog_and_a_change_starts_it_again_from_the_top(
    backlog: tuple[Store, GraphService, dict[str, str], list[list[str]]],
) -> None:
    store, svc, ids, batches = backlog
    assert store.vectorizer.step() == 2
    assert store.vectorizer.step() == 2
    assert batches == [["memory 5", "memory 4"], ["memory 3", "memory 2"]]
    # an edit of the newest memory is reported by its fold: it goes before the older backlog
    write_texts(svc, "default", {"m5": "memory 5, edited"}, update=ids)
    assert store.vectorizer.step() == 2
    assert batches[-1] == ["memory 5, edited", "memory 1"]
    assert store.vectorizer.step() == 0


def test_reaching_the_bottom_looks_again_from_the_top(
    backlog: tuple[Store, GraphService, dict[str, str], list[list[str]]],
) -> None:
    store, _, _, batches = backlog
    for _ in range(3):
        store.vectorizer.step()
    assert batches == [["memory 5", "memory 4"], ["memory 3", "memory 2"], ["memory 1"]]
    # an edit this process is not told of (another process folded it, and no refresh has
    # reported it yet) is found once the pass reaches the bottom
    with store.lock:
        store.model.conn.execute(
            "UPDATE vectors SET w_seq = -1 WHERE id = (SELECT max(id) FROM vectors)"
        )
    assert store.vectorizer.step() == 1
    assert batches[-1] == ["memory 5"]
    assert store.vectorizer.step() == 0


def test_a_search_reads_the_vectors_stored_since_its_last_by_their_stamps(
    backlog: tuple[Store, GraphService, dict[str, str], list[list[str]]],
) -> None:
    store, svc, _, _ = backlog
    write_texts(svc, "other", {"elsewhere": "a memory of another namespace"})
    while store.vectorizer.step():
        pass
    with store.lock:
        conn = store.model.conn
        stamps = dict(conn.execute("SELECT id, stamp FROM vectors").fetchall())
        ns = dict(conn.execute("SELECT id, ns FROM memories").fetchall())
        mine = sorted(stamps[row] for row in stamps if ns[row] == "default")
        since = conn.execute(vectors.SINCE, (mine[1], "default")).fetchall()
        assert [stamp for stamp, _, _ in since] == mine[2:]
        # from the vectors by their stamps, not through every memory of the namespace
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + vectors.SINCE, (0, "x"))]
    assert plan[0].startswith("SEARCH v USING INTEGER PRIMARY KEY (rowid>?)"), plan
    assert not any("TEMP B-TREE" in step or "SCAN" in step for step in plan), plan


def test_vectors_merged_batch_by_batch_are_the_matrix_merged_at_once() -> None:
    rnd = np.random.default_rng(7)
    fresh = [
        (stamp, 100 + stamp % 40, rnd.standard_normal(DIMENSIONS).astype(np.float16).tobytes())
        for stamp in range(1, 121)
    ]  # 40 memories, each given a vector three times over (its text edited)
    at_once, in_batches = vectors._Space(), vectors._Space()
    at_once.merge(fresh[-40:])  # what the table holds then: each memory's last vector
    for start in range(0, len(fresh), 7):
        in_batches.merge(fresh[start : start + 7])
    assert in_batches.rows == at_once.rows
    assert in_batches.where == at_once.where
    assert np.array_equal(in_batches.matrix, at_once.matrix)
    assert in_batches.matrix.shape == (40, DIMENSIONS)
