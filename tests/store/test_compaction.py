from collections import defaultdict
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from noon.config import Settings
from noon.core.compaction import droppable, stale_after_refetch
from noon.core.ops import Key, Op, OpId, encode
from noon.store.compact import compact_dir
from noon.store.store import Store
from tests.harness.fold import Fold
from tests.harness.sim import actions, run, skews, summary


def groups_of(ops):
    g: defaultdict[Key, dict[OpId, Op]] = defaultdict(dict)
    for op in ops:
        if op.known:
            g[op.el][op.id] = op
    return {k: list(v.values()) for k, v in g.items()}


def fold_summary(ops):
    f = Fold()
    f.apply_all(ops)
    return summary(f)


@given(actions, skews, st.integers(0, 3), st.integers(0, 3))
def test_dropping_never_changes_the_fold(acts, sk, which, history):
    nodes = run(acts, sk)
    all_ops = [op for n in nodes for op in n.ops]
    target = nodes[which % len(nodes)].ops
    last = max((op.seq for op in target), default=0)
    scope = {op.id for op in target if op.seq != last}
    arrived = {n.name: len(n.ops) for n in nodes}
    drops = droppable(groups_of(all_ops), lambda op: op.id in scope, history, arrived)
    assert drops <= scope
    assert fold_summary([op for op in all_ops if op.id not in drops]) == fold_summary(all_ops)
    named = {p for op in all_ops for p in (op.prev or ())}
    assert all(op.id in named for op in all_ops if op.id in drops)  # never a head


@given(actions, skews, st.sampled_from((0, 0, 1)), st.data())
def test_a_replica_that_lagged_behind_a_compaction_folds_like_the_peer_after_a_refetch(
    acts, sk, history, data
):
    """The lagging replica holds every other shard and a prefix of the author's; the peer
    compacted the author's shard. Taking the peer's copy (keeping what the peer lost only when
    :func:`stale_after_refetch` says so) must fold exactly like the peer: no stale head kept,
    nothing exposed."""
    nodes = run(acts, sk)
    all_ops = [op for n in nodes for op in n.ops]
    author = max(nodes, key=lambda n: len(n.ops))  # the longest chains of its own versions
    last = len(author.ops)
    scope = {op.id for op in author.ops if op.seq != last}
    drops = droppable(
        groups_of(all_ops), lambda op: op.id in scope, history, {n.name: len(n.ops) for n in nodes}
    )
    peer = [op for op in author.ops if op.id not in drops]
    held = author.ops[: data.draw(st.integers(0, last), label="lag")]
    head = len(held)
    merged = [op for op in peer if op.seq > head or op in held]
    missing = [op for op in held if op.id in drops]
    others = [op for op in all_ops if op.node != author.name] + merged
    keys = {op.el for op in missing}
    stale = stale_after_refetch(missing, [op for op in others if op.el in keys])
    assert stale <= {op.id for op in missing}
    replica = others + [op for op in missing if op.id not in stale]
    assert fold_summary(replica) == fold_summary(all_ops)


@given(actions, skews, st.data())
def test_dropping_after_a_refetch_never_makes_a_head(acts, sk, data):
    """Whatever a peer's copy lacks (collected, compacted, or anything), the ops that go never
    leave an op that stays named by nothing where something named it before."""
    ops = [op for n in run(acts, sk) for op in n.ops]
    missing = data.draw(st.lists(st.sampled_from(ops), unique=True) if ops else st.just([]))
    gone = {op.id for op in missing}
    stale = stale_after_refetch(missing, [op for op in ops if op.id not in gone])
    before = fold_summary(ops)
    after = fold_summary([op for op in ops if op.id not in stale])
    for key, (_, heads) in after.items():
        assert set(heads) <= set(before[key][1]), key


def test_superseded_versions_beyond_the_budget_go_and_the_budget_stays():
    nodes = run([(0, 0, 0, 0, i, 10) for i in range(8)], [0])
    ops = nodes[0].ops
    drops = droppable(groups_of(ops), lambda op: op.seq != 8, history=3, arrived={"n0": 8})
    assert drops == {("n0", s) for s in range(1, 5)}


def write_shards(directory: Path, nodes) -> None:
    for n in nodes:
        lines = [
            encode(node=op.node, seq=op.seq, hlc=op.hlc, el=op.el, val=op.val, prev=op.prev)
            for op in n.ops
        ]
        (directory / f"{n.name}.jsonl").write_bytes(b"".join(x + b"\n" for x in lines))


@given(actions, skews, st.integers(0, 2))
def test_compacting_every_shard_on_disk_keeps_the_store_fold(tmp_path_factory, acts, sk, hist):
    d = tmp_path_factory.mktemp("c")
    nodes = run(acts, sk)
    write_shards(d, nodes)
    settings = Settings.from_env({}, dir=d, node_id="reader")
    before = summary(Store(settings).fold)
    reports = compact_dir(d, sorted(p.name for p in d.glob("*.jsonl")), history=hist)
    assert all(r.after <= r.before for r in reports)
    assert summary(Store(settings).fold) == before
    # A second run has nothing left to drop and leaves the bytes as they are.
    snapshot = {p.name: p.read_bytes() for p in d.glob("*.jsonl")}
    again = compact_dir(d, sorted(snapshot), history=hist)
    assert all(r.dropped == 0 for r in again)
    assert {p.name: p.read_bytes() for p in d.glob("*.jsonl")} == snapshot
