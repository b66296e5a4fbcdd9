"""Embeds memories off the write path: a background thread of each serving process (``noon
serve``, ``noon web``) that gives every live memory lacking a vector of its current text one,
a batch at a time, newest first; ``noon reindex`` runs the same steps to the end.

Why a worker and not the write or the query: a write must stay as fast as the append and the
fold (the model costs milliseconds a memory), and a query must not pay for a batch someone
else imported (thousands of memories). So a new memory is found lexically at once and
semantically once the worker reached it: woken by the fold's change report, it embeds a batch
of :data:`BATCH` (a fraction of a second) and commits it, again and again until nothing is
pending, then sleeps until the next change (or :data:`IDLE_S`, since another process may
fold). Only one process of a machine embeds at a time (a ``flock`` on
``.noon/vectorizer.lock``): the vectors are shared through the read model, so a second worker
would only repeat the work; the others try again every :data:`IDLE_S`.

The worker reads and writes through the process's read-model connection under the store's
lock, in short transactions, never while embedding.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from noon.core.elements import CONTENT
from noon.store.readmodel import vectors
from noon.store.readmodel.embedder import (
    MODEL,
    ModelUnavailable,
    available,
    installed,
    why_lexical,
)
from noon.store.readmodel.model import ReadModel
from noon.store.readmodel.running import SEARCHES
from noon.store.readmodel.touched import Touched
from noon.store.shard import open_regular

log = logging.getLogger("noon.vectors")

BATCH = 32
PIECE = 8
"""Texts the model embeds at most between two looks for a running search (:mod:`.running`):
about 16 ms of CPU, and no slower a text than 32 at once (the model cuts its input into
micro-batches of 384 tokens, about 6 texts: 64 ms of CPU per 32 texts in pieces of 32, 8 or
4; in pieces of 2, 74). After waiting for a search a piece is one text (2 to 3 ms), doubling
each time no search was waited for: while searches come one after another, one that starts
while a piece is embedded shares the machine with a text, not with 8."""
IDLE_S = 30.0
PRUNE_S = 600.0
"""The vectors of memories gone from the read model are dropped at most this often (a scan)."""
START_S = 3.0
"""The worker's first look waits this long: a session's first answers come first."""
LOCK_NAME = "vectorizer.lock"


class Vectorizer:
    def __init__(self, model: ReadModel, lock: threading.RLock) -> None:
        self._model = model
        self._lock = lock
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pruned = 0.0
        self._below: int | None = None
        """Where this pass's last batch ended: the memories above it are embedded, unless a
        change came since (then :attr:`_changed`)."""
        self._changed = False
        self._piece = PIECE
        """Texts in the next piece: 1 after waiting for a search, doubling up to PIECE."""

    @property
    def enabled(self) -> bool:
        return available()

    def start(self) -> None:
        """Start the background worker (once; nothing without the ``semantic`` extra)."""
        if not self.enabled or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="noon-vectors", daemon=True)
        self._thread.start()

    def wake(self, changes: Touched | None = None) -> None:
        """The fold reported a change: look for memories to embed, the newest first, if it can
        have given one a text to embed (:func:`gives_texts`)."""
        if changes is None or gives_texts(changes):
            self._changed = True
            self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def step(self) -> int:
        """Embed one batch of pending memories; how many got a vector (0: none pending).

        A pass goes down from the newest memory: each batch is looked for below the last
        one's, since those above it have their vectors (looked for from the top each time, a
        batch read past every memory embedded so far, under the store's lock, which a query
        waits for: 2.7 ms at 4k of 100k embedded, growing with them). A change reported since
        (a new memory, an edit) starts the pass again from the top, as does reaching the
        bottom, which finds what a batch left (one edited while it was embedded).

        It yields to this process's searches (:mod:`.running`): it waits for none to run
        before it takes the store's lock and before each piece of the batch it embeds."""
        if self._changed:
            self._changed = False
            self._below = None
        self._quiet()
        with self._lock:
            todo = vectors.pending(self._model.conn, BATCH, self._below)
            if not todo and self._below is not None:
                self._below = None
                todo = vectors.pending(self._model.conn, BATCH)
        if not todo:
            return 0
        self._below = min(p.row for p in todo)
        rows: list[Any] = []
        while len(rows) < len(todo):
            self._quiet()
            rows.extend(MODEL.embed([p.text for p in todo[len(rows) : len(rows) + self._piece]]))
        self._quiet()
        with self._lock:
            stored = vectors.put(self._model.conn, zip(todo, rows, strict=True))
        return stored or -1  # all edited meanwhile: still progress, look again

    def _quiet(self) -> None:
        """Wait for no search to run; the next piece is one text if it waited, else twice
        the last, up to :data:`PIECE`."""
        self._piece = 1 if SEARCHES.wait_quiet() else min(2 * self._piece, PIECE)

    def catch_up(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed until nothing is pending (``noon reindex``); how many were embedded.
        :class:`~.embedder.ModelUnavailable` when the model does not load."""
        total = 0
        with self._machine_lock(wait=True):
            while not self._stop.is_set():
                done = self.step()
                if done == 0:
                    break
                total += max(done, 0)
                if progress is not None:
                    with self._lock:
                        live, embedded = vectors.counts(self._model.conn)
                    progress(embedded, live)
            with self._lock:
                vectors.prune(self._model.conn)
        return total

    def _run(self) -> None:
        self._stop.wait(START_S)
        while not self._stop.is_set():
            try:
                with self._machine_lock(wait=False) as mine:
                    if mine:
                        while not self._stop.is_set() and self.step() != 0:
                            pass
                        if time.monotonic() - self._pruned > PRUNE_S:
                            with self._lock:
                                vectors.prune(self._model.conn)
                            self._pruned = time.monotonic()
            except ModelUnavailable:
                return  # said once, by the model: this process searches by words only
            except Exception:  # a failed batch loses nothing: it is pending still
                log.exception("embedding memories failed; trying again later")
            self._wake.wait(IDLE_S)
            self._wake.clear()

    @contextlib.contextmanager
    def _machine_lock(self, wait: bool) -> Iterator[bool]:
        """Hold the machine's embedding lock (True), or say another process holds it."""
        path = self._model.path
        if path is None:  # a private in-memory read model: nobody else embeds it
            yield True
            return
        fd = open_regular(Path(path).parent / LOCK_NAME, os.O_RDWR | os.O_CREAT)  # no link
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)


def gives_texts(changes: Touched) -> bool:
    """Whether a fold's change report can leave a live memory lacking a vector of its current
    text: only a ``content`` element holds a memory's text (a knowledge-graph write, a
    placement or a keyword cannot), and a reset says nothing of what changed. The worker
    otherwise looks on its own every :data:`IDLE_S`."""
    return changes.reset or any(key[0] == CONTENT for key in changes.keys)


def describe() -> str:
    """How search ranks here, in words an agent reads (the tool texts)."""
    if available():
        return "hybrid: BM25 full-text fused with multilingual semantic similarity"
    return "lexical, not semantic"


def ranking(semantic: bool) -> tuple[str, str]:
    """How one search ranked (``"hybrid"`` or ``"lexical"``), and the line its answer ends with
    (empty, or a newline and the note) when it ranked by words only where the tool texts
    promised meaning too (the model still loading, or failed to load): the agent is never told
    a search was hybrid that was not."""
    if semantic:
        return "hybrid", ""
    if not installed():
        return "lexical", ""  # the tool texts already say lexical
    return "lexical", f"\nRanked by words only: {why_lexical()}."
