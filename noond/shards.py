"""What this node holds and serves: the summaries of its shard files, less what the operator
revoked (PROTOCOL.md §3: a revoked node's shards, ``<node>-import`` included, are neither
listed, served nor pulled; a departed node's stay shared, its memories are still everyone's)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from noon.core.collection import member_of
from noon.logging_setup import Condition
from noon.names import shard_file
from noon.store.serve import Summaries, Summary


def refused(shard: str, nodes: set[str]) -> bool:
    """Whether ``shard`` belongs to one of ``nodes``: its own, or its import shard."""
    return member_of(shard) in nodes


class Holdings:
    def __init__(self, directory: Path, node: str, revoked: Callable[[], set[str]]) -> None:
        self.dir = directory
        self.node = node
        self.own = directory / shard_file(node)
        self._summaries = Summaries(directory)
        self._revoked = revoked
        self._disk = Condition(logging.getLogger("noond"), every=60.0)
        self.on_stored: list[Callable[[], None]] = []
        """Called (on the event loop) after ops were stored here: the read model folds them."""

    def disk_full(self, exc: OSError) -> None:
        """A shard could not be stored: this node's disk is full. Said once, then at most once
        a minute, not on every push and pull that meets it."""
        self._disk.met(
            "this node's disk is full (%s): nothing more is stored; pushes are refused and "
            "pulls wait until space returns, then noond catches up by itself",
            exc.strerror or exc,
        )

    @property
    def disk_is_full(self) -> bool:
        """A shard could not be stored for want of space, and none was stored since."""
        return self._disk.since is not None

    def stored(self) -> None:
        """Ops were stored in a shard: if the disk was full, it has space again; whoever
        waits for new ops is told."""
        self._disk.ended("this node's disk has space again: storing shards again")
        for tell in self.on_stored:
            tell()

    def held(self) -> dict[str, Summary]:
        """Every shard served, with seq > 0, by node. Blocking I/O (a stat per shard)."""
        revoked = self._revoked()
        out = {}
        for node in self._summaries.nodes():
            if refused(node, revoked):
                continue
            s = self._summaries.get(node)
            if s.seq > 0:
                out[node] = s
        return out

    async def summaries(self) -> dict[str, Summary]:
        return await asyncio.to_thread(self.held)

    async def summary(self, node: str) -> Summary:
        return await asyncio.to_thread(self._summaries.get, node)

    def summary_now(self, node: str) -> Summary:
        """:meth:`summary` in the calling thread (blocking I/O: a stat, a read when it grew)."""
        return self._summaries.get(node)

    def path(self, node: str) -> Path:
        return self.dir / shard_file(node)
