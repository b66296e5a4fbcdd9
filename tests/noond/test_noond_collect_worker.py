"""A large store is collected in a process of its own (noond/collect_worker.py): the same
removal and the same report as inside noond, a failure there raised here with its errno, and a
worker that stops is killed in its time with nothing lost."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from noon.config import Settings
from noon.core.ops import Draft, OpError, decode
from noon.store.collect import Gate
from noon.store.store import Store
from noond.collect_worker import APART_BYTES, CollectionTimedOut, collect, time_allowed
from tests.harness.mesh import Node, Pki, start_all, wait_until
from tests.harness.stores import plan_of

pytestmark = pytest.mark.integration


def key(ident: str) -> tuple[str, ...]:
    return ("content", "default", ident)


def deleted_and_kept(data: Path) -> None:
    """Two deleted elements of ``a``: one every member saw deleted, one ``b`` never saw."""
    store = Store(Settings(dir=data, node_id="a", fsync=False))
    for name in ("gone", "kept"):
        key = ("content", "default", name)
        store.write(plan_of([Draft(key, {"text": "deleted text"})]))
        store.write(plan_of([Draft(key, None)]))
    store.write(plan_of([Draft(("content", "default", "y"), {"text": "after"})]))
    store.close()


GATE = Gate(
    reports={"b": {"a": 2}},  # b saw the first element's deletion, not the second's
    admitted=frozenset({"b"}),
    excluded=frozenset(),
    retired=None,
    away=frozenset(),
)


def test_a_collection_apart_removes_and_reports_what_one_inside_does(tmp_path: Path) -> None:
    inside, apart = tmp_path / "inside", tmp_path / "apart"
    deleted_and_kept(inside)
    shutil.copytree(inside, apart)
    gate = GATE
    here = collect(inside, "a", gate, 0, 30.0)
    t0 = time.monotonic()
    there = collect(apart, "a", gate, APART_BYTES, 30.0)
    assert time.monotonic() - t0 < 120
    assert there == here
    assert here.collected == 1 and [k for k, _ in here.kept] == [("content", "default", "kept")]
    assert (apart / "a.jsonl").read_bytes() == (inside / "a.jsonl").read_bytes()


def test_a_failure_apart_keeps_its_errno(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_bytes(b"")
    gate = Gate({}, frozenset(), frozenset(), None, frozenset())
    with pytest.raises(OSError) as caught:
        collect(not_a_dir, "a", gate, APART_BYTES, 30.0)
    assert caught.value.errno == errno.ENOTDIR


def workers(pid: int) -> list[int]:
    """The collection workers among the children of ``pid``'s threads (a worker is started
    from the thread that collects, so it is not a child of the main thread)."""
    found = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in children.read_text().split():
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            except FileNotFoundError:
                continue
            if b"noond.collect_worker" in cmdline:
                found.append(int(child))
    return found


def test_a_stopped_worker_is_killed_in_its_time_and_the_retry_loses_nothing(
    tmp_path: Path,
) -> None:
    inside, apart = tmp_path / "inside", tmp_path / "apart"
    deleted_and_kept(inside)
    shutil.copytree(inside, apart)
    shards = {p.name: p.read_bytes() for p in apart.glob("*.jsonl")}
    allowed = time_allowed(APART_BYTES, 3.0)
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(collect(apart, "a", GATE, APART_BYTES, 3.0))
        except Exception as exc:  # handed to the test's thread
            outcome.append(exc)

    collecting = threading.Thread(target=run)
    started = time.monotonic()
    collecting.start()
    deadline = time.monotonic() + 120
    while not (found := workers(os.getpid())):  # a worker lives for its imports at least
        assert collecting.is_alive() and time.monotonic() < deadline, "no worker seen"
        time.sleep(0.001)
    os.kill(found[0], signal.SIGSTOP)
    try:
        collecting.join(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(found[0], signal.SIGKILL)  # never left stopped, whatever the outcome
    took = time.monotonic() - started

    assert isinstance(outcome[0], CollectionTimedOut), outcome
    assert "ran over 3 s for 8 MiB" in str(outcome[0]) and "was killed" in str(outcome[0])
    assert allowed <= took < allowed + 60
    assert not Path(f"/proc/{found[0]}").exists(), "the worker was killed and reaped"
    assert {p.name: p.read_bytes() for p in apart.glob("*.jsonl")} == shards

    again = collect(apart, "a", GATE, APART_BYTES, 30.0)
    assert again == collect(inside, "a", GATE, 0, 30.0)
    assert again.collected == 1


def _ops_on(node: Node, ident: str) -> int:
    """Ops on an element in the shard files of a node (what is physically there)."""
    found = 0
    for shard in node.dir.glob("*.jsonl"):
        for line in shard.read_bytes().splitlines():
            with contextlib.suppress(OpError):
                found += decode(line).el == key(ident)
    return found


@pytest.mark.slow
def test_noond_kills_a_stopped_worker_goes_on_replicating_and_collects_later(
    spawn: list[Node], tmp_path: Path, pki: Pki
) -> None:
    a, b = (Node(n, tmp_path, pki, env={"NOOND_COLLECT_TIMEOUT": "5"}) for n in ("a", "b"))
    spawn += [a, b]
    big = [(f"big-{i}", f"{i}" * (1 << 20)) for i in range(9)]  # 9 MiB: collected apart
    a.write(*big)
    start_all((a, [b]), (b, [a]))
    wait_until(lambda: b.state().keys() >= {key(i) for i, _ in big}, what="b to hold a's store")
    assert a.proc is not None

    a.write(("deleted", "deleted while a's worker is stopped"))
    a.store().write(lambda fold: [Draft(key("deleted"), None)])
    deadline = time.monotonic() + 120
    while not (found := workers(a.proc.pid)):  # the collection after the deletion
        assert time.monotonic() < deadline, "a started no collection worker"
        time.sleep(0.001)
    os.kill(found[0], signal.SIGSTOP)
    stopped = time.monotonic()

    a.write(("from-a", "written while a's worker is stopped"))
    b.write(("from-b", "written on b meanwhile"))
    wait_until(lambda: key("from-a") in b.state(), what="b to get a's write")
    wait_until(lambda: key("from-b") in a.state(), what="a to get b's write")
    wait_until(lambda: a.metric("noond_collections_killed_total") == 1, what="the kill")
    assert time.monotonic() - stopped < 120
    assert not Path(f"/proc/{found[0]}").exists(), "the stopped worker was killed and reaped"
    assert "was killed; the collection is retried in" in a.log.read_text()

    wait_until(
        lambda: _ops_on(a, "deleted") == 0 and _ops_on(b, "deleted") == 0,
        timeout=300,
        what="the deleted element to be collected by a later collection",
    )
    assert a.metric("noond_tombstones_collected_total") >= 1
    for node in (a, b):
        state = node.state()
        for ident in [*(i for i, _ in big), "from-a", "from-b"]:
            assert key(ident) in state, (node.name, ident)
        assert all(state[key(i)][1] == {"text": t} for i, t in big)
