"""What this node holds and serves: the summaries of its shard files, less what the operator
revoked (PROTOCOL.md §3: a revoked node's shards, ``<node>-import`` included, are neither
listed, served nor pulled; a departed node's stay shared, its memories are still everyone's)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from noon.core.collection import member_of
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

    def path(self, node: str) -> Path:
        return self.dir / shard_file(node)
