"""The read model answers exactly as a fresh in-memory fold of the same shards, for every view
and tool, whatever happened to the shards in between: random multi-node histories delivered in
pieces (batches torn mid-write included), compactions, tombstone collections, replica shards
truncated or deleted, forks (refused by both, then repaired), and folds killed mid-transaction.

The read model under test is refreshed incrementally, step by step, by two processes' handles on
one file; the reference is rebuilt from the files from scratch at every comparison."""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noon.config import Settings
from noon.core.fold import ForkError
from noon.core.hlc import Clock
from noon.core.ops import decode, encode
from noon.store.collect import collect_dir
from noon.store.compact import compact_dir
from noon.store.errors import ForkDetected
from noon.store.readmodel import apply
from noon.store.readmodel.model import ReadModel
from noon.store.readmodel.state import head_ids
from noon.store.store import Store
from tests.harness.graphsim import NS, Replica, apply_kg_step, apply_step
from tests.harness.kg_view import View
from tests.harness.oracle import fold_of_dir, observe
from tests.harness.uri_graph import Graph

NODES = ("a", "b")
EXAMPLES = int(os.environ.get("NOON_MODEL_EXAMPLES", "60"))

KINDS = {
    "write": 30,
    "kg": 10,
    "sync": 5,
    "deliver": 20,
    "refresh": 10,
    "torn": 3,
    "compact": 4,
    "collect": 4,
    "truncate": 3,
    "lose": 2,
    "fork": 3,
    "crash": 3,
}
URI_STEPS = ["create"] * 4 + ["alias", "move", "move", "delete", "trigger", "boot", "edit", "edit"]
KG_STEPS = ["entity", "entity", "observe", "relate", "forget", "unobserve", "unrelate"]
NAMES = [*"abcdefghijklm", "7", "10", "012"]
PEOPLE = ["ann", "bob", "cat"]
TEXTS = ["tea", "Tea time", "x" * 1100, "σοφία"]


def events(rnd: random.Random) -> list[tuple[str, str, Any]]:
    """A history: mostly writes and deliveries, with every kind of trouble mixed in. Drawn from
    one seed (hypothesis picks and replays seeds) so histories are long and varied."""
    out: list[tuple[str, str, Any]] = []
    for _ in range(rnd.randint(40, 160)):
        kind = rnd.choices(list(KINDS), weights=list(KINDS.values()))[0]
        node = rnd.choice(NODES)
        arg: Any
        if kind == "write":
            arg = (rnd.choice(URI_STEPS), rnd.randint(0, 50), rnd.randint(0, 50), rnd.choice(NAMES),
                   rnd.randint(0, 1))  # fmt: skip
        elif kind == "kg":
            arg = (rnd.choice(KG_STEPS), rnd.choice(PEOPLE), rnd.choice(PEOPLE), rnd.choice(TEXTS))
        elif kind == "sync":
            arg = rnd.choice(NODES)
        elif kind in ("deliver", "torn"):
            arg = rnd.randint(1, 12 if kind == "deliver" else 40)
        else:
            arg = rnd.randint(0, 6)
        out.append((kind, node, arg))
    return out


class Machine:
    """A ``NOON_DIR`` that receives the writers' shards, and two readers sharing its read
    model."""

    def __init__(self, root: Path) -> None:
        self.dir = root
        self.delivered = dict.fromkeys(NODES, 0)
        settings = Settings.from_env({}, dir=root, node_id="m", fsync=False, compact_after=0)
        self.readers = [Store(settings), Store(settings)]

    def shard(self, node: str) -> Path:
        return self.dir / f"{node}.jsonl"

    def deliver(self, r: Replica, count: int) -> None:
        """The next ``count`` lines of ``r``'s shard, as a replica grows (a batch may be cut)."""
        lines = r.lines[self.delivered[r.node] : self.delivered[r.node] + count]
        if lines:
            with open(self.shard(r.node), "ab") as f:
                f.write(b"".join(line + b"\n" for line in lines))
            self.delivered[r.node] += len(lines)

    def torn(self, r: Replica, cut: int) -> None:
        """Half of the next line (a crash mid-write); the next delivery completes it."""
        line = r.lines[self.delivered[r.node]] if self.delivered[r.node] < len(r.lines) else b""
        if line:
            with open(self.shard(r.node), "ab") as f:
                f.write(line[: min(cut, len(line) - 1)])
            self.repair: tuple[str, bytes] | None = (r.node, line[: min(cut, len(line) - 1)])

    def heal_tear(self) -> None:
        tear = getattr(self, "repair", None)
        if tear is not None:
            node, part = tear
            data = self.shard(node).read_bytes()
            if data.endswith(part):
                self.shard(node).write_bytes(data[: len(data) - len(part)])
            self.repair = None

    def truncate(self, node: str, keep: int) -> None:
        """A damaged replica: only its first ``keep`` complete lines survive."""
        path = self.shard(node)
        if path.exists():
            lines = path.read_bytes().split(b"\n")[:-1]
            path.write_bytes(b"".join(line + b"\n" for line in lines[:keep]))
            self.delivered[node] = min(self.delivered[node], keep)

    def full_reports(self) -> dict[str, dict[str, int]]:
        frontier = fold_of_dir(self.dir).frontier()
        return {n: dict(frontier) for n in NODES}


