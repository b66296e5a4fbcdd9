"""A pure simulation of several noon nodes exchanging ops, for property tests of the core."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from noon.core.hlc import Clock
from noon.core.ops import Key, Op, decode, encode
from noon.store.readmodel.state import FoldView
from tests.harness.fold import Fold

KEYS: list[Key] = [
    ("content", "default", "m1"),
    ("content", "default", "m2"),
    ("edge", "default", "@core", "a"),
    ("keyword", "default", "alpha", "m1"),
    ("boot", "default", "m2"),
]


def value_for(key: Key, n: int) -> dict[str, object]:
    if key[0] == "content":
        return {"text": f"v{n}"}
    if key[0] == "edge":
        return {"child": f"m{n % 2 + 1}", "priority": n % 3, "disclosure": ""}
    return {}


@dataclass
class SimNode:
    name: str
    skew_ms: int = 0
    clock: Clock = field(default_factory=Clock)
    fold: Fold = field(default_factory=Fold)
    ops: list[Op] = field(default_factory=list)

    def write(self, key: Key, delete: bool, n: int, wall_ms: int) -> Op:
        el = self.fold.elements.get(key)
        prev = tuple(sorted(el.heads)) if el else None
        line = encode(
            node=self.name,
            seq=len(self.ops) + 1,
            hlc=self.clock.tick(wall_ms + self.skew_ms),
            el=key,
            val=None if delete else value_for(key, n),
            prev=prev,
        )
        op = decode(line)
        self.fold.apply(op)
        self.ops.append(op)
        return op

    def receive(self, ops: list[Op], wall_ms: int) -> None:
        for op in ops:
            self.clock.observe(op.hlc, wall_ms + self.skew_ms)
            self.fold.apply(op)


def summary(fold: Fold | FoldView) -> dict[Key, tuple[object, object]]:
    """What a read can observe: per key the winner and the set of heads."""
    return {k: (e.winner.id, tuple(sorted(e.heads))) for k, e in fold.elements.items()}


def run(actions: list[tuple[int, ...]], skews: list[int]) -> list[SimNode]:
    """Actions: (0, node, key, delete, n, wall step) writes; (1, a, b) makes a learn b's ops."""
    nodes = [SimNode(f"n{i}", skew) for i, skew in enumerate(skews)]
    wall = 1_700_000_000_000
    for act in actions:
        if act[0] == 0:
            _, i, k, delete, n, step = act
            wall += step
            nodes[i % len(nodes)].write(KEYS[k % len(KEYS)], bool(delete), n, wall)
        else:
            _, a, b = act
            nodes[a % len(nodes)].receive(nodes[b % len(nodes)].ops, wall)
    return nodes


write = st.tuples(
    st.just(0),
    st.integers(0, 3),
    st.integers(0, len(KEYS) - 1),
    st.integers(0, 4).map(lambda x: int(x == 0)),
    st.integers(0, 99),
    st.integers(-5, 50),
)
sync = st.tuples(st.just(1), st.integers(0, 3), st.integers(0, 3))
actions = st.lists(st.one_of(write, write, sync), max_size=60)
skews = st.lists(st.integers(-120_000, 120_000), min_size=2, max_size=4)
