"""Hybrid logical clock (Kulkarni et al.): 48 bits of physical milliseconds, 16 bits of counter.

A stamp is one integer, ``physical_ms << 16 | counter``, so stamps compare as integers and
serialise as one JSON number.

Invariants kept by :class:`Clock`:
- ``tick`` returns a stamp strictly greater than every stamp it returned or observed before,
  whatever the wall clock does (it may step back, stall or jump).
- ``observe`` never moves the clock more than ``max_skew_ms`` ahead of the wall clock: a remote
  stamp further in the future is clamped, and the clamp is counted. The remote op keeps its own
  stamp (ordering is by the op's stamp); only the local clock is protected from being dragged.
- ``follow`` takes a stamp of this node itself (the last op of its own shard, which another
  process of the machine may have written) without a clamp: the node's stamps rise strictly
  across every process that writes its shard, even after the wall clock stepped back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

COUNTER_BITS = 16
COUNTER_MAX = (1 << COUNTER_BITS) - 1
PHYSICAL_MAX = (1 << 48) - 1
DEFAULT_MAX_SKEW_MS = 60_000


def pack(physical_ms: int, counter: int) -> int:
    """Build a stamp from its two parts."""
    if not 0 <= physical_ms <= PHYSICAL_MAX:
        raise ValueError(f"HLC physical time out of range: {physical_ms}")
    if not 0 <= counter <= COUNTER_MAX:
        raise ValueError(f"HLC counter out of range: {counter}")
    return (physical_ms << COUNTER_BITS) | counter


def physical(stamp: int) -> int:
    """Milliseconds since the Unix epoch carried by a stamp."""
    return stamp >> COUNTER_BITS


def counter(stamp: int) -> int:
    """Logical counter carried by a stamp."""
    return stamp & COUNTER_MAX


def is_valid(stamp: object) -> bool:
    """True for an integer that fits in 64 bits as a stamp."""
    return isinstance(stamp, int) and not isinstance(stamp, bool) and 0 <= stamp < (1 << 64)


@dataclass
class Clock:
    """The clock of one node in one process. Not thread-safe; the store serialises access."""

    last: int = 0
    max_skew_ms: int = DEFAULT_MAX_SKEW_MS
    clamped: int = 0
    """How many observed stamps were further ahead of the wall clock than ``max_skew_ms``."""

    def tick(self, wall_ms: int) -> int:
        """A new stamp for a local event, strictly greater than any stamp seen so far."""
        last_physical = physical(self.last)
        if wall_ms > last_physical:
            self.last = pack(min(wall_ms, PHYSICAL_MAX), 0)
        elif counter(self.last) < COUNTER_MAX:
            self.last += 1
        else:
            # Counter exhausted within one millisecond: borrow the next millisecond.
            self.last = pack(last_physical + 1, 0)
        return self.last

    def tick_many(self, wall_ms: int, n: int) -> int:
        """The first of ``n`` stamps for ``n`` local events at once (a batch): they are that
        stamp and the ``n - 1`` integers after it, what ``n`` calls of :meth:`tick` with
        ``wall_ms`` give (after the first, the wall clock is never ahead of the stamp, so each
        is the last plus one, a counter run out included: it carries into the millisecond)."""
        first = self.tick(wall_ms)
        self.last = first + n - 1
        return first

    def follow(self, own: int) -> None:
        """Move past a stamp this node wrote, in whichever process: the next :meth:`tick` is
        greater. Never clamped (the stamp is already in the node's shard; falling below it
        would order the node's own ops backwards)."""
        if own > self.last:
            self.last = own

    def observe(self, remote: int, wall_ms: int) -> bool:
        """Merge a stamp seen on another node's op. Returns True when it had to be clamped."""
        limit = pack(min(wall_ms + self.max_skew_ms, PHYSICAL_MAX), COUNTER_MAX)
        clamped = remote > limit
        if clamped:
            self.clamped += 1
            remote = limit
        if remote > self.last:
            self.last = remote
        return clamped


LAST_DATE_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the last millisecond a calendar date can show. A 48-bit physical
time can reach past it (a broken or hostile clock); such a time is shown as what it is, never
turned into an exception that breaks a whole view."""

FORMATS = {
    "text": "%Y-%m-%d %H:%M:%S UTC",
    "iso": "%Y-%m-%dT%H:%M:%SZ",
    "iso_ms": "%Y-%m-%dT%H:%M:%S.{ms:03d}Z",
}


def utc(ms: float, style: str = "text") -> str:
    """Milliseconds since the Unix epoch as UTC text: ``text`` (2026-11-30 21:07:38 UTC),
    ``iso`` (2026-11-30T21:07:38Z) or ``iso_ms`` (2026-11-30T21:07:38.123Z)."""
    if not 0 <= ms <= LAST_DATE_MS:
        return f"(unrepresentable time: {int(ms)} ms after 1970)"
    moment = datetime.fromtimestamp(int(ms) // 1000, UTC)
    return moment.strftime(FORMATS[style]).replace("{ms:03d}", f"{int(ms) % 1000:03d}")
