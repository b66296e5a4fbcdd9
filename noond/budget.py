"""What one exchange may take from one member (PROTOCOL.md §10.1): bytes, time and new shards,
so that a member listing endless ops or authors costs this node a bounded amount per round."""

from __future__ import annotations

import time
from dataclasses import dataclass

from noon.errors import NoonError

MAX_NEW_SHARDS = 64
"""Shards one exchange may create from nothing (a member listing a crowd of authors)."""


class BudgetSpent(NoonError):
    """This exchange pulled what it may from the member; the rest waits for the next one."""


@dataclass
class Budget:
    """The allowance of one exchange with one member."""

    bytes: int
    until: float
    new_shards: int = MAX_NEW_SHARDS
    cut: bool = False
    """A pull stopped on this budget (bytes, time or new shards) with more to take."""
    taken: int = 0
    """Ops appended within it."""

    @property
    def behind(self) -> bool:
        """The exchange took ops and stopped on its budget: the member has more, and the next
        exchange may follow at once (PROTOCOL.md §4)."""
        return self.cut and self.taken > 0

    @property
    def spent(self) -> bool:
        return self.bytes <= 0 or time.monotonic() > self.until
