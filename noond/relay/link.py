"""One relay as this node reaches it (PROTOCOL.md §14): its backend, the mesh's keys by epoch,
the author tags met so far, and every request counted (reachable or not, bytes, refusals).
Fetching and opening one segment lives here because the reader and compaction both do it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from noon.certs import MeshKey
from noon.daemon_link.bodies import RelayStats
from noond.metrics import Metrics
from noond.relay import seal
from noond.relay.backend import Backend, Conflict, Entry, Missing, RelayDown, TooLarge

log = logging.getLogger("noond.relay")

MAX_REFUSED = 4096
"""Refused objects remembered (not fetched again); past it the oldest are forgotten."""


@dataclass
class RelaySettings:
    flush: float = 1.0
    interval: float = 10.0
    head_every: float = 30.0
    compact_every: float = 300.0
    fsync: bool = True


class Link:
    def __init__(self, backend: Backend, mesh: MeshKey, *, node: str, metrics: Metrics) -> None:
        self.backend = backend
        self.url = backend.url
        self.node = node
        self.own = [node, f"{node}-import"]
        """The shards this node writes (and uploads)."""
        self.metrics = metrics
        self.stats = RelayStats()
        self.keys = {epoch: seal.keys(mesh, epoch) for epoch in mesh.epochs}
        self.epoch = mesh.current
        self.refused: dict[tuple[str, str], None] = {}
        """(stored name, version) of objects refused: not fetched again while they stay the same."""
        self.tags: dict[tuple[int, str], str] = {}
        """(epoch, node) → the tag naming that node's objects in that epoch."""

    async def io(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` of the backend in a thread, counted; a failure other than a conflict,
        a missing or a too-large object marks the relay unreachable (logged once)."""
        self.stats.requests += 1
        self.metrics.relay_requests.labels(self.url, fn.__name__).inc()
        try:
            answer = await asyncio.to_thread(fn, *args)
        except RelayDown as exc:
            if not isinstance(exc, (Conflict, Missing, TooLarge)):
                self._down(exc)
            raise
        self._up()
        return answer

    def _down(self, exc: Exception) -> None:
        if self.stats.reachable is not False:
            log.warning(
                "relay %s is unreachable: %s; writes stay local until it is back", self.url, exc
            )
        self.stats.reachable, self.stats.error = False, str(exc)
        self.metrics.relay_reachable.labels(self.url).set(0)

    def _up(self) -> None:
        if self.stats.reachable is False:
            log.info("relay %s is reachable again", self.url)
        self.stats.reachable, self.stats.error = True, ""
        self.metrics.relay_reachable.labels(self.url).set(1)

    def refuse(self, entry: Entry, reason: str, message: str) -> None:
        self.refused[(entry.stored, entry.version)] = None
        while len(self.refused) > MAX_REFUSED:
            del self.refused[next(iter(self.refused))]
        self.stats.refused += 1
        self.metrics.relay_rejected.labels(self.url, reason).inc()
        log.warning(
            "relay %s: refused %s (%s), nothing stored: %s", self.url, entry.name, reason, message
        )

    def tag_of(self, epoch: int, node: str) -> str:
        key = (epoch, node)
        if key not in self.tags:
            self.tags[key] = seal.tag(self.keys[epoch], node)
        return self.tags[key]

    def node_of(self, epoch: int, tag: str) -> str | None:
        """The node whose objects ``tag`` names in ``epoch``, when met already."""
        for (epoch_, node), tag_ in self.tags.items():
            if epoch_ == epoch and tag_ == tag:
                return node
        return None

    def sent(self, size: int) -> None:
        self.stats.bytes_up += size
        self.metrics.relay_bytes.labels(self.url, "up").inc(size)

    def got(self, size: int) -> None:
        self.stats.bytes_down += size
        self.metrics.relay_bytes.labels(self.url, "down").inc(size)

    async def get(self, entry: Entry, limit: int) -> bytes | None:
        """An object's bytes, at most ``limit`` of them, counted; None when the relay failed or
        the object is larger (refused)."""
        try:
            body = await self.io(self.backend.get, entry.stored, limit)
        except RelayDown as exc:
            if isinstance(exc, TooLarge):
                self.refuse(entry, "too_large", str(exc))
            return None
        self.got(len(body))
        return body

    async def fetch(self, name: seal.Name, entry: Entry) -> tuple[str, bytes] | None:
        """A segment's author and lines, or None (refused, or the relay failed)."""
        body = await self.get(entry, seal.MAX_SEGMENT)
        if body is None:
            return None
        try:
            plain = seal.unseal(self.keys[name.epoch], entry.name, body, seal.MAX_SEGMENT)
            return seal.open_segment(self.keys[name.epoch], name, plain)
        except seal.Refused as exc:
            self.refuse(entry, exc.reason, str(exc))
            return None
