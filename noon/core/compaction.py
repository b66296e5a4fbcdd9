"""Which ops a compaction may drop without changing any read.

An op may be dropped only when it is *causally superseded* and outside the history budget:
- on a plain element, any op that is not the winner (a later op on the key replaced it);
- on a register, a version some other op names in ``prev``, older than the ``history`` newest
  superseded versions, and only when dropping it leaves every remaining op exactly as named as
  before (so no old version can reappear as a head).

Never dropped: winners, heads, tombstones (collecting those is the daemon's job), ops of kinds
this version does not know, and ops the caller puts out of scope (another shard's, or the last op
of a shard, which keeps the author's seq high-water mark and batch boundaries readable).

Because the decision uses only the ops themselves, every replica can compact its copies and
the fold of what remains equals the fold of what was there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from noon.core.elements import is_register
from noon.core.ops import Key, Op, OpId


def _order(op: Op) -> tuple[int, str, int]:
    return (op.hlc, op.node, op.seq)


def droppable(
    groups: Mapping[Key, Sequence[Op]],
    in_scope: Callable[[Op], bool],
    history: int,
) -> set[OpId]:
    """Ids of the ops that may be dropped. ``groups`` holds every known op, by element key."""
    drops: set[OpId] = set()
    for key, ops in groups.items():
        if len(ops) < 2:
            continue
        if not is_register(key):
            winner = max(ops, key=_order)
            drops.update(
                op.id for op in ops if op is not winner and op.val is not None and in_scope(op)
            )
            continue
        drops.update(_register_drops(ops, in_scope, history))
    return drops


def _register_drops(
    ops: Sequence[Op], in_scope: Callable[[Op], bool], history: int
) -> list[OpId]:
    present = {op.id for op in ops}
    namers: Counter[OpId] = Counter()
    for op in ops:
        namers.update(set(op.prev or ()))
    if all(namers[op.id] for op in ops):
        return []  # a prev cycle: keep everything, the fold has a special rule for it
    superseded = sorted((op for op in ops if namers[op.id] and op.val is not None), key=_order)
    if history > 0:
        superseded = superseded[:-history]
    dropped: list[OpId] = []
    # Oldest first, so a chain of versions unravels from its tail.
    for op in superseded:
        if not in_scope(op):
            continue
        named = set(op.prev or ()) & present
        if any(namers[p] == 1 for p in named):
            continue  # it is the only op naming a remaining version: keep it
        for p in named:
            namers[p] -= 1
        present.discard(op.id)
        dropped.append(op.id)
    return dropped
