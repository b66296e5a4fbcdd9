"""A fold that commits many times (a catch-up) writes the search documents its transactions left
in its last one. One that stops before it leaves :data:`PENDING`, and the next fold rebuilds
every document, even with nothing else to fold; one that meets a fork writes the documents of
the transactions it committed before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from noon.core.hlc import Clock
from noon.core.ops import encode
from noon.store.errors import ForkDetected
from noon.store.readmodel.documents import PENDING, unindex
from noon.store.readmodel.model import ReadModel
from noon.store.readmodel.schema import FILE_NAME
from noon.store.readmodel.unfolded import read_meta
from tests.harness.bulkshards import write_shards
from tests.harness.snapshot import snapshot


def read_model(directory: Path, path: Path | None = None) -> ReadModel:
    m = ReadModel(directory, path, Clock(), lambda: 1_800_000_000_000)
    m.chunk_ops, m.poll_bytes = 300, 8 << 10  # a fold of these shards commits many times
    return m


def live_without_document(m: ReadModel) -> int:
    return int(
        m.conn.execute(
            "SELECT count(*) FROM memories m WHERE deleted = 0 "
            "AND NOT EXISTS (SELECT 1 FROM memory_docs d WHERE d.id = m.id)"
        ).fetchone()[0]
    )


def fresh_snapshot(directory: Path) -> dict[str, Any]:
    fresh = ReadModel(directory, None, Clock(), lambda: 1_800_000_000_000)
    fresh.refresh()
    try:
        return snapshot(fresh.conn)
    finally:
        fresh.close()


def test_a_fold_of_many_commits_ends_with_every_document_written(tmp_path: Path) -> None:
    write_shards(tmp_path, 3000)
    m = read_model(tmp_path)
    commits = []
    commit = m._commit

    def counted(tx: Any, meta: dict[str, object], **kw: Any) -> None:
        commit(tx, meta, **kw)
        commits.append(live_without_document(m))

    m._commit = counted  # type: ignore[method-assign]
    m.refresh()
    assert len(commits) > 3
    assert commits[0] > 0  # the first commit left its documents to the last
    assert commits[-1] == 0
    assert read_meta(m.conn, PENDING, None) is None
    assert snapshot(m.conn) == fresh_snapshot(tmp_path)
    m.close()


def test_a_fold_stopped_after_a_commit_leaves_its_documents_to_the_next(tmp_path: Path) -> None:
    write_shards(tmp_path, 3000)
    m = read_model(tmp_path, tmp_path / FILE_NAME)
    commit = m._commit

    def stops(tx: Any, meta: dict[str, object], **kw: Any) -> None:
        commit(tx, meta, **kw)
        raise OSError("stopped after a commit")

    m._commit = stops  # type: ignore[method-assign]
    with pytest.raises(OSError, match="stopped"):
        m.refresh()
    m.close()

    again = read_model(tmp_path, tmp_path / FILE_NAME)
    assert read_meta(again.conn, PENDING, None) == 1
    assert live_without_document(again) > 0
    again.refresh()
    assert read_meta(again.conn, PENDING, None) is None
    assert snapshot(again.conn) == fresh_snapshot(tmp_path)
    again.close()


def test_documents_left_with_nothing_else_to_fold_are_rebuilt(tmp_path: Path) -> None:
    write_shards(tmp_path, 1000)
    m = read_model(tmp_path, tmp_path / FILE_NAME)
    m.refresh()
    expected = snapshot(m.conn)
    # What a fold stopped after its shards' last commit but before its documents leaves.
    unindex(m.conn, [m.conn.execute("SELECT min(id) FROM memory_docs").fetchone()[0]])
    m.conn.execute("INSERT INTO meta (key, value) VALUES (?, 1)", (PENDING,))
    assert snapshot(m.conn) != expected
    m.refresh()
    assert read_meta(m.conn, PENDING, None) is None
    assert snapshot(m.conn) == expected
    m.close()


def test_a_fork_found_after_commits_writes_their_documents(tmp_path: Path) -> None:
    write_shards(tmp_path, 3000)
    # A copy of node0's op 20 that differs, in a shard folded after node0's and node1's.
    other = encode(
        node="node0", seq=20, hlc=1, el=("content", "default", "x"), val={"text": "x"}, by="t"
    )
    (tmp_path / "node9.jsonl").write_bytes(other + b"\n")
    m = read_model(tmp_path, tmp_path / FILE_NAME)
    with pytest.raises(ForkDetected):
        m.refresh()
    assert m.conn.execute("SELECT count(*) FROM memory_docs").fetchone()[0] > 0
    assert live_without_document(m) == 0
    assert read_meta(m.conn, PENDING, None) is None
    m.close()
