"""Which ops a compaction may drop without changing any read, now or later.

An op may be dropped only when it is *causally superseded* (another op on its element names it
in ``prev``) and outside the history budget (memory texts and placements keep their
``history`` newest superseded versions; other kinds keep none), and only when dropping it leaves
every op exactly as named as before: no older version can reappear as a head, neither one held
now nor one still on its way from another machine (an op it names that has not arrived yet,
which it alone would have superseded).

Never dropped: heads (so never a winner, a conflict or a tombstone), any op of a deleted element
(its whole history stays until collection removes it at once: the collection rule needs it to
tell a member that never saw the element from one that saw only part of it), ops of kinds this
version does not know, and ops the caller puts out of scope (another shard's, or the last op of an
author in a shard, which keeps the seq high-water mark and closes the last batch).

Because the decision uses only the ops themselves and the frontier of what has arrived, every
replica can compact its copies, and the fold of what remains equals the fold of what was there.

Across authors: an op that names a version written by another author is never dropped. Other
replicas may still hold that version (in the other author's shard, which this compaction does
not see the future of) without anything else naming it; had the op gone, the version would be a
head there forever (found by the fault suite, tests/faults/test_compaction_lag.py). Within one
author's shard the versions and their successors travel together: a replica that lags behind
a compaction sees a seq gap and takes the whole shard again (noon/store/replica.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from noon.core.elements import keeps_history
from noon.core.fold import order
from noon.core.ops import Key, Op, OpId

Frontier = Mapping[str, int]


def droppable(
    groups: Mapping[Key, Sequence[Op]],
    in_scope: Callable[[Op], bool],
    history: int,
    arrived: Frontier,
) -> set[OpId]:
    """Ids of the ops that may be dropped. ``groups`` holds every known op, by element key;
    ``arrived`` is the highest seq received per author (a seq at or below it will never arrive
    again; anything above may)."""
    drops: set[OpId] = set()
    for key, ops in groups.items():
        if len(ops) < 2:
            continue
        budget = history if keeps_history(key) else 0
        drops.update(_drops(ops, in_scope, budget, arrived))
    return drops


def _drops(
    ops: Sequence[Op], in_scope: Callable[[Op], bool], budget: int, arrived: Frontier
) -> list[OpId]:
    present = {op.id for op in ops}
    namers: Counter[OpId] = Counter()
    for op in ops:
        namers.update(set(op.prev or ()))
    heads = [op for op in ops if not namers[op.id]]
    if not heads or all(h.val is None for h in heads):
        return []  # a prev cycle (the fold has a rule for it), or a deleted element

    superseded = sorted((op for op in ops if namers[op.id]), key=order)
    if budget > 0:
        superseded = superseded[:-budget]
    dropped: list[OpId] = []
    # Oldest first, so a chain of versions unravels from its tail.
    for op in superseded:
        if not in_scope(op):
            continue
        names = set(op.prev or ())
        if any(n != op.node for n, _ in names):
            continue  # it supersedes another author's version: see "Across authors" above
        if any(arrived.get(n, 0) < s for n, s in names):
            continue  # it names an op still on its way: it must be here to supersede it
        if any(namers[p] == 1 for p in names & present):
            continue  # it is the only op naming a remaining version: keep it
        for p in names & present:
            namers[p] -= 1
        present.discard(op.id)
        dropped.append(op.id)
    return dropped


def stale_after_refetch(missing: Sequence[Op], others: Sequence[Op]) -> set[OpId]:
    """Which ops a replica drops when it takes a peer's newer copy of their shard that no
    longer holds them (``missing``); ``others`` is every other op the replica will hold on the
    same elements (the peer's copy and every other shard).

    A peer drops a version only once something supersedes it (compaction), or a whole deleted
    element at once (collection). Either way the ops that superseded a missing version may have
    gone with it, so a missing op named by nothing here is a stale head: keeping it shows a
    replaced version again on this replica only, forever. It goes, together with every missing
    op that only the ops going with it name. Such a group is dropped only when that exposes
    nothing else: if an op outside the group (another author's, say, under a tombstone this
    shard's author wrote) would be named by nothing once the group is gone, the whole group
    stays and this replica's own collection decides later, with every op of the element.
    Missing ops still named by an op that stays, stay too (dropping them changes no head and
    could expose what they name). So dropping never turns an op into a head; it only removes
    heads the peer's copy no longer has."""
    candidates = {op.id: op for op in missing}
    every = {op.id: op for op in others}
    every.update(candidates)
    namers: Counter[OpId] = Counter()
    for op in every.values():
        namers.update(p for p in set(op.prev or ()) if p in every)

    def group(start: Op) -> set[OpId] | None:
        taken = {start.id}
        todo = [start]
        counted: Counter[OpId] = Counter()
        while todo:
            op = todo.pop()
            for p in set(op.prev or ()):
                if p not in every:
                    continue
                counted[p] += 1
                if counted[p] < namers[p]:
                    continue  # something that stays still names it
                if p not in candidates:
                    return None  # dropping the group would expose an op that stays
                if p not in taken:
                    taken.add(p)
                    todo.append(every[p])
        return taken

    dropped: set[OpId] = set()
    for op_id in sorted(candidates):
        if op_id in dropped or namers[op_id]:
            continue
        taken = group(candidates[op_id])
        if taken is None:
            continue
        for gone in taken:
            for p in set(every.pop(gone).prev or ()):
                namers[p] -= 1
        dropped |= taken
    return dropped
