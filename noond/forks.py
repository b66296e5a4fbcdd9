"""Forked shards this node refuses to merge, per member (PROTOCOL.md §7): recorded once, logged
loudly once, counted, and listed in ``/status``."""

from __future__ import annotations

import logging

from noon.daemon_link.bodies import Fork
from noond.metrics import Metrics

log = logging.getLogger("noond")


class Forks:
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.found: dict[tuple[str, str], str] = {}
        """(member, shard) -> what differs."""

    def __contains__(self, pair: tuple[str, str]) -> bool:
        return pair in self.found

    def record(self, peer: str, shard: str, message: str) -> None:
        if (peer, shard) not in self.found:
            self.metrics.forks.inc()
            log.error(
                "FORK DETECTED on shard %s (with peer %s): %s. This node refuses to merge that "
                "shard with that peer until the operator resolves it; see `noon doctor`.",
                shard,
                peer,
                message,
            )
        self.found[(peer, shard)] = message
        self.metrics.forked_shards.set(len({s for _, s in self.found}))

    def reports(self) -> tuple[Fork, ...]:
        return tuple(
            Fork(peer=peer, shard=shard, error=message)
            for (peer, shard), message in sorted(self.found.items())
        )
