"""When things happen: anti-entropy rounds (PROTOCOL.md §6), pushes shortly after the own shard
changes, admission probes as candidates fall due, discovery, and collection after each round.

Each member and each candidate runs in its own task and slot: one still busy from an earlier
round is skipped, and a round waits at most one request timeout for its exchanges, so a slow or
misbehaving peer delays only itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from noon.store.readmodel.behind import full
from noond import discovery, inotify
from noond.admission import Admission
from noond.collect_worker import CollectionTimedOut
from noond.collection import Collector
from noond.config import DaemonConfig
from noond.exchange import Exchanger
from noond.membership import Member, Membership
from noond.metrics import Metrics
from noond.statefile import StateFile

log = logging.getLogger("noond")


class Scheduler:
    def __init__(
        self,
        *,
        config: DaemonConfig,
        membership: Membership,
        state: StateFile,
        admission: Admission,
        exchanger: Exchanger,
        collector: Collector,
        metrics: Metrics,
        watched: dict[str, Path],
        after_round: Callable[[], None],
    ) -> None:
        self.config = config
        self.membership = membership
        self.state = state
        self.admission = admission
        self.exchanger = exchanger
        self.collector = collector
        self.metrics = metrics
        self.watched = watched
        """The shards written on this machine (own, import) by name: pushed when they grow."""
        self.after_round = after_round
        self.rounds = 0
        self._admit_wake = asyncio.Event()
        self._round_lock = asyncio.Lock()
        self._pushing: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._repush: set[tuple[str, str]] = set()
        """(member, shard) pairs to push again once the push under way is done."""
        self._tasks: list[asyncio.Task[Any]] = []
        self._last: dict[str, tuple[int, int] | None] = {}
        """The identity of every watched shard when it was last pushed."""
        self._inflight: set[asyncio.Task[None]] = set()
        self._busy: set[str] = set()
        self._sem = asyncio.Semaphore(config.concurrency)
        self._cand_sem = asyncio.Semaphore(config.concurrency)
        """Candidates have their own slots: a flood of bogus addresses never delays members."""

    def suggest(
        self,
        address: str,
        node: str | None,
        source: str,
        *,
        via: str | None = None,
        calling: bool = False,
    ) -> None:
        """A candidate address from any source; admission probes it as soon as it is due."""
        refused = self.membership.suggest(address, node, source, via=via, calling=calling)
        if refused is not None:
            self.metrics.rejected.labels(f"address_{refused}").inc()
            if via is not None:
                log.warning(
                    "address %s for %s from %s (%s) not taken: %s",
                    address,
                    node,
                    via,
                    source,
                    refused,
                )
            return
        if self.membership.due_candidates():
            self._admit_wake.set()

    def start(self) -> None:
        self._tasks.append(asyncio.create_task(self._discover()))
        self._tasks.append(asyncio.create_task(self._rounds()))
        self._tasks.append(asyncio.create_task(self._admit()))
        if self.config.push:
            self._tasks.append(asyncio.create_task(self._watch()))

    async def stop(self) -> None:
        for task in [*self._tasks, *self._inflight, *self._pushing.values()]:
            task.cancel()
        for task in [*self._tasks, *self._inflight]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- rounds ---------------------------------------------------------------------------

    def _spawn(
        self, key: str, work: Coroutine[Any, Any, None], sem: asyncio.Semaphore
    ) -> asyncio.Task[None] | None:
        """Run ``work`` in the background unless the same member or candidate is still busy
        from an earlier round: a slow peer occupies only its own slot."""
        if key in self._busy:
            work.close()
            return None
        self._busy.add(key)

        async def run() -> None:
            try:
                async with sem:
                    await work
            finally:
                self._busy.discard(key)

        task = asyncio.create_task(run())
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return task

    async def _settle(self, tasks: list[asyncio.Task[None] | None]) -> None:
        """Wait for this round's exchanges, but never longer than a request timeout: the ones
        still running carry on in the background."""
        live = [t for t in tasks if t is not None]
        if live:
            await asyncio.wait(live, timeout=self.config.timeout)

    async def round(self) -> None:
        async with self._round_lock:
            t0 = time.monotonic()
            self.rounds += 1
            self.metrics.rounds.inc()
            self.state.reload()
            due = self.membership.due_candidates()
            await self._settle(
                [
                    self._spawn(f"c:{c.address}", self.admission.verify(c), self._cand_sem)
                    for c in due
                ]
            )
            members = self.membership.contactable()
            await self._settle(
                [self._spawn(f"m:{m.node}", self.exchanger.exchange(m), self._sem) for m in members]
            )
            self.state.save_members()
            if self.config.collect:
                await self._collect()
            self.after_round()
            self.metrics.round_seconds.observe(time.monotonic() - t0)
            self.metrics.last_round.set(time.time())

    async def _collect(self) -> None:
        """After the round's exchanges: physically remove what no member can bring back."""
        await collect_after_round(
            self.collector,
            list(self.membership.members.values()),
            set(self.state.ignored),
            self.exchanger.holdings.disk_full,
        )

    async def _rounds(self) -> None:
        while True:
            try:
                await self.round()
            except Exception:
                log.exception("round failed")
            await asyncio.sleep(self.config.interval)

    async def _admit(self) -> None:
        """Probe candidates, and members that failed, as their backoff falls due, between
        rounds too, so a peer that starts after us is admitted, and one back from a partition
        exchanged with, within seconds whatever the round interval."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._admit_wake.wait(), min(1.0, self.config.interval))
            self._admit_wake.clear()
            for cand in self.membership.due_candidates():
                self._spawn(f"c:{cand.address}", self.admission.verify(cand), self._cand_sem)
            for m in self.membership.due_probes():
                self._spawn(f"m:{m.node}", self.exchanger.exchange(m), self._sem)

    async def _discover(self) -> None:
        while True:
            found = await discovery.discover(
                self.config, lambda src: self.metrics.discovery_errors.labels(src).inc()
            )
            for address, node, source in found:
                self.suggest(address, node, source)
            if self.config.discover_interval <= 0:
                return
            await asyncio.sleep(self.config.discover_interval)

    # -- pushes after a local change --------------------------------------------------------

    def trigger_push(self, shard: str) -> None:
        """Push ``shard`` to every live member, each on its own: a slow member delays only
        itself."""
        for m in self.membership.alive():
            key = (m.node, shard)
            task = self._pushing.get(key)
            if task is not None and not task.done():
                self._repush.add(key)
                continue
            self._pushing[key] = asyncio.create_task(self._push_loop(m, shard))

    async def _push_loop(self, m: Member, shard: str) -> None:
        while True:
            self._repush.discard((m.node, shard))
            await self.exchanger.push(m, shard)
            if (m.node, shard) not in self._repush:
                return

    def _idents(self) -> dict[str, tuple[int, int] | None]:
        out: dict[str, tuple[int, int] | None] = {}
        for shard, path in self.watched.items():
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                out[shard] = None
                continue
            out[shard] = (st.st_ino, st.st_size)
        return out

    async def _watch(self) -> None:
        """Push every shard written here as soon as it changes (creation included): told by
        inotify where the kernel has it (:mod:`noond.inotify`), in the callback that reads the
        event, so nothing else runs between the kernel's word and the push; and by polling the
        shards' identities every ``watch_interval`` in any case (the fallback, and a net under
        an event queue that overflowed)."""
        self._last = self._idents()
        watch = inotify.open_watch(self._watched_dir()) if self.config.inotify else None
        names = {path.name for path in self.watched.values()}
        loop = asyncio.get_running_loop()
        if watch is not None:

            def readable() -> None:
                changed = watch.changed()
                if changed is None or changed & names:
                    self._push_changed()

            loop.add_reader(watch.fd, readable)
        try:
            while True:
                await asyncio.sleep(self.config.watch_interval)
                self._push_changed()
        finally:
            if watch is not None:
                loop.remove_reader(watch.fd)
                watch.close()

    def _watched_dir(self) -> Path:
        return next(iter(self.watched.values())).parent

    def _push_changed(self) -> None:
        now = self._idents()
        for shard, ident in now.items():
            if ident != self._last.get(shard) and ident is not None:
                self.trigger_push(shard)
        self._last = now


async def collect_after_round(
    collector: Collector,
    members: list[Member],
    excluded: set[str],
    disk_full: Callable[[OSError], None],
) -> None:
    """One collection, off the loop, and what its outcome says: a worker killed for its time is
    an expected outcome (the collector counts it and retries later), said in one line; a full
    disk is said with storing's; any other failure with its traceback."""
    try:
        await asyncio.to_thread(collector.run, members, excluded)
    except CollectionTimedOut as exc:
        log.warning("tombstone collection timed out: %s", exc)
    except OSError as exc:
        if not full(exc):
            log.exception("tombstone collection failed")
        else:  # it waits for space like storing does, and is said with it, once
            disk_full(exc)
    except Exception:  # collection only ever removes; a failure leaves everything in place
        log.exception("tombstone collection failed")
