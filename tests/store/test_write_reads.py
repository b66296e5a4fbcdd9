"""What one write reads besides its own work: the shards looked at three times (a fresh read
to plan on, once more under the shard's lock, once under the fold's lock after the append) and
the ``meta`` table once per refresh that finds nothing to fold, twice for the fold (its look
and its answer), not a statement per value."""

from pathlib import Path

import pytest

from noon.core.ops import Draft
from noon.store.readmodel import model
from noon.store.store import Store, Touched
from tests.harness.stores import open_store

KEY = ("content", "default", "m")


def put(store: Store, text: str) -> None:
    store.write(lambda graph: [Draft(KEY, {"text": text})])


def test_one_write_looks_at_the_shards_three_times_and_reads_meta_once_a_step(
    noon_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(noon_dir)
    put(store, "first")
    listed: list[Path] = []
    real = model.list_shards

    def counted(directory: Path) -> list[str]:
        listed.append(directory)
        return real(directory)

    monkeypatch.setattr(model, "list_shards", counted)
    statements: list[str] = []
    store.model.conn.set_trace_callback(statements.append)
    put(store, "second")
    store.model.conn.set_trace_callback(None)
    assert len(listed) == 3
    meta = [s for s in statements if "FROM meta" in s]
    # the look of each of the two refreshes before the append (which finds nothing to fold,
    # so it is also that refresh's answer), the fold's one look inside its transaction and its
    # answer after the commit, and the generation of each of two snapshots read
    assert len(meta) == 6, meta
    assert sum("FROM shards" in s for s in statements) == 3
    assert store.fold.elements[KEY].winner.val == {"text": "second"}


def test_a_batch_another_process_folded_first_is_still_told_to_the_writer(
    noon_dir: Path,
) -> None:
    """The fold after the append does not look before taking the fold's lock; when another
    process folded the batch meanwhile, it finds nothing to do there, and the writer still
    reads the batch and tells its listeners the key it wrote."""
    store = open_store(noon_dir, fsync=True)
    other = open_store(noon_dir, "b")
    put(store, "first")
    store.refresh()
    told: list[Touched] = []
    store.listeners.append(told.append)
    seen: list[int] = []

    def fold_elsewhere() -> None:  # runs after the batch was appended, during its fsync
        other.refresh()
        seen.append(other.model.generation)

    store.write(lambda graph: [Draft(KEY, {"text": "second"})], meanwhile=fold_elsewhere)
    assert other.fold.elements[KEY].winner.val == {"text": "second"}
    assert store.model.generation == seen[0]  # nothing folded twice: one generation
    assert store.fold.elements[KEY].winner.val == {"text": "second"}
    assert [t.keys for t in told] == [{KEY}]
