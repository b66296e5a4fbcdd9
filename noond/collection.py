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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from noon.core.collection import member_of, retire
from noon.daemon_link.bodies import MAX_KEPT, Collection, Kept
from noon.names import shard_node
from noon.store import peerstate
from noon.store.collect import CollectReport, gate_of
from noon.store.shard import list_shards
from noond.collect_worker import CollectionTimedOut, collect
from noond.membership import Member
from noond.metrics import Metrics

log = logging.getLogger("noond.collection")

BUSY_SHARE = 0.1
"""At most this share of the daemon's time goes to collecting: after a collection that took
``t`` seconds the next runs no sooner than ``t * (1 / BUSY_SHARE - 1)`` later. A collection reads
every shard in full, and while a member catches up its report changes every round: run after
each round, collections took over half of both daemons' CPU during a 100k-op catch-up and held
the next round back for a minute at a time."""


@dataclass
class Collector:
    dir: Path
    node: str
    state_path: Path
    forget_after: float
    metrics: Metrics
    collect_unseen: bool = False
    collect_timeout: float = 30.0
    """Seconds a collection apart may take per 8 MiB of shards (:mod:`noond.collect_worker`)."""
    clock: Callable[[], float] = time.time
    timer: Callable[[], float] = time.monotonic
    relayed: Callable[[], dict[str, peerstate.Report]] = dict
    """Frontier reports of members met through relays (PROTOCOL.md §14.5)."""
    last: CollectReport | None = None
    kept_since: dict[str, float] = field(default_factory=dict)
    """Per blocking member, since when it has kept something (for `noon compact` and logs)."""
    _last_inputs: tuple[object, ...] | None = field(default=None, repr=False)
    """What the last collection ran on (shard file identities and its arguments)."""
    _rested_at: float = field(default=0.0, repr=False)
    """When (:attr:`timer`) the next collection may run (:data:`BUSY_SHARE`)."""

    def run(self, members: Iterable[Member], excluded: set[str]) -> CollectReport:
        """Record fresh reports, retire long-gone members, collect. Blocking I/O: run it in a
        thread. Raises :class:`CollectionTimedOut` for a worker killed (counted, and retried
        once the time it took has rested, as after a collection)."""
        now = self.clock()
        members = [m for m in members if m.node not in excluded]
        fresh = {n: r for n, r in self.relayed().items() if n not in excluded}
        for m in members:
            if m.reported_at is not None and (
                m.node not in fresh or fresh[m.node].at < m.reported_at
            ):
                fresh[m.node] = peerstate.Report(dict(m.heads), m.reported_at)
        retiring: set[str] = set()
        unheard: set[str] = set()
        authors = {member_of(n) for n in map(shard_node, list_shards(self.dir)) if n is not None}

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
            counted = {m.node for m in members} | set(state.members) | authors
            counted -= excluded | state.forgotten | set(state.reports) | {self.node}
            for node in counted:
                state.silent.setdefault(node, now)
            for node, since in list(state.silent.items()):
                if node not in counted:
                    del state.silent[node]
                elif now - since > self.forget_after:
                    # Nothing is known of what it holds, so nothing joins the retired frontier.
                    del state.silent[node]
                    state.forgotten.add(node)
                    unheard.add(node)

        state = peerstate.update(self.state_path, change)
        for node in sorted(retiring):
            log.warning(
                "member %s silent for over %.0f days: retired into the retired frontier",
                node,
                self.forget_after / 86400,
            )
        for node in sorted(unheard):
            log.warning(
                "member %s never reported what it holds in %.0f days: it no longer holds back "
                "collection (a report from it brings it back)",
                node,
                self.forget_after / 86400,
            )
        alive = {m.node for m in members if m.state == "alive"}
        gate = gate_of(
            state,
            known={m.node for m in members},
            excluded=excluded,
            alive=alive if self.collect_unseen else None,
        )
        inputs = (shard_identities(self.dir), gate)
        if self.last is not None and (
            inputs == self._last_inputs or self.timer() < self._rested_at
        ):
            # Same files, same gate: collect_dir would find exactly what it found last time.
            # Skipping it keeps an idle daemon from decoding its whole store every round. Or
            # the last collection was too recent for its cost (BUSY_SHARE): the next round's.
            self._gauges(self.last, members, now, state)
            return self.last
        if self.timer() < self._rested_at:  # a worker was killed before any collection ended
            return CollectReport()
        started = self.timer()
        store_bytes = sum(size for _, _, size, _ in inputs[0])
        try:
            report = collect(self.dir, self.node, gate, store_bytes, self.collect_timeout)
        except CollectionTimedOut as exc:
            # Its time counts like a collection's (BUSY_SHARE), so a worker that is always
            # too slow takes no more of the daemon than a collection may.
            self._rest(started)
            self.metrics.collections_killed.inc()
            raise CollectionTimedOut(
                f"{exc}; the collection is retried in {self._rested_at - self.timer():.0f} s"
            ) from None
        self._last_inputs = inputs
        self._rest(started)
        self._account(report, members, now, state)
        return report

    def _rest(self, started: float) -> None:
        ended = self.timer()
        self._rested_at = ended + (ended - started) * (1 / BUSY_SHARE - 1)

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

    def status(self) -> Collection:
        r = self.last
        if r is None:
            return Collection()
        return Collection(
            ran=True,
            collected=r.collected,
            removed_ops=r.removed_ops,
            frozen=len(r.kept),
            kept=tuple(
                Kept(
                    element=tuple(k),
                    member=b.member,
                    reason=b.reason,
                    since=self.kept_since.get(b.member),
                )
                for k, b in r.kept[:MAX_KEPT]
            ),
        )


def shard_identities(directory: Path) -> tuple[tuple[str, int, int, int], ...]:
    """(name, inode, size, mtime) of every shard file: any append or rewrite changes it."""
    out = []
    for name in list_shards(directory):
        try:
            st = os.lstat(directory / name)
        except FileNotFoundError:
            continue
        out.append((name, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)
