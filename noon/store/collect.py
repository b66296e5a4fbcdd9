"""Tombstone collection on disk: physically remove deleted elements that no member can bring
back (the rule is :mod:`noon.core.collection`).

Removal is one rename per shard, made safe by a journal (:mod:`noon.store.cut`): the ids of the
ops about to go are written first, every reader leaves them out while the journal exists, and
the journal goes once every shard is rewritten. A crash between two renames leaves the journal,
and the next collection finishes that removal before planning anything new.

The last op of an author in a shard is never removed (it keeps the seq high-water mark the
writer recovers from): an element that holds one stays whole, deleted, until that op is no
longer last. So every removal is of whole elements, which is what the ledger records.

Before anything goes, the keys of the elements removed whole and the frontier seen are recorded
(:mod:`noon.store.forgotten`), so a shard damaged later and pulled again never brings them back.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path

from noon.core.collection import Blocker, Frontier, blocker, is_deleted, members, removable
from noon.core.ops import Key, Op, OpId
from noon.store import cut, forgotten
from noon.store.compact import Scan, in_scope, maintenance, rewrite, scan_dir
from noon.store.lines import Envelope, last_complete
from noon.store.peerstate import PeerState


@dataclass
class CollectReport:
    collected: int = 0
    """Deleted elements whose every op was removed."""
    removed_ops: int = 0
    kept: list[tuple[Key, Blocker]] = field(default_factory=list)
    """Deleted elements kept, each with the first reason."""
    members: set[str] = field(default_factory=set)
    """The members whose knowledge gated this collection."""
    bytes_before: int = 0
    bytes_after: int = 0


@dataclass(frozen=True)
class Gate:
    """Who may hold a collection back, and with what they reported (PROTOCOL.md §11.1): what
    the daemon and ``noon compact`` both hand to :func:`collect_dir`."""

    reports: dict[str, dict[str, int]]
    admitted: frozenset[str]
    excluded: frozenset[str]
    retired: dict[str, int] | None
    away: frozenset[str]

    def collect(self, directory: Path, self_id: str) -> CollectReport:
        return collect_dir(
            directory,
            self_id=self_id,
            reports=self.reports,
            admitted=self.admitted,
            excluded=self.excluded,
            retired=self.retired,
            away=self.away,
        )


def gate_of(
    state: PeerState,
    *,
    known: Iterable[str] = (),
    excluded: Iterable[str] = (),
    alive: Iterable[str] | None = None,
) -> Gate:
    """The gate from the daemon's state file. ``known``: the members a running daemon holds
    (also those not saved yet); ``excluded``: revoked and departed nodes besides the file's;
    ``alive``: the members answering now, given only when an away member that never saw an
    element may be passed over (``NOOND_COLLECT_UNSEEN``).

    Every node that ever proved its identity counts, also one not reached since the daemon
    started: it may hold old versions it would show again. Retired members count only
    through the retired frontier."""
    out = frozenset(set(excluded) | state.revoked | state.departed | state.forgotten)
    admitted = frozenset((set(known) | set(state.members) | set(state.reports)) - out)
    return Gate(
        reports={node: dict(r.frontier) for node, r in state.reports.items()},
        admitted=admitted,
        excluded=out,
        retired=dict(state.retired) or None,
        away=admitted - set(alive) if alive is not None else frozenset(),
    )


def collect_dir(
    directory: Path,
    *,
    self_id: str,
    reports: Mapping[str, Frontier | None],
    admitted: Iterable[str] = (),
    excluded: Iterable[str] = (),
    retired: Frontier | None = None,
    away: Collection[str] | None = None,
) -> CollectReport:
    """Remove every deleted element the rule allows. ``reports`` holds the last frontier each
    peer reported (None or absent: never reported); ``away`` the members not answering now."""
    report = CollectReport()
    with maintenance(directory):
        finish_pending(directory)
        found = scan_dir(directory)
        report.bytes_before = sum((directory / n).stat().st_size for n in found.scans)
        who = members(admitted, found.arrived, excluded, self_id)
        gate = {m: reports.get(m) for m in who}
        report.members = who
        pinned = set()
        for lines, _, _ in found.scans.values():
            ids = {line.op.id for line in lines if line.op is not None}
            pinned |= ids - in_scope(lines)
        wanted: set[OpId] = set()
        gone: list[Key] = []
        for key, ops in found.groups.items():
            if not is_deleted(ops):
                continue
            why = blocker(ops, found.arrived, gate, retired, away) or _last_op(ops, pinned)
            if why is not None:
                report.kept.append((key, why))
                continue
            wanted.update(op.id for op in ops)
            gone.append(key)
        held: dict[OpId, Op] = {op.id: op for ops in found.groups.values() for op in ops}
        going = removable(wanted, held)
        whole = [k for k in gone if all(op.id in going for op in found.groups[k])]
        report.collected = len(whole)
        if going:
            forgotten.record(directory, whole, complete_heads(found.scans))
            report.removed_ops = len(going)
            _remove(directory, found.scans, going)
        return _finish(report, directory, found.scans)


def _last_op(ops: Iterable[Op], pinned: set[OpId]) -> Blocker | None:
    """An element holding an author's last op here waits, whole, until that author writes
    again: the op keeps the seq high-water mark, and removing only the element's older part
    could not be recorded as safely as a whole element (:mod:`noon.store.forgotten`)."""
    for op in ops:
        if op.id in pinned:
            return Blocker(
                op.node,
                f"holds {op.node}'s last op here ({op.node}:{op.seq}); it "
                f"goes once {op.node} writes again",
            )
    return None


def complete_heads(scans: Mapping[str, Scan]) -> dict[str, int]:
    """Per author, the highest seq whose batch is complete: what this node durably holds (an
    unfinished batch at the end of a shard, a writer's crash, is truncated by its next write,
    so it never counts as held)."""
    heads: dict[str, int] = {}
    for lines, _, _ in scans.values():
        last = last_complete(
            (op, Envelope(op.node, op.seq, op.bat) if op is not None else None)
            for op, *_ in reversed(lines)
        ).last
        if last is not None:
            heads[last.node] = max(heads.get(last.node, 0), last.seq)
    return heads


def finish_pending(directory: Path) -> None:
    """Finish the removal of a collection that crashed between renames (call under the
    maintenance lock)."""
    going = cut.pending(directory)
    if going:
        _remove(directory, scan_dir(directory).scans, going)


def _remove(directory: Path, scans: Mapping[str, Scan], going: Set[OpId]) -> None:
    """Journal ``going``, rewrite every shard holding some of it, close the journal. When a
    rewrite cannot be done the journal stays: readers keep leaving those ops out, and the next
    collection finishes."""
    cut.begin(directory, going)
    for name, scan in scans.items():
        holds = any(line.op is not None and line.op.id in going for line in scan[0])
        if holds and not rewrite(directory / name, scan, going).done:
            return
    cut.end(directory)


def _finish(report: CollectReport, directory: Path, scans: Mapping[str, object]) -> CollectReport:
    report.bytes_after = sum((directory / n).stat().st_size for n in scans)
    return report
