"""The daemon's side of tombstone collection: keep every member's last report, retire members
gone too long, and run :func:`noon.store.collect.collect_dir` after each round.

Reports are what a member said it holds (its shard heads) when it last answered; they are
saved in the state file so a restart does not forget what an away member saw. A member away
longer than ``NOOND_FORGET_AFTER`` is retired: its frontier is merged into the retired one,
which blocks every element it covers at all, so forgetting it never unblocks anything.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noon.core.collection import retire
from noon.names import shard_node
from noon.store import peerstate
from noon.store.collect import CollectReport, collect_dir
from noond.membership import Member
from noond.metrics import Metrics

log = logging.getLogger("noond.collection")


@dataclass
class Collector:
    dir: Path
    node: str
    state_path: Path
    forget_after: float
    metrics: Metrics
    collect_unseen: bool = False
    last: CollectReport | None = None
    kept_since: dict[str, float] = field(default_factory=dict)
    """Per blocking member, since when it has kept something (for `noon compact` and logs)."""
    _last_inputs: tuple[object, ...] | None = field(default=None, repr=False)
    """What the last collection ran on (shard file identities and its arguments)."""

    def run(self, members: Iterable[Member], excluded: set[str]) -> CollectReport:
        """Record fresh reports, retire long-gone members, collect. Blocking I/O: run it in a
        thread."""
        now = time.time()
        members = [m for m in members if m.node not in excluded]
        fresh = {
            m.node: peerstate.Report(dict(m.heads), m.reported_at)
            for m in members
            if m.reported_at is not None
        }
        retiring: set[str] = set()

        def change(state: peerstate.PeerState) -> None:
            state.reports.update(fresh)
            state.forgotten -= set(fresh)
            for node, rep in list(state.reports.items()):
                if node in excluded:
                    del state.reports[node]
                elif now - rep.at > self.forget_after:
                    state.retired = retire(state.retired, rep.frontier)
                    del state.reports[node]
                    state.forgotten.add(node)
                    retiring.add(node)

        state = peerstate.update(self.state_path, change)
        for node in sorted(retiring):
            log.warning(
                "member %s silent for over %.0f days: retired into the retired frontier",
                node,
                self.forget_after / 86400,
            )
        retiring = state.forgotten
        # Every node that ever proved its identity gates collection, also one this daemon has
        # not reached since it started: it may hold old versions it would show again.
        admitted = ({m.node for m in members} | set(state.members) | set(state.reports)) - (
            retiring | excluded
        )
        alive = {m.node for m in members if m.state == "alive"}
        args: dict[str, Any] = {
            "reports": {n: dict(r.frontier) for n, r in state.reports.items()},
            "admitted": admitted,
            "excluded": excluded | retiring,
            "retired": dict(state.retired) if state.retired else None,
            "away": admitted - alive if self.collect_unseen else set(),
        }
        inputs = (shard_identities(self.dir), _canonical(args))
        if self.last is not None and inputs == self._last_inputs:
            # Same files, same gate: collect_dir would find exactly what it found last time.
            # Skipping it keeps an idle daemon from decoding its whole store every round.
            self._gauges(self.last, members, now, state)
            return self.last
        report = collect_dir(self.dir, self_id=self.node, **args)
        self._last_inputs = inputs
        self._account(report, members, now, state)
        return report

    def _account(
        self,
        report: CollectReport,
        members: list[Member],
        now: float,
        state: peerstate.PeerState,
    ) -> None:
        self.last = report
        self.metrics.collected.inc(report.collected)
        self.metrics.collected_ops.inc(report.removed_ops)
        self._gauges(report, members, now, state)
        if report.collected:
            log.info(
                "collected %d deleted elements (%d ops, %d -> %d bytes)",
                report.collected,
                report.removed_ops,
                report.bytes_before,
                report.bytes_after,
            )

    def _gauges(
        self,
        report: CollectReport,
        members: list[Member],
        now: float,
        state: peerstate.PeerState,
    ) -> None:
        m = self.metrics
        m.frozen.set(len(report.kept))
        m.retained.set(len(report.members))
        blocking = {b.member for _, b in report.kept}
        self.kept_since = {n: self.kept_since.get(n, now) for n in blocking}
        absent = {mm.node: mm for mm in members if mm.state != "alive"}
        m.absent.set(len(absent))
        m.absent_seconds.clear()
        for node, mm in absent.items():
            since = mm.last_ok or (state.reports[node].at if node in state.reports else now)
            m.absent_seconds.labels(node).set(max(0.0, now - since))

    def status(self) -> dict[str, object]:
        r = self.last
        if r is None:
            return {"ran": False}
        return {
            "ran": True,
            "collected": r.collected,
            "removed_ops": r.removed_ops,
            "frozen": len(r.kept),
            "kept": [
                {
                    "element": list(k),
                    "member": b.member,
                    "reason": b.reason,
                    "since": self.kept_since.get(b.member),
                }
                for k, b in r.kept[:100]
            ],
        }


def shard_identities(directory: Path) -> tuple[tuple[str, int, int, int], ...]:
    """(name, inode, size, mtime) of every shard file: any append or rewrite changes it."""
    out = []
    for name in sorted(os.listdir(directory)):
        if shard_node(name) is None:
            continue
        try:
            st = os.stat(directory / name)
        except FileNotFoundError:
            continue
        out.append((name, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


def _canonical(value: object) -> object:
    """A comparable, order-independent form of collect_dir's arguments."""
    if isinstance(value, dict):
        return tuple(sorted((k, _canonical(v)) for k, v in value.items()))
    if isinstance(value, set | frozenset):
        return tuple(sorted(value))
    return value
