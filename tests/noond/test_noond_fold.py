"""noond folds what it receives into the machine's read model (noond/fold.py, in the worker
process of noond/fold_worker.py): a real fresh noond catches up from a real peer, then a real
``noon serve`` answers its first call without folding anything (the read model's generation and
cursors are where noond left them). Killed with SIGKILL in the middle of a fold, noond and its
worker lose nothing: the next noond finishes the fold, and the read model shows exactly what
the shards hold."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from bench.kg_latency import noon_client
from bench.noond_mesh import read_model_holds, read_model_state, shard_sizes, signed_store
from noon.config import Settings
from noon.store.store import Store, read_model_path
from noond.fold_worker import NICE
from tests.harness.kg_view import View
from tests.harness.mesh import Node, Pki, wait_until
from tests.harness.oracle import fold_of_dir, observe
from tests.harness.uri_graph import Graph

pytestmark = pytest.mark.integration

OPS = 4000


def source(
    spawn: list[Node], tmp_path: Path, pki: Pki, ops: int = OPS
) -> tuple[Node, dict[str, int]]:
    """A node holding ``ops`` ops of four authors, signed as their machines would have."""
    src = Node("src", tmp_path, pki)
    spawn.append(src)
    return src, signed_store(src.dir, pki, ops)


def test_first_session_after_a_catch_up_folds_nothing(spawn, tmp_path, pki):
    src, want = source(spawn, tmp_path, pki)
    fresh = Node("fresh", tmp_path, pki)
    spawn.append(fresh)
    src.start([fresh])
    fresh.start([src])

    def folded() -> bool:
        # The worker commits before it answers noond, which counts the fold after that.
        return (
            shard_sizes(fresh.dir) == want
            and read_model_holds(fresh.dir, want)
            and fresh.metric("noond_readmodel_folds_total", 'result="current"') >= 1
        )

    wait_until(folded, timeout=300, what="noond to fold every shard it pulled")
    generation, cursors = read_model_state(fresh.dir)
    assert generation > 0
    # The worker that answered has yielded its priority to noond's (it lives on when current).
    assert fresh.proc is not None
    mine = os.getpriority(os.PRIO_PROCESS, fresh.proc.pid)
    assert os.getpriority(os.PRIO_PROCESS, fold_worker(fresh)) == min(19, mine + NICE)

    client = noon_client(fresh.dir, fsync=False, node="fresh", tools="uri", timeout=300)
    try:
        answer = client.call("search_memory", {"query": "memory text", "limit": 5})
    finally:
        client.close()
    assert not answer.get("isError"), answer
    hits = answer["structuredContent"]["results"]
    assert len(hits) == 5  # generated memories, found in what noond folded
    # The session read what noond had committed: it folded nothing itself.
    assert read_model_state(fresh.dir) == (generation, cursors)


def test_without_noond_folding_the_first_session_folds(spawn, tmp_path, pki):
    """The control: with NOOND_FOLD=false the read model stays behind the shards noond
    stored, and the first session is the one that folds them."""
    src, want = source(spawn, tmp_path, pki)
    fresh = Node("fresh", tmp_path, pki, env={"NOOND_FOLD": "false"})
    spawn.append(fresh)
    src.start([fresh])
    fresh.start([src])
    wait_until(
        lambda: shard_sizes(fresh.dir) == want,
        timeout=300,
        what="the fresh node to hold every shard",
    )
    generation, cursors = read_model_state(fresh.dir)
    assert not all(cursors.get(n) == s for n, s in want.items())

    client = noon_client(fresh.dir, fsync=False, node="fresh", tools="uri", timeout=300)
    try:
        answer = client.call("search_memory", {"query": "memory text", "limit": 5})
    finally:
        client.close()
    assert len(answer["structuredContent"]["results"]) == 5
    after, folded = read_model_state(fresh.dir)
    assert after > generation
    assert all(folded.get(n) == s for n, s in want.items())


def folded_bytes(directory: Path) -> int:
    try:
        return sum(read_model_state(directory)[1].values())
    except sqlite3.Error:
        return 0  # the read model is being created this very moment


def fold_worker(daemon: Node) -> int:
    """The pid of noond's fold worker (its only child)."""
    children = daemon.children()
    assert len(children) == 1, children
    return children[0]


def gone(pid: int) -> bool:
    """The process has ended (a zombie nobody reaped counts: it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def writing(database: Path) -> bool:
    """Some process holds the read model's write lock: a transaction with writes is open. The
    probe takes the lock itself when it is free, and gives it back at once."""
    try:
        conn = sqlite3.connect(
            f"file:{database}?mode=rw", uri=True, timeout=0, isolation_level=None
        )
    except sqlite3.Error:
        return False  # not created yet
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        return "locked" in str(exc)
    else:
        conn.execute("ROLLBACK")
        return False
    finally:
        conn.close()


def test_noond_killed_mid_fold_loses_nothing_and_the_next_noond_finishes(spawn, tmp_path, pki):
    """The worker is frozen while it holds the read model's write lock before the read model
    holds every shard (so the kill lands inside a fold's transaction, not after it), then noond
    and the worker get SIGKILL. The lock is probed before and after the freeze: a worker that
    committed in between is let go and caught in a later transaction."""
    src, want = source(spawn, tmp_path, pki, ops=30_000)
    total = sum(want.values())
    fresh = Node("fresh", tmp_path, pki)
    spawn.append(fresh)
    src.start([fresh])
    fresh.start([src])
    database = read_model_path(fresh.dir)

    def frozen_in_a_fold() -> int | None:
        if not writing(database):
            return None
        worker = fold_worker(fresh)
        os.kill(worker, signal.SIGSTOP)
        if writing(database) and folded_bytes(fresh.dir) < total:
            return worker
        os.kill(worker, signal.SIGCONT)
        return None

    worker = None
    deadline = time.monotonic() + 300
    while worker is None:
        assert folded_bytes(fresh.dir) < total, "the fold ended before the probe saw it under way"
        assert time.monotonic() < deadline, "no fold under way within 300 s"
        worker = frozen_in_a_fold()
        if worker is None:
            time.sleep(0.005)  # polling interval of a bounded wait, not synchronisation
    os.kill(worker, signal.SIGKILL)
    fresh.kill()
    wait_until(lambda: gone(worker), what="the worker to be gone")
    assert folded_bytes(fresh.dir) < total  # the fold's transaction was lost, and only it

    fresh.start([src])
    wait_until(
        lambda: read_model_holds(fresh.dir, want) and shard_sizes(fresh.dir) == want,
        timeout=300,
        what="the restarted noond to finish the fold",
    )
    fold = fold_of_dir(fresh.dir)
    expected = observe(Graph(fold), View(fold, "default"), fold)
    fresh.stop()
    settings = Settings.from_env({}, dir=fresh.dir, node_id="checker", fsync=False)
    store = Store(settings)
    try:
        with store.lock, store.graph.reading():
            assert observe(store.graph, store.kg("default"), store.fold) == expected
    finally:
        store.close()
