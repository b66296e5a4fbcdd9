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

Here: one element's state (:class:`Element`) and the winner rule. The machine's read model
applies them (:mod:`noon.store.readmodel.apply`); the whole fold held in memory, which the tests
hold the read model to, is the test kit's (``tests/harness/fold.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from noon.core.ops import Op, OpId
from noon.errors import NoonError


class ForkError(NoonError):
    """Two different ops share one identity."""

    def __init__(self, node: str, seq: int) -> None:
        super().__init__(f"two different operations share the identity {node}:{seq}")
        self.node = node
        self.seq = seq


def order(op: Op) -> tuple[int, str, int]:
    return (op.hlc, op.node, op.seq)


def pick_winner(heads: Iterable[Op]) -> Op:
    """The greatest live head, or the greatest head when all are tombstones."""
    heads = list(heads)
    live = [h for h in heads if h.val is not None]
    return max(live or heads, key=order)


class Folded:
    """What a folded element answers from its winner and heads, wherever it is held (here, or
    in the read model)."""

    __slots__ = ()
    winner: Op
    heads: Mapping[OpId, Op]

    @property
    def deleted(self) -> bool:
        return self.winner.val is None

    @property
    def conflicted(self) -> bool:
        return len(self.heads) > 1


class Element(Folded):
    """The folded state of one element key."""

    __slots__ = ("heads", "named", "versions", "winner")

    def __init__(self, op: Op) -> None:
        self.winner = op
        self.heads: dict[OpId, Op] = {op.id: op}
        self.named: set[OpId] = set(op.prev or ())
        self.versions: list[Op] = [op]
        if op.id in self.named:  # names itself: a hostile cycle
            self._recompute()

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
