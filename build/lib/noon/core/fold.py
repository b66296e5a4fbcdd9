"""The fold: every element's current state, built incrementally from ops in any order.

The state is a pure function of the *set* of ops applied, whatever their order and however often
each is applied (idempotent, commutative, associative). Two replicas that applied the same set
hold equal states.

Every op names in ``prev`` the ops on its element that its writer held as current. The *heads*
of an element are its ops that no other op names: one head is the normal case, more mean
concurrent writes on different machines. The *winner*, what reads show, is the greatest live
head by ``(hlc, node, seq)``; only when every head is a tombstone is the element deleted.

So a delete removes exactly the versions its writer saw: an edit made concurrently on another
machine survives it (and the conflict view says a concurrent delete happened). Two consequences
the rest of noon relies on:
- a version a writer knowingly replaced can never win again, even when a clamped clock gave the
  replacement a smaller stamp;
- a write that did not see a delete is never hidden by it, so a replica that has physically
  collected the delete and one that still holds it show the same thing (see
  :mod:`noon.core.collection`).

Identity: two ops with the same ``(node, seq)`` must be byte-identical (a duplicate, ignored).
Different ones mean a forked shard (a restored backup, a reused node id); :class:`ForkError`
is raised and the op is not applied.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

from noon.core.ops import Key, Op, OpId
from noon.errors import NoonError

_DENSE_GAP = 1 << 16


class ForkError(NoonError):
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


def order(op: Op) -> tuple[int, str, int]:
    return (op.hlc, op.node, op.seq)


def pick_winner(heads: Iterable[Op]) -> Op:
    """The greatest live head, or the greatest head when all are tombstones."""
    heads = list(heads)
    live = [h for h in heads if h.val is not None]
    return max(live or heads, key=order)


class Element:
    """The folded state of one element key."""

    __slots__ = ("heads", "named", "versions", "winner")

    def __init__(self, op: Op) -> None:
        self.winner = op
        self.heads: dict[OpId, Op] = {op.id: op}
        self.named: set[OpId] = set(op.prev or ())
        self.versions: list[Op] = [op]
        if op.id in self.named:  # names itself: a hostile cycle
            self._recompute()

    @property
    def deleted(self) -> bool:
        return self.winner.val is None

    @property
    def conflicted(self) -> bool:
        return len(self.heads) > 1

    def add(self, op: Op) -> None:
        self.versions.append(op)
        if op.prev:
            self.named.update(op.prev)
            for p in op.prev:
                self.heads.pop(p, None)
        if op.id not in self.named:
            self.heads[op.id] = op
        if not self.heads or any(h in self.named for h in self.heads):
            self._recompute()
        else:
            self.winner = pick_winner(self.heads.values())

    def _recompute(self) -> None:
        """Heads from scratch. Without prev cycles they are the unnamed versions; a cycle (only a
        hostile or buggy writer makes one) can leave none, and then every version counts as a
        head, so the element stays readable and the result is still a function of the op set."""
        heads = {v.id: v for v in self.versions if v.id not in self.named}
        self.heads = heads or {v.id: v for v in self.versions}
        self.winner = pick_winner(self.heads.values())


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
            self.elements[op.el] = Element(op)
        else:
            el.add(op)
        return True

    def apply_all(self, ops: Iterable[Op]) -> set[Key]:
        """Apply ops; return the keys whose state changed."""
        changed: set[Key] = set()
        for op in ops:
            if self.apply(op) and op.known:
                changed.add(op.el)
        return changed
