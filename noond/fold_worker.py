"""The process that folds for noond (``python -m noond.fold_worker DIR MAX_SKEW_MS LEVEL``): one
slice of the machine's read model per line noond writes to its stdin, one JSON line back on its
stdout saying how it went (:class:`Slice`). Logs go to stderr, which it shares with noond.

The fold runs in a process of its own so that it takes nothing from replication: not the event
loop, not the GIL (folding on a thread of noond, a 100k-op catch-up took 40 s to hold against
32 s without the fold, and folded 3.5 times slower than a session), and not noond's memory (a
fold's transactions leave their allocations with the process that made them). When the read
model is current and this process has grown past :data:`RESTART_RSS_MIB`, it says so and exits;
noond starts a fresh one for the next fold.

It stops when its stdin closes (noond stopped, or was killed): a slice under way is one SQLite
transaction per chunk, so a kill at any point leaves the read model at a committed chunk, which
the next fold (this process's successor or any session) resumes from.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

import orjson

from noon import logging_setup
from noon.core.hlc import Clock
from noon.logging_setup import Condition
from noon.store.errors import ForkDetected
from noon.store.readmodel.behind import RETRY_SECONDS, full
from noon.store.readmodel.model import ReadModel, Unshared
from noon.store.store import read_model_path, wall_ms

log = logging.getLogger("noond")

CHUNK_OPS = 50_000
"""Ops per transaction and per slice, as a session folds (between slices a session's read or a
collection waiting for the cut gets its turn). Folding 100k ops took 24.3 CPU seconds in
chunks of 10,000 (noond's size while it folded in its own process, to stay small) and 16.7 in
chunks of 50,000, with a peak of 122 and 159 MiB: each commit redoes the derived rows of every
element it touched."""
POLL_BYTES = 4 << 20
NICE = 10
"""How much lower than noond's this process's scheduling priority is: where the cores are
contended, replication (storing what arrives, serving peers) goes first and the fold takes what
is left, so a catch-up holds its ops sooner (the fold has the same work either way)."""
FAILED_RETRY = 5.0
"""Seconds before folding again after a failure that is not a full disk."""
RESTART_RSS_MIB = 160
"""Resident memory past which a worker whose fold is current exits (a fresh one starts at
about a third of this): a catch-up's transactions leave their memory with Python's allocator."""


@dataclass(frozen=True)
class Slice:
    """How one slice went, as the worker tells noond."""

    result: str
    """``current``, ``partial`` (more to fold at once), ``behind`` (a full disk), ``fork``,
    ``failed``, ``unshared`` (the read model cannot be written here: left to the sessions)."""
    seconds: float
    again: float | None
    """Seconds until noond should ask for a slice without being poked (None: only when
    poked)."""
    exiting: bool = False
    """The worker exits after this answer (it let its memory go)."""

    def line(self) -> bytes:
        return orjson.dumps(asdict(self)) + b"\n"

    @classmethod
    def parse(cls, line: bytes) -> Slice:
        obj = orjson.loads(line)
        again = obj["again"]
        return cls(
            str(obj["result"]),
            float(obj["seconds"]),
            None if again is None else float(again),
            bool(obj["exiting"]),
        )


class Slicer:
    """Folds the machine's read model one slice at a time, in this process."""

    def __init__(self, directory: Path, max_skew_ms: int) -> None:
        self.dir = directory
        self.max_skew_ms = max_skew_ms
        self._model: ReadModel | None = None
        self._failing = Condition(log, every=60.0)

    def fold(self) -> tuple[str, float | None]:
        """One slice: its result and when to fold again without a poke."""
        try:
            model = self._open()
            if model is None:
                return "behind", RETRY_SECONDS
            model.refresh(slice_ops=model.chunk_ops)
        except Unshared as exc:
            log.warning("%s: noond leaves folding to the sessions", exc)
            return "unshared", None
        except ForkDetected as exc:
            self._failing.met("the read model is not folded while a shard forks: %s", exc)
            return "fork", None  # the shard files must change first; storing one pokes again
        except (sqlite3.Error, OSError) as exc:
            self.close()
            self._failing.met("folding into the read model failed (%s); tried again", exc)
            return "failed", FAILED_RETRY
        if model.partial:
            return "partial", 0.0
        if model.behind is not None:
            return "behind", RETRY_SECONDS
        self._failing.ended("the read model is folded again")
        return "current", None

    def _open(self) -> ReadModel | None:
        if self._model is None:
            path = read_model_path(self.dir)
            clock = Clock(max_skew_ms=self.max_skew_ms)
            try:
                model = ReadModel(self.dir, path, clock, wall_ms, memory_fallback=False)
            except (sqlite3.DatabaseError, OSError) as exc:
                if not full(exc, path.parent):
                    raise
                self._failing.met("no space left to open the read model %s; tried again", path)
                return None
            model.chunk_ops, model.poll_bytes = CHUNK_OPS, POLL_BYTES
            self._model = model
        return self._model

    def close(self) -> None:
        if self._model is not None:
            with contextlib.suppress(sqlite3.Error):
                self._model.close()
            self._model = None


def rss_mib() -> float:
    """This process's resident memory (Linux; 0 elsewhere)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def serve(slicer: Slicer, requests: TextIO, answers: TextIO) -> None:
    """Answer each request line with one slice until the requests end (or the answer has
    nowhere to go: noond is gone)."""
    for _ in requests:
        t0 = time.monotonic()
        result, again = slicer.fold()
        exiting = result == "current" and rss_mib() > RESTART_RSS_MIB
        answer = Slice(result, time.monotonic() - t0, again, exiting)
        try:
            answers.write(answer.line().decode())
            answers.flush()
        except BrokenPipeError:
            break
        if exiting or result == "unshared":
            break
    slicer.close()


def main(argv: list[str]) -> int:
    directory, max_skew_ms, level = Path(argv[0]), int(argv[1]), argv[2]
    logging_setup.setup(getattr(logging, level, logging.INFO))
    os.nice(NICE)
    serve(Slicer(directory, max_skew_ms), sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
