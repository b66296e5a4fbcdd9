"""The fold: a last-writer-wins element set with conflict heads, built incrementally.

The state is a pure function of the *set* of ops applied, whatever their order and however often
each is applied (idempotent, commutative, associative). Two replicas that applied the same set
hold equal states.

For every element key the state keeps the winner: the greatest op by ``(hlc, node, seq)``. A
tombstone is just a winning op without a value. Register elements (see
:mod:`noon.core.elements`) also keep their *heads*: ops on the key that no other op on the key
names in ``prev``. One head is the normal case; more mean concurrent versions. For a register
the winner is the greatest *head*, so a version a writer knowingly replaced can never win, even
when a clamped clock gave the replacement a smaller stamp.

Identity: two ops with the same ``(node, seq)`` must be byte-identical (a duplicate, ignored).
Different ones mean a forked shard (a restored backup, a reused node id); :class:`ForkError`
is raised and the op is not applied.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

from noon.core.elements import is_register
from noon.core.ops import Key, Op, OpId

_DENSE_GAP = 1 << 16


class ForkError(Exception):
    """Two different ops share one identity."""

    def __init__(self, node: str, seq: int) -> None:
        super().__init__(f"two different operations share the identity {node}:{seq}")
        self.node = node
        self.seq = seq


class SeqIndex:
    """Per-author map from seq to line digest, dense where seqs are dense (8 bytes per op)."""

    __slots__ = ("dense", "max_seq", "sparse")

    def __init__(self) -> None:
        self.dense = array("Q")
        self.sparse: dict[int, int] = {}
        self.max_seq = 0

    def get(self, seq: int) -> int:
        if seq <= len(self.dense):
            return self.dense[seq - 1]
        return self.sparse.get(seq, 0)

    def put(self, seq: int, digest: int) -> None:
        self.max_seq = max(self.max_seq, seq)
        n = len(self.dense)
        if seq <= n:
            self.dense[seq - 1] = digest
        elif seq <= n + _DENSE_GAP:
            self.dense.extend([0] * (seq - n - 1))
            self.dense.append(digest)
            # Pull any sparse entries the dense part now covers.
            for s in [s for s in self.sparse if s <= len(self.dense)]:
                self.dense[s - 1] = self.sparse.pop(s)
        else:
            self.sparse[seq] = digest


class Element:
    """The folded state of one element key."""

    __slots__ = ("heads", "named", "versions", "winner")

    def __init__(self, op: Op, register: bool) -> None:
        self.winner = op
        self.heads: dict[OpId, Op] | None = {op.id: op} if register else None
        self.named: set[OpId] | None = set() if register else None
        self.versions: list[Op] | None = [op] if register else None

    @property
    def deleted(self) -> bool:
        return self.winner.val is None

    @property
    def conflicted(self) -> bool:
        return self.heads is not None and len(self.heads) > 1


def _order(op: Op) -> tuple[int, str, int]:
    return (op.hlc, op.node, op.seq)


def _greater(a: Op, b: Op) -> bool:
    return _order(a) > _order(b)


def _recompute_heads(el: Element) -> None:
    """Heads from scratch. Without prev cycles they are the unnamed versions; a cycle (only a
    hostile or buggy writer makes one) can leave none, and then every version counts as a head,
    so the element stays readable and the result is still a function of the op set."""
    assert el.versions is not None and el.named is not None
    heads = {v.id: v for v in el.versions if v.id not in el.named}
    el.heads = heads or {v.id: v for v in el.versions}
    el.winner = max(el.heads.values(), key=_order)


class Fold:
    """Incremental fold state. Apply ops in any order; read ``elements``."""

    def __init__(self) -> None:
        self.elements: dict[Key, Element] = {}
        self.index: dict[str, SeqIndex] = {}
        self.applied = 0
        """Distinct ops applied, known or not."""
        self.skipped = 0
        """Distinct ops skipped by the fold because this version does not know them."""

    def max_seq(self, node: str) -> int:
        idx = self.index.get(node)
        return idx.max_seq if idx else 0

    def holds(self, node: str, seq: int) -> bool:
        idx = self.index.get(node)
        return bool(idx and idx.get(seq))

    def frontier(self) -> dict[str, int]:
        """Highest seq held per author."""
        return {node: idx.max_seq for node, idx in self.index.items()}

    def apply(self, op: Op) -> bool:
        """Apply one op. Returns False for a duplicate. Raises :class:`ForkError`."""
        idx = self.index.get(op.node)
        if idx is None:
            idx = self.index[op.node] = SeqIndex()
        seen = idx.get(op.seq)
        if seen:
            if seen != op.digest:
                raise ForkError(op.node, op.seq)
            return False
        idx.put(op.seq, op.digest)
        self.applied += 1
        if not op.known:
            self.skipped += 1
            return True
        el = self.elements.get(op.el)
        if el is None:
            el = self.elements[op.el] = Element(op, is_register(op.el))
            if el.named is not None and op.prev:
                el.named.update(op.prev)
                if op.id in el.named:  # names itself: a hostile cycle
                    _recompute_heads(el)
            return True
        if el.heads is None:
            if _greater(op, el.winner):
                el.winner = op
            return True
        assert el.named is not None and el.versions is not None
        el.versions.append(op)
        if op.prev:
            el.named.update(op.prev)
            for p in op.prev:
                el.heads.pop(p, None)
        if op.id not in el.named:
            el.heads[op.id] = op
        if not el.heads or any(h in el.named for h in el.heads):
            _recompute_heads(el)
        else:
            el.winner = max(el.heads.values(), key=_order)
        return True

    def apply_all(self, ops: Iterable[Op]) -> set[Key]:
        """Apply ops; return the keys whose state changed."""
        changed: set[Key] = set()
        for op in ops:
            if self.apply(op) and op.known:
                changed.add(op.el)
        return changed
