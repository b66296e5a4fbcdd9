"""How many wrong tokens the page server checks: at most :data:`PER_CLIENT` from one address and
:data:`TOTAL` from all addresses together in any :data:`WINDOW` seconds. Beyond, a token offered
(to ``POST /api/login`` or as ``Authorization: Bearer``) is not checked at all and the request is
refused (429) with the time left, so a guesser learns nothing more until the window moves on.

A page already logged in is not affected: its session is a random 256-bit value, not the
token, and is never counted. Memory stays bounded: every address remembered has a failure in
the window, and the window holds at most :data:`TOTAL` failures.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

WINDOW = 60.0
PER_CLIENT = 10
TOTAL = 30


@dataclass
class Guesses:
    per_client: int = PER_CLIENT
    total: int = TOTAL
    window: float = WINDOW
    clock: Callable[[], float] = time.monotonic
    _all: deque[float] = field(default_factory=deque)
    _by_source: dict[str, deque[float]] = field(default_factory=dict)

    def refusal(self, source: str) -> tuple[str, int] | None:
        """Why a token from ``source`` is not checked now and the seconds until one is, or
        None if it may be checked."""
        now = self.clock()
        self._forget(now)
        mine = self._by_source.get(source)
        if mine is not None and len(mine) >= self.per_client:
            wait = self._wait(mine, now)
            return (
                f"Too many wrong tokens from {source} ({len(mine)} in the last "
                f"{self.window:g} s): no token from this address is checked for {wait} s more.",
                wait,
            )
        if len(self._all) >= self.total:
            wait = self._wait(self._all, now)
            return (
                f"Too many wrong tokens ({len(self._all)} from all addresses in the last "
                f"{self.window:g} s): no token is checked for {wait} s more.",
                wait,
            )
        return None

    def failed(self, source: str) -> None:
        now = self.clock()
        self._all.append(now)
        self._by_source.setdefault(source, deque()).append(now)

    def _wait(self, times: deque[float], now: float) -> int:
        # the age first: (t + window) - now rounds past the window when t == now
        return max(1, math.ceil(self.window - (now - times[0])))

    def _forget(self, now: float) -> None:
        horizon = now - self.window
        while self._all and self._all[0] <= horizon:
            self._all.popleft()
        for source in list(self._by_source):
            mine = self._by_source[source]
            while mine and mine[0] <= horizon:
                mine.popleft()
            if not mine:
                del self._by_source[source]
