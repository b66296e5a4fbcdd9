"""When a deleted element may be physically removed: the collection rule (PROTOCOL.md proves
it).

An element is *deleted* when every head is a tombstone (:mod:`noon.core.fold`). All its ops
may then be removed, here, when no member can still deliver one of them to us or to anyone who
would show it again. With ``F(M)`` the frontier (per-author highest seq held) member ``M`` last
reported and ``L`` this node's frontier, a deleted element ``e`` is collectable when:

0. every op the ops of ``e`` name has arrived here (``L`` covers it), so no older version of
   ``e`` can still arrive and stand as a head once the tombstones are gone; and, for every
   member ``M`` that counts:
1. ``M`` has reported (a member that never reported blocks everything),
2. ``F(M) <= L``: everything ``M`` reported holding is held here, so ``M`` holds no op on ``e``
   this decision has not seen, and
3. ``F(M)`` covers every op of ``e``'s history known here, held or named (``M`` holds this
   history, tombstones included, so it deletes ``e`` too and never sends the old versions on:
   replication moves by seq cursor and every cursor here is past them), or ``M`` is away, this
   history is complete here (every op named is held: compaction leaves deleted elements alone)
   and ``F(M)`` covers none of it (``M`` never saw ``e``).

Why rule 3's second case is safe: whatever ``M`` writes on ``e`` later names none of the
versions the tombstones replaced, so it is a new head on every replica, shown the same by a
replica that still holds the tombstones and by one that has collected them. That is also why
deletes remove only what their writer saw: an element is never "deleted over" a write that did
not see the delete.

Members that count: peers admitted by proving their identity, plus every author whose ops are
held here (an author is a writer whatever we know of it), minus departed and revoked nodes and
this node itself. An import shard ``<node>-import`` is written on ``<node>``'s machine and counts
as ``<node>``. A candidate that never answered is not a member and blocks nothing.

Long-gone members are retired into one frontier, the per-author maximum of theirs. A retired
frontier can no longer say who saw what, so it blocks every element it covers at all; elements
created after everybody retired in it left are still collected at once.

All functions here are pure: the daemon supplies the frontiers, this module decides.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from noon.core.ops import Op, OpId

Frontier = Mapping[str, int]

IMPORT_SUFFIX = "-import"


@dataclass(frozen=True)
class Blocker:
    """Why a deleted element is kept: which member, and what it lacks."""

    member: str
    reason: str

    def __str__(self) -> str:
        return f"{self.member}: {self.reason}"


def member_of(author: str) -> str:
    """The member answering for an author's ops (imports answer to their node)."""
    return author[: -len(IMPORT_SUFFIX)] if author.endswith(IMPORT_SUFFIX) else author


def members(
    admitted: Iterable[str], authors: Iterable[str], excluded: Iterable[str], self_id: str
) -> set[str]:
    """The members whose knowledge gates collection."""
    out = set(admitted) | {member_of(a) for a in authors}
    return out - set(excluded) - {self_id}


def within(frontier: Frontier, local: Frontier) -> bool:
    return all(seq <= local.get(author, 0) for author, seq in frontier.items())


def _covers(frontier: Frontier, op: OpId) -> bool:
    return frontier.get(op[0], 0) >= op[1]


def is_deleted(ops: Iterable[Op]) -> bool:
    """True when every head of the element is a tombstone."""
    ops = list(ops)
    named = {p for o in ops for p in (o.prev or ())}
    heads = [o for o in ops if o.id not in named]
    return bool(heads) and all(h.val is None for h in heads)


def blocker(
    ops: Iterable[Op],
    local: Frontier,
    reports: Mapping[str, Frontier | None],
    retired: Frontier | None = None,
    away: Collection[str] | None = None,
) -> Blocker | None:
    """None when the deleted element whose ops (every author's) are given may be collected;
    otherwise the first reason to keep it. ``away``: the members that may be excused for
    never having seen the element (None: all of them)."""
    ops = list(ops)
    for op in ops:
        for p in op.prev or ():
            if not _covers(local, p):
                return Blocker(p[0], f"an older version ({p[0]}:{p[1]}) has not arrived yet")
    held = {op.id for op in ops}
    named = {p for op in ops for p in (op.prev or ())}
    history = held | named
    complete = named <= held
    for member in sorted(reports):
        frontier = reports[member]
        if frontier is None:
            return Blocker(member, "never reported what it holds")
        if not within(frontier, local):
            return Blocker(member, "holds operations this node has not received yet")
        seen = [_covers(frontier, op) for op in history]
        if all(seen):
            continue
        if any(seen):
            return Blocker(member, "saw this element but not yet its latest operations")
        if not complete or (away is not None and member not in away):
            return Blocker(member, "has not received this element yet")
    if retired is not None and any(_covers(retired, op) for op in history):
        return Blocker("(retired peers)", "a peer gone for long may have seen this element")
    return None


def retire(retired: Frontier | None, frontier: Frontier) -> dict[str, int]:
    """Fold a long-gone member's frontier into the retired one (per-author maximum)."""
    merged = dict(retired or {})
    for author, seq in frontier.items():
        merged[author] = max(merged.get(author, 0), seq)
    return merged


def removable(candidates: Iterable[OpId], held: Mapping[OpId, Op]) -> set[OpId]:
    """Of ``candidates`` (every op of the elements to collect), the ones whose removal exposes
    nothing: repeatedly, those that name nothing still held. That is all of them, unless
    forged ops name each other in a cycle (the fold tolerates one); those stay."""
    remaining = set(candidates)
    present = set(held)
    out: set[OpId] = set()
    while True:
        leaves = {i for i in remaining if not any(p in present for p in held[i].prev or ())}
        if not leaves:
            return out
        out |= leaves
        present -= leaves
        remaining -= leaves
