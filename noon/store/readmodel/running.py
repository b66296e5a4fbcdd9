"""The searches running in this process, which the vectorizer yields to.

A hybrid search beside the worker embedding a backlog took about 1.7 times its wall clock
with nothing embedding (bench/measured_apart.md, "Search beside the vectorizer"): the
searching thread's CPU hardly moved, its lock waits were a fraction of a millisecond; it
waited for the interpreter and a core, which the model's forward pass (numpy between Python
steps, the tokenizer in Python) held. So a search says it runs (:meth:`Running.held`) and the
worker waits for none to run before each piece of its batch and before it takes the store's
lock to store the batch (:meth:`Running.wait_quiet`): a search that starts meanwhile shares
the machine with at most the piece under way (:data:`~.vectorizer.PIECE` texts, a few
milliseconds), and the backlog goes on between searches.

The model's load waits the same way, up to :data:`~.embedder.QUIET_S`
(:meth:`Running.quiet_within`): the first search of a session asks for the model and ranks by
words meanwhile, and the load (numpy's import, the tokenizer, the weights) beside it made it
2 to 3 times as long.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class Running:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self.waiting = 0
        """Threads in :meth:`wait_quiet` waiting for a search to end (told through
        :meth:`changed`)."""

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A search runs for the duration."""
        self.begin()
        try:
            yield
        finally:
            self.end()

    def begin(self) -> None:
        with self._cond:
            self._running += 1

    def end(self) -> None:
        with self._cond:
            self._running -= 1
            self._cond.notify_all()

    @property
    def busy(self) -> bool:
        return self._running > 0

    def wait_quiet(self) -> bool:
        """Return once no search runs; whether it had to wait."""
        return self._wait(None)[0]

    def quiet_within(self, timeout: float) -> bool:
        """Return once no search runs (True), or once ``timeout`` seconds passed with one
        still running (False)."""
        return self._wait(timeout)[1]

    def _wait(self, timeout: float | None) -> tuple[bool, bool]:
        """Whether it had to wait, and whether no search runs now."""
        with self._cond:
            if not self._running:
                return False, True
            self.waiting += 1
            self._cond.notify_all()
            try:
                quiet = self._cond.wait_for(lambda: not self._running, timeout)
            finally:
                self.waiting -= 1
            return True, quiet

    def changed(self, until: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``until()`` holds, told by each change of :attr:`waiting` or of the
        running searches (a test's signal); False if ``timeout`` passed first."""
        with self._cond:
            return self._cond.wait_for(until, timeout)


SEARCHES = Running()
"""The process's searches (:meth:`.search.Search.search` holds it)."""
