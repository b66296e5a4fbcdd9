"""The collection rule played in a simulated mesh: several nodes write, delete and re-create
elements, exchange over a lossy, reordering network with seq cursors, crash, depart, and collect
tombstones by :mod:`noon.core.collection`. After every step: no dropped op ever comes back and no
deleted version reappears; at the end, after everyone has exchanged, all replicas agree and every
plain delete has been physically collected."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from noon.core.collection import blocker, is_deleted, members
from noon.core.compaction import droppable, stale_after_refetch
from noon.core.hlc import Clock
from noon.core.ops import Key, Op, OpId, decode, encode
from tests.harness.fold import Fold

KEYS: list[Key] = [
    ("content", "d", "m1"),
    ("content", "d", "m2"),
    ("keyword", "d", "k", "m1"),
    ("boot", "d", "m3"),
]
WALL = 1_700_000_000_000


@dataclass
class Node:
    name: str
    skew: int
    ops: dict[OpId, Op] = field(default_factory=dict)
    cursor: dict[str, int] = field(default_factory=dict)
    """Per author, the highest seq ever received (a prefix: pulls are by cursor)."""
    peers: dict[str, dict[str, int]] = field(default_factory=dict)
    """Last frontier each peer reported (persisted: survives crashes)."""
    seq: int = 0
    clock: Clock = field(default_factory=Clock)
    dropped: set[OpId] = field(default_factory=set)
    collected: dict[Key, Op] = field(default_factory=dict)
    """Elements this node collected, with the tombstone that was dropped."""
    superseded: set[OpId] = field(default_factory=set)
    """Every op some op held here ever named: a version replaced, by an edit or a delete."""

    def fold(self) -> Fold:
        f = Fold()
        f.apply_all(self.ops.values())
        return f

    def receive(self, op: Op, wall: int) -> None:
        assert op.id not in self.dropped, f"{self.name} got back {op.id}, which it collected"
        self.clock.observe(op.hlc, wall + self.skew)
        self.ops[op.id] = op
        self.superseded.update(op.prev or ())
        self.cursor[op.node] = max(self.cursor.get(op.node, 0), op.seq)


@dataclass
class World:
    nodes: list[Node]
    departed: set[str] = field(default_factory=set)
    wall: int = WALL

    def live(self) -> list[Node]:
        return [n for n in self.nodes if n.name not in self.departed]

    def write(self, n: Node, key: Key, delete: bool, step: int) -> None:
        self.wall += step
        f = n.fold()
        el = f.elements.get(key)
        prev = tuple(sorted(el.heads)) if el is not None else None
        val = {"text": f"{n.name}{n.seq}"} if key[0] == "content" else {}
        n.seq += 1
        op = decode(
            encode(
                node=n.name,
                seq=n.seq,
                hlc=n.clock.tick(self.wall + n.skew),
                el=key,
                val=None if delete else val,
                prev=prev,
            )
        )
        n.receive(op, self.wall)

    def pull(self, a: Node, b: Node, only: str | None = None) -> None:
        """a pulls from b by seq cursor, then learns b's frontier. With ``only``, the exchange
        broke off after one author's shard: a moved that cursor but learned nothing else.
        When b's copy skips seqs just above a's cursor (b compacted them), a takes b's whole
        copy of that shard instead, as noond does (``replica.replace``)."""
        authors = {op.node for op in b.ops.values()} | set(b.cursor)
        for author in sorted(authors):
            if only is not None and author != only:
                continue
            theirs = sorted((o for o in b.ops.values() if o.node == author), key=lambda o: o.seq)
            after = a.cursor.get(author, 0)
            fresh = [o for o in theirs if o.seq > after]
            if after and fresh and fresh[0].seq != after + 1:
                self.refetch(a, author, theirs)
                continue
            for op in fresh:
                if op.id not in a.dropped:
                    a.receive(op, self.wall)
        for author, seq in b.cursor.items():
            if only is None or author == only:
                a.cursor[author] = max(a.cursor.get(author, 0), seq)
        if only is None:
            a.peers[b.name] = dict(b.cursor)

    def refetch(self, a: Node, author: str, theirs: list[Op]) -> None:
        head = a.cursor.get(author, 0)
        held = {op.id for op in theirs}
        for op in theirs:
            if op.seq > head and op.id not in a.dropped:
                a.receive(op, self.wall)
        missing = [o for o in a.ops.values() if o.node == author and o.id not in held]
        gone = {o.id for o in missing}
        keys = {o.el for o in missing}
        others = [o for o in a.ops.values() if o.el in keys and o.id not in gone]
        for stale in stale_after_refetch(missing, others):
            del a.ops[stale]
            a.dropped.add(stale)

    def collect(self, n: Node, excused: frozenset[str] = frozenset()) -> None:
        """``excused``: members that never reported to ``n`` for longer than the retention
        window: they no longer count (PROTOCOL.md §11.1)."""
        f = n.fold()
        by_key: dict[Key, list[Op]] = {}
        for op in n.ops.values():
            by_key.setdefault(op.el, []).append(op)
        # Membership is complete here: every node is a configured peer that answers in the end.
        who = members([x.name for x in self.nodes], n.cursor, self.departed | excused, n.name)
        reports = {m: n.peers.get(m) for m in who}
        for key, ops in by_key.items():
            if not is_deleted(ops):
                continue
            if blocker(ops, n.cursor, reports) is None:
                n.collected[key] = f.elements[key].winner
                for o in ops:
                    del n.ops[o.id]
                    n.dropped.add(o.id)

    def compact(self, n: Node) -> None:
        groups: dict[Key, list[Op]] = {}
        for op in n.ops.values():
            groups.setdefault(op.el, []).append(op)
        last: dict[str, int] = {}
        for op in n.ops.values():
            last[op.node] = max(last.get(op.node, 0), op.seq)
        drops = droppable(groups, lambda o: o.seq != last[o.node], 0, n.cursor)
        before = summary_of(n)
        for d in drops:
            del n.ops[d]
        assert summary_of(n) == before, "compaction changed the fold"

    def check(self) -> None:
        """A version once replaced here (by an edit or a delete) never shows again here."""
        for n in self.live():
            for key, el in n.fold().elements.items():
                back = [h for h in el.heads if h in n.superseded]
                assert not back, (n.name, key, back, "came back")


def summary_of(n: Node) -> dict[Key, tuple[OpId, tuple[OpId, ...]]]:
    return {k: (e.winner.id, tuple(sorted(e.heads))) for k, e in n.fold().elements.items()}


def visible(n: Node) -> dict[Key, tuple[OpId, ...]]:
    """What reads show: the live versions of every live element. (A delete that lost to a
    concurrent write may still be noted beside it on a replica that has not collected it.)"""
    out = {}
    for key, el in n.fold().elements.items():
        if not el.deleted:
            out[key] = tuple(sorted(i for i, h in el.heads.items() if h.val is not None))
    return out


action = st.one_of(
    st.tuples(
        st.just("write"), st.integers(0, 3), st.integers(0, 3), st.booleans(), st.integers(0, 30)
    ),
    st.tuples(
        st.just("write"), st.integers(0, 3), st.integers(0, 3), st.just(True), st.integers(0, 30)
    ),
    st.tuples(st.just("pull"), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("lost"), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("partial"), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("collect"), st.integers(0, 3)),
    st.tuples(st.just("compact"), st.integers(0, 3)),
    st.tuples(st.just("crash"), st.integers(0, 3)),
    st.tuples(st.just("depart"), st.integers(0, 3)),
)


def play(actions, skews, silent: tuple[str, str] | None = None) -> World:
    """``silent`` = (listener, member): ``member`` never reports to ``listener`` (the listener
    never pulls from it, it gets its ops through others), and the listener collects without
    it, as once it has been silent past the retention window."""
    world = World([Node(f"n{i}", s) for i, s in enumerate(skews)])
    for act in actions:
        live = world.live()
        if len(live) < 2:
            break
        kind = act[0]
        if kind == "write":
            world.write(live[act[1] % len(live)], KEYS[act[2]], act[3], act[4])
        elif kind == "pull":
            a, b = live[act[1] % len(live)], live[act[2] % len(live)]
            if a is not b and (a.name, b.name) != silent:
                world.pull(a, b)
        elif kind == "partial":
            a, b = live[act[1] % len(live)], live[act[2] % len(live)]
            if a is not b and (a.name, b.name) != silent:
                world.pull(a, b, only=f"n{act[3] % len(world.nodes)}")
        elif kind == "collect":
            n = live[act[1] % len(live)]
            excused = frozenset({silent[1]}) if silent and n.name == silent[0] else frozenset()
            world.collect(n, excused)
        elif kind == "compact":
            world.compact(live[act[1] % len(live)])
        elif kind == "crash":
            n = live[act[1] % len(live)]
            n.clock = Clock(last=max((o.hlc for o in n.ops.values()), default=0))
        elif kind == "depart" and len(live) > 2 and not silent:
            world.departed.add(live[act[1] % len(live)].name)
        # "lost": the exchange never happened.
        world.check()
    return world


def heal(world: World) -> None:
    for _ in range(3):
        for a in world.live():
            for b in world.live():
                if a is not b:
                    world.pull(a, b)
        for n in world.live():
            world.compact(n)
            world.collect(n)
        world.check()


EXAMPLES = int(os.environ.get("NOON_MODEL_EXAMPLES", "150"))


@settings(max_examples=EXAMPLES)
@given(
    st.lists(action, max_size=80), st.lists(st.integers(-90_000, 90_000), min_size=3, max_size=4)
)
def test_collection_never_resurrects_and_finally_collects_everything(actions, skews):
    world = play(actions, skews)
    heal(world)
    live = world.live()
    views = [visible(n) for n in live]
    assert all(v == views[0] for v in views), "replicas disagree after healing"
    for n in live:
        by_key: dict[Key, list[Op]] = {}
        for op in n.ops.values():
            by_key.setdefault(op.el, []).append(op)
        for key, ops in by_key.items():
            assert not is_deleted(ops), (n.name, key)


@settings(max_examples=EXAMPLES)
@given(
    st.lists(action, max_size=80), st.lists(st.integers(-90_000, 90_000), min_size=3, max_size=3)
)
def test_a_member_that_never_reports_holds_nothing_back_for_ever(actions, skews):
    """n2 never reports to n0, which collects without it (its retention window passed): no
    version replaced on n0 or anywhere shows again; once n2 reports again and everyone has
    exchanged, the replicas agree and every delete is collected."""
    world = play(actions, skews, silent=("n0", "n2"))
    heal(world)
    live = world.live()
    views = [visible(n) for n in live]
    assert all(v == views[0] for v in views), "replicas disagree after healing"


def test_an_away_member_blocks_only_what_it_saw():
    world = World([Node("a", 0), Node("b", 0), Node("c", 0)])
    a, b, c = world.nodes
    world.write(a, KEYS[0], False, 1)  # m1 exists before c goes away
    for x in (a, b, c):
        for y in (a, b, c):
            if x is not y:
                world.pull(x, y)
    # c is away from now on; a and b delete m1 and create + delete m2.
    world.write(a, KEYS[0], True, 1)
    world.write(b, KEYS[1], False, 1)
    world.write(b, KEYS[1], True, 1)
    world.pull(a, b)
    world.pull(b, a)
    world.collect(a)
    assert KEYS[1] in a.collected and KEYS[0] not in a.collected
    # c comes back: once everyone has heard everyone, m1 goes too, and nothing comes back.
    for _ in range(2):
        for x in (a, b, c):
            for y in (a, b, c):
                if x is not y:
                    world.pull(x, y)
    for x in (a, b, c):
        world.collect(x)
    world.check()
    assert all(KEYS[0] in x.collected or KEYS[0] not in x.fold().elements for x in (a, b, c))


def test_a_candidate_that_never_answered_blocks_nothing():
    # Members come from admitted peers and authors held; a gossiped name is neither.
    assert members(admitted=["b"], authors=["a", "b", "a-import"], excluded=[], self_id="a") == {
        "b"
    }
    key = ("boot", "d", "x")
    put = decode(encode(node="a", seq=1, hlc=1, el=key, val={}))
    delete = decode(encode(node="a", seq=2, hlc=2, el=key, val=None, prev=(("a", 1),)))
    both = [put, delete]
    assert is_deleted(both)
    assert blocker(both, {"a": 2}, {"b": {"a": 2}}) is None
    assert blocker(both, {"a": 2}, {"b": None}) is not None
    assert blocker(both, {"a": 2}, {"b": {"a": 1}}) is not None
    # Here a:1 was compacted away: b, holding it but not the delete, must block.
    assert blocker([delete], {"a": 2}, {"b": {"a": 1}}) is not None
    assert blocker([delete], {"a": 1}, {"b": {}}) is not None  # a:1 is not even here yet
    assert blocker(both, {"a": 2}, {"b": {}}) is None  # b never saw the element
    assert blocker(both, {"a": 2}, {"b": {"a": 3}}) is not None  # b is ahead of us
