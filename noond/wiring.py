"""What every part of an exchange with one member works with (the daemon builds it once): who
this node is, the client, what it holds, the members, the forks it refuses, its metrics, and the
limits of one exchange."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from noond.client import Client
from noond.forks import Forks
from noond.membership import Membership
from noond.metrics import Metrics
from noond.shards import Holdings
from noond.signers import Signers


@dataclass(frozen=True)
class ExchangeSettings:
    page_bytes: int
    fsync: bool
    digest: bool
    """Start with ``/shards/digest`` (an idle exchange is one small request)."""
    recovery_hold: float
    """Seconds a confirmed recovery may hold the own shard's lock at a time."""
    pull_budget: int = 256 << 20
    """Bytes one exchange may pull from one member."""
    pull_seconds: float = 30.0
    """Seconds one exchange may spend pulling from one member."""
    max_shard_bytes: int = 1 << 30
    """Size at which a replica shard is no longer pulled or pushed to (per author)."""
    timeout: float = 10.0
    """Seconds a member may take to answer (``NOOND_TIMEOUT``)."""
    stream: bool = True
    """Push on open streams, opened ahead of the writes (``NOOND_STREAM``; off while
    ``NOOND_PUSH`` is off: nothing is pushed then)."""


@dataclass(frozen=True)
class Wiring:
    node: str
    client: Client
    holdings: Holdings
    membership: Membership
    forks: Forks
    metrics: Metrics
    settings: ExchangeSettings
    signers: Signers


class Wired:
    """A part of the exchange: the wiring's members as its own attributes."""

    def __init__(self, wiring: Wiring) -> None:
        self.wiring = wiring
        self.node = wiring.node
        self.client = wiring.client
        self.holdings = wiring.holdings
        self.dir: Path = wiring.holdings.dir
        self.membership = wiring.membership
        self.forks = wiring.forks
        self.metrics = wiring.metrics
        self.settings = wiring.settings
        self.signers = wiring.signers