def reference(directory: Path) -> dict[str, Any] | str:
    try:
        fold = fold_of_dir(directory)
    except ForkError as exc:
        return f"fork {exc.node}:{exc.seq}"
    return observe(Graph(fold), View(fold, NS), fold)


def through(store: Store) -> dict[str, Any] | str:
    try:
        store.refresh()
    except ForkDetected as exc:
        return "fork " + str(exc).split("operation ")[1].split(" ")[0]
    with store.lock, store.graph.reading():
        seen = observe(store.graph, store.kg(NS), store.fold)
        keys = list(store.fold.elements)
        one_by_one = {k: tuple(sorted(store.fold.elements[k].heads)) for k in keys}
        assert head_ids(store.model.conn, keys) == one_by_one  # what a writer names as prev
        return seen


def run(tmp: Path, events: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    writers = {n: Replica(n) for n in NODES}
    m = Machine(tmp)
    for kind, who, arg in events:
        r = writers.get(who)
        if kind == "write" and r is not None:
            apply_step(r, arg)
        elif kind == "kg" and r is not None:
            apply_kg_step(r, arg)
        elif kind == "sync" and r is not None:
            r.receive([op for op in writers[arg].log if not r.fold.holds(op.node, op.seq)])
        elif kind in ("deliver", "torn", "truncate", "lose", "compact", "fork"):
            m.heal_tear()
            if kind == "deliver" and r is not None:
                m.deliver(r, arg)
            elif kind == "torn" and r is not None:
                m.torn(r, arg)
            elif kind == "truncate":
                m.truncate(who, arg)
            elif kind == "lose" and m.shard(who).exists():
                m.shard(who).unlink()
                m.delivered[who] = 0
            elif kind == "compact" and m.shard(who).exists():
                compact_dir(m.dir, [m.shard(who).name], history=arg % 3)
            elif kind == "fork":
                fork(m, who, arg, writers)
        elif kind == "collect":
            m.heal_tear()
            collect_dir(m.dir, self_id="m", reports=m.full_reports())
        elif kind == "crash":
            crash_mid_fold(m.readers[arg % 2], monkeypatch)
        elif kind == "refresh":
            assert through(m.readers[arg % 2]) == reference(m.dir)
    m.heal_tear()
    expected = reference(m.dir)
    for reader in m.readers:
        assert through(reader) == expected
    if not isinstance(expected, str):
        assert search_index(m.readers[0].model.conn) == search_index(fresh_model(m.dir).conn)


def fresh_model(directory: Path) -> ReadModel:
    model = ReadModel(directory, None, Clock(), lambda: 1_800_000_000_000)
    model.refresh()
    return model


def search_index(conn: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
    """Every word the memory index holds, where (row, column, position), and the short columns
    kept beside it: equal to a fresh fold's only if every document was taken out with exactly
    the values it was indexed with (a contentless index cannot check that itself)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_words USING fts5vocab(main, memory_fts, "
        "'instance')"
    )
    words = conn.execute(
        "SELECT term, m.ns, m.node, col, offset FROM temp.fts_words w "
        "LEFT JOIN memories m ON m.id = w.doc ORDER BY 1, 2, 3, 4, 5"
    ).fetchall()
    docs = conn.execute(
        "SELECT m.ns, m.node, d.uri, d.disclosure, d.keywords FROM memory_docs d "
        "LEFT JOIN memories m ON m.id = d.id ORDER BY 1, 2"
    ).fetchall()
    return words, docs


def fork(m: Machine, node: str, pick: int, writers: dict[str, Replica]) -> None:
    """Another version of an op the shard holds, appended after it: the read model must refuse
    it as the reference does; then the line goes (the operator's repair) and both read the
    shards again."""
    path = m.shard(node)
    if not path.exists():
        return
    lines = [line for line in path.read_bytes().split(b"\n") if line.strip()]
    if not lines:
        return
    op = decode(lines[pick % len(lines)])
    other = encode(node=op.node, seq=op.seq, hlc=op.hlc + 1, el=op.el, val={"text": "forged"})
    if op.el[0] != "content":
        return
    before = path.read_bytes()
    path.write_bytes(before + other + b"\n")
    expected = reference(m.dir)  # a fork, unless the line waits behind an unfinished batch
    assert through(m.readers[0]) == expected
    path.write_bytes(before)


def crash_mid_fold(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fold transaction that dies after storing ops but before settling them: nothing of it
    may stay (the next refresh folds it all again)."""

    def die(self: apply.Transaction) -> set[str]:
        raise sqlite3.OperationalError("killed mid-transaction")

    with monkeypatch.context() as patch:
        patch.setattr(apply.Transaction, "finish", die)
        with contextlib.suppress(sqlite3.OperationalError):
            store.refresh()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.randoms(use_true_random=False))
def test_the_read_model_answers_as_a_fresh_fold_of_the_shards(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, rnd: random.Random
) -> None:
    run(tmp_path_factory.mktemp("machine"), events(rnd), monkeypatch)
