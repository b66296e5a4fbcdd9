"""noond keeps the machine's read model current: it is one more process of the machine, so
after it stores ops it received (a push, a pull, a recovery, a re-fetched shard, a collection)
it folds them into ``NOON_DIR/.noon/readmodel.sqlite3`` through the same refresh every session
uses (:meth:`noon.store.readmodel.model.ReadModel.refresh`). The first session after a catch-up
then finds the read model current and answers without folding anything.

The fold never holds up replication: storing an op only sets an event; one thread of its own
folds, in slices of at most one chunk, releasing the read model's locks between slices (a
collection waiting for the cut, or a session's read, gets its turn). Requests that arrive during
a fold coalesce into the next one. A full disk leaves the read model behind as it does for any
process (:mod:`noon.store.readmodel.behind`) and the fold is tried again as space returns; a
read model that cannot be written at all is left to the sessions (noond never folds into its
own memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from noon.config import Settings
from noon.core.hlc import Clock
from noon.logs import Condition
from noon.store.errors import ForkDetected
from noon.store.readmodel.behind import RETRY_SECONDS, full
from noon.store.readmodel.model import ReadModel, Unshared
from noon.store.store import read_model_path, wall_ms
from noond.metrics import Metrics

log = logging.getLogger("noond")

CHUNK_OPS = 10_000
"""Ops per transaction and per slice: what the daemon holds of a fold at once (a session's
fold takes 50,000 at a time; the daemon stays small and lets others in more often)."""
POLL_BYTES = 4 << 20
FOLD_GAP = 2.0
"""Seconds between the end of a fold and the start of the next unless a slice is pending: a
lone op is folded at once, a stream of pulled pages every two seconds (each commit also redoes
the derived rows of every element it touched, so folding page by page would redo a busy
element's rows once per page)."""
FAILED_RETRY = 5.0
"""Seconds before folding again after a failure that is not a full disk."""


class Folder:
    """Folds what this node stores into the machine's read model, in the background."""

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
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="noond-fold")
        self._model: ReadModel | None = None
        self._task: asyncio.Task[None] | None = None
        self._failing = Condition(log, every=60.0)
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
        # after the slice under way, if any: the model is closed in the thread that uses it
        await asyncio.get_running_loop().run_in_executor(self._pool, self._close)
        self._pool.shutdown(wait=False)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
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
            delay = await loop.run_in_executor(self._pool, self._fold)
            ended = time.monotonic()

    def _fold(self) -> float | None:
        """One slice; returns when to fold again without a poke (None: only after one)."""
        if self._given_up or self.disk_is_full():
            return None
        t0 = time.monotonic()
        try:
            model = self._open()
            if model is None:
                return RETRY_SECONDS
            model.refresh(slice_ops=model.chunk_ops)
        except Unshared as exc:
            log.warning("%s: noond leaves folding to the sessions", exc)
            self._given_up = True
            return None
        except ForkDetected as exc:
            self._count("fork", t0)
            self._failing.met("the read model is not folded while a shard forks: %s", exc)
            return None  # the shard files must change first; storing one pokes again
        except (sqlite3.Error, OSError) as exc:
            self._close()
            self._count("failed", t0)
            self._failing.met("folding into the read model failed (%s); tried again", exc)
            return FAILED_RETRY
        if model.partial:
            self._count("partial", t0)
            return 0.0
        if model.behind is not None:
            self._count("behind", t0)
            return RETRY_SECONDS
        self._count("current", t0)
        self._failing.ended("the read model is folded again")
        return None

    def _open(self) -> ReadModel | None:
        if self._model is None:
            path = read_model_path(self.settings.dir)
            clock = Clock(max_skew_ms=self.settings.max_skew_ms)
            try:
                model = ReadModel(self.settings.dir, path, clock, wall_ms, memory_fallback=False)
            except (sqlite3.DatabaseError, OSError) as exc:
                if not full(exc, path.parent):
                    raise
                self._failing.met("no space left to open the read model %s; tried again", path)
                return None
            model.chunk_ops, model.poll_bytes = CHUNK_OPS, POLL_BYTES
            self._model = model
        return self._model

    def _count(self, result: str, t0: float) -> None:
        self.metrics.folds.labels(result).inc()
        self.metrics.fold_seconds.observe(time.monotonic() - t0)

    def _close(self) -> None:
        if self._model is not None:
            with contextlib.suppress(sqlite3.Error):
                self._model.close()
            self._model = None
