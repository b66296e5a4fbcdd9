"""noond keeps the machine's read model current: it is one more process of the machine, so
after it stores ops it received (a push, a pull, a recovery, a re-fetched shard, a collection)
it has them folded into ``NOON_DIR/.noon/readmodel.sqlite3`` through the same refresh every
session uses (:meth:`noon.store.readmodel.model.ReadModel.refresh`). The first session after a
catch-up then finds the read model current and answers without folding anything.

The fold never holds up replication: storing an op only sets an event; a worker process
(:mod:`noond.fold_worker`) folds, one slice of at most one chunk per request, releasing the
read model's locks between slices (a collection waiting for the cut, or a session's read, gets
its turn). Requests that arrive during a fold coalesce into the next one. A full disk leaves the
read model behind as it does for any process (:mod:`noon.store.readmodel.behind`) and the fold
is tried again as space returns; a read model that cannot be written at all is left to the
sessions (noond never folds into its own memory). A worker that dies is started again for the
next fold; the read model stays at its last committed chunk meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Callable

from noon.config import Settings
from noond.fold_worker import FAILED_RETRY, Slice
from noond.metrics import Metrics

log = logging.getLogger("noond")

FOLD_GAP = 2.0
"""Seconds between the end of a fold and the start of the next unless a slice is pending: a
lone op is folded at once, a stream of pulled pages every two seconds (each commit also redoes
the derived rows of every element it touched, so folding page by page would redo a busy
element's rows once per page)."""
STOP_SECONDS = 10.0
"""How long a stopping noond waits for the worker to end its slice before killing it (a kill
loses nothing: the slice's chunk is one transaction)."""


class Folder:
    """Has what this node stores folded into the machine's read model, in the background."""

    def __init__(
        self, settings: Settings, metrics: Metrics, disk_is_full: Callable[[], bool]
    ) -> None:
        self.settings = settings
        self.disk_is_full = disk_is_full
        """While shards cannot be stored for want of space, folding waits for the next op
        stored (a fold's failed transactions would take and give back the last free blocks,
        and a push could slip in between, the disk said full again and again)."""
        self.metrics = metrics
        self._wake = asyncio.Event()
        self._worker: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None
        self._given_up = False

    def poke(self) -> None:
        """Ops were stored: fold them soon (cheap; many pokes make one fold)."""
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())
        self.poke()  # whatever arrived while noond was down

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._end_worker()

    async def _run(self) -> None:
        delay: float | None = None
        ended = -FOLD_GAP
        while True:
            if delay is None:
                await self._wake.wait()
                gap = ended + FOLD_GAP - time.monotonic()
                if gap > 0:
                    await asyncio.sleep(gap)  # the pokes meanwhile make one fold
            elif delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
            self._wake.clear()
            delay = await self._fold()
            ended = time.monotonic()

    async def _fold(self) -> float | None:
        """One slice; returns when to fold again without a poke (None: only after one)."""
        if self._given_up or self.disk_is_full():
            return None
        t0 = time.monotonic()
        try:
            done = await self._ask()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            await self._end_worker()
            self._count("failed", time.monotonic() - t0)
            log.warning("the fold worker failed (%s); started again in %.0f s", exc, FAILED_RETRY)
            return FAILED_RETRY
        self._count(done.result, done.seconds)
        if done.exiting:
            await self._end_worker()
        if done.result == "unshared":
            self._given_up = True
            await self._end_worker()
        return done.again

    async def _ask(self) -> Slice:
        """One slice from the worker, started first if none runs."""
        worker = self._worker
        if worker is None or worker.returncode is not None:
            worker = self._worker = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "noond.fold_worker",
                str(self.settings.dir),
                str(self.settings.max_skew_ms),
                logging.getLevelName(logging.getLogger().getEffectiveLevel()),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(b"slice\n")
        await worker.stdin.drain()
        line = await worker.stdout.readline()
        if not line:
            raise OSError(f"the fold worker exited ({await worker.wait()})")
        return Slice.parse(line)

    async def _end_worker(self) -> None:
        """Close the worker's requests and wait for it to finish its slice (killed after
        :data:`STOP_SECONDS`)."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        if worker.stdin is not None:
            worker.stdin.close()
        try:
            await asyncio.wait_for(worker.wait(), STOP_SECONDS)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                worker.kill()
            await worker.wait()

    def _count(self, result: str, seconds: float) -> None:
        self.metrics.folds.labels(result).inc()
        self.metrics.fold_seconds.observe(seconds)
