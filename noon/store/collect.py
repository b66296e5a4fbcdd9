"""Tombstone collection on disk: physically remove deleted elements that no member can bring
back (the rule is :mod:`noon.core.collection`).

Removal is crash-safe without a journal: it runs in passes, and each pass drops only ops that
name nothing still held. Such an op is never the last thing keeping an older version from being
a head, so a crash between two shard renames (or two passes) leaves a state whose fold shows
exactly what it showed before: the element stays deleted, with part of its history gone. The
tombstones themselves are the last to go.

The last op of an author in a shard is never removed (it keeps the seq high-water mark the
writer recovers from); an element that holds one stays, deleted, until that op is no longer
last.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from noon.core.collection import Blocker, Frontier, blocker, is_deleted, members
from noon.core.ops import Key, Op, OpId
from noon.store import cut, forgotten
from noon.store.compact import _scan, in_scope, maintenance, rewrite, scan_dir


@dataclass
class CollectReport:
    collected: int = 0
    """Deleted elements whose every op was removed."""
    removed_ops: int = 0
    kept: list[tuple[Key, Blocker]] = field(default_factory=list)
    """Deleted elements kept, each with the first reason."""
    members: set[str] = field(default_factory=set)
    """The members whose knowledge gated this collection."""
    passes: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


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
        found = scan_dir(directory)
        report.bytes_before = sum((directory / n).stat().st_size for n in found.scans)
        who = members(admitted, found.arrived, excluded, self_id)
        gate = {m: reports.get(m) for m in who}
        report.members = who
        wanted: set[OpId] = set()
        gone: list[Key] = []
        for key, ops in found.groups.items():
            if not is_deleted(ops):
                continue
            why = blocker(ops, found.arrived, gate, retired, away)
            if why is not None:
                report.kept.append((key, why))
                continue
            wanted.update(op.id for op in ops)
            gone.append(key)
        pinned = set()
        for lines, _, _ in found.scans.values():
            ids = {op.id for _, op in lines if op is not None}
            pinned |= ids - in_scope(lines)
        held: dict[OpId, Op] = {op.id: op for ops in found.groups.values() for op in ops}
        remaining = wanted - pinned
        scans = dict(found.scans)
        if remaining:
            forgotten.record(directory, gone, found.arrived)  # before anything goes
        with cut.exclusive(directory):  # readers see all passes or none
            while remaining:
                leaves = {
                    i for i in remaining if not any(p in held for p in (held[i].prev or ()))
                }
                if not leaves:
                    break
                for name, scan in list(scans.items()):
                    if any(op is not None and op.id in leaves for _, op in scan[0]):
                        if not rewrite(directory / name, scan, leaves).done:
                            return _finish(report, directory, scans)
                        scans[name] = _scan(directory / name)
                for i in leaves:
                    del held[i]
                remaining -= leaves
                report.removed_ops += len(leaves)
                report.passes += 1
        left = wanted & set(held)
        report.collected = sum(
            1 for ops in found.groups.values()
            if is_deleted(ops) and ops and all(op.id not in left for op in ops)
            and all(op.id in wanted for op in ops)
        )
        return _finish(report, directory, scans)


def _finish(report: CollectReport, directory: Path, scans: Mapping[str, object]) -> CollectReport:
    report.bytes_after = sum((directory / n).stat().st_size for n in scans)
    return report
