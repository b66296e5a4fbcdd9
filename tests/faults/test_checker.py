"""The checker finds what it must: a lost acknowledged write, a delete that did not stick, a
resurrected element, diverged replicas, an unreported fork. Each case builds real shard
directories with the real store, then breaks one thing."""

from __future__ import annotations

import json
from pathlib import Path

from noon.config import Settings
from noon.core.ops import Draft
from noon.store.store import Store
from tests.harness.checker import History, check, read_replica

KEY = ("content", "default", "k")


def store(d: Path, node: str) -> Store:
    return Store(Settings(dir=d, node_id=node, fsync=False))


def ack(history: History, ops: list) -> None:
    history.ack_line(
        json.dumps(
            {
                "ops": [
                    [
                        op.node,
                        op.seq,
                        list(op.el),
                        op.val is not None,
                        [list(p) for p in op.prev or ()],
                    ]
                    for op in ops
                ]
            }
        )
    )


def replicate(src: Path, dst: Path) -> None:
    for shard in src.glob("*.jsonl"):
        (dst / shard.name).write_bytes(shard.read_bytes())


def two_replicas(tmp_path: Path) -> tuple[Path, Path, History]:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    history = History()
    s = store(a, "a")
    ack(history, s.write(lambda f: [Draft(KEY, {"text": "one"})]))
    ack(history, s.write(lambda f: [Draft(KEY, {"text": "two"})]))
    ack(history, s.write(lambda f: [Draft(("content", "default", "gone"), {"text": "x"})]))
    ack(history, s.write(lambda f: [Draft(("content", "default", "gone"), None)]))
    replicate(a, b)
    return a, b, history


def run(history: History, a: Path, b: Path, forks: tuple[str, ...] = ()) -> list[str]:
    return check(history, [read_replica("a", a), read_replica("b", b)], forks).anomalies


def test_a_clean_history_has_no_anomaly(tmp_path: Path) -> None:
    a, b, history = two_replicas(tmp_path)
    assert run(history, a, b) == []
    assert history.writes == 3 and history.deletes == 1


def test_a_lost_acknowledged_write_is_found(tmp_path: Path) -> None:
    a, b, history = two_replicas(tmp_path)
    lines = (b / "a.jsonl").read_bytes().splitlines(keepends=True)
    (b / "a.jsonl").write_bytes(b"".join(lines[:1] + lines[2:]))  # b lost "two"
    found = run(history, a, b)
    assert any(x.startswith("lost:") and "('a', 2)" in x for x in found), found
    assert any(x.startswith("resurrected:") and "('a', 1)" in x for x in found), found
    assert any(x.startswith("diverged:") for x in found)


def test_a_delete_that_did_not_stick_is_a_resurrection(tmp_path: Path) -> None:
    a, b, history = two_replicas(tmp_path)
    for d in (a, b):
        lines = (d / "a.jsonl").read_bytes().splitlines(keepends=True)
        (d / "a.jsonl").write_bytes(b"".join(lines[:3]))  # the tombstone vanished everywhere
    found = run(history, a, b)
    assert any(x.startswith("resurrected:") and "('a', 3)" in x for x in found), found


def test_a_collected_delete_is_not_a_loss(tmp_path: Path) -> None:
    a, b, history = two_replicas(tmp_path)
    for d in (a, b):
        lines = (d / "a.jsonl").read_bytes().splitlines(keepends=True)
        (d / "a.jsonl").write_bytes(b"".join(lines[:2]))  # "gone" collected entirely
    assert run(history, a, b) == []


def test_an_unacknowledged_durable_op_supersedes_like_an_acknowledged_one(tmp_path: Path) -> None:
    a, b, history = two_replicas(tmp_path)
    s = store(a, "a")
    s.write(lambda f: [Draft(KEY, {"text": "three, never acknowledged"})])  # writer died
    scanned = History()
    scanned.acked, scanned.durable = dict(history.acked), {}
    scanned.scan_unacked(a / "a.jsonl")  # what the nemesis does after killing a writer
    ack(history, s.write(lambda f: [Draft(KEY, {"text": "four"})]))
    ack(scanned, [s.fold.elements[KEY].winner])
    # A compaction drops the old versions: only the scan still knows that "three" named "two".
    lines = (a / "a.jsonl").read_bytes().splitlines(keepends=True)
    for d in (a, b):
        (d / "a.jsonl").write_bytes(b"".join([lines[2], lines[3], lines[5]]))
    assert any(x.startswith("lost:") and "('a', 2)" in x for x in run(history, a, b))
    assert run(scanned, a, b) == []


def test_an_unreported_fork_is_found(tmp_path: Path) -> None:
    a, b, history = two_replicas(tmp_path)
    lines = (b / "a.jsonl").read_bytes().splitlines(keepends=True)
    (b / "a.jsonl").write_bytes(b"".join(lines[:3]))
    store(b, "a").write(lambda f: [Draft(("content", "default", "other"), {"text": "fork"})])
    found = run(history, a, b)
    assert any(x.startswith("fork:") and "('a', 4)" in x for x in found), found
    assert not any(x.startswith("fork:") for x in run(history, a, b, forks=("a",)))
