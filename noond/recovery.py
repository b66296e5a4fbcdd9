"""Own-shard recovery (PROTOCOL.md §6.1): a member holds more of this node's own shard than this
node does (the disk was lost, or a backup restored), so the missing ops are pulled back into
the own shard, verbatim, under the shard's lock, so that local writers wait instead of reusing
seqs that already exist elsewhere."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from noon.store import receive, serve
from noon.store.errors import ForkDetected
from noon.store.shard import HeldLock
from noond.client import PeerError
from noond.membership import Member
from noond.wire import Code

if TYPE_CHECKING:
    from noond.exchange import Exchanger

log = logging.getLogger("noond")


class Recovery:
    def __init__(self, exchanger: Exchanger) -> None:
        self.ex = exchanger
        self.behind = False
        """A member holds more of the own shard; nothing of it is pushed meanwhile."""

    async def recover(self, m: Member) -> None:
        ex = self.ex
        own = ex.holdings.own
        self.behind = True
        log.warning(
            "own shard %s is behind peer %s's copy: recovering it; local writers wait until it "
            "has caught up",
            own.name,
            m.node,
        )
        held: HeldLock | None = None
        try:
            held = await asyncio.to_thread(HeldLock, own)
            # A writer may have appended between the summary and the lock: start from the
            # shard as it is now (a reused seq then shows up as a fork, never merged).
            now = await ex.holdings.summary(ex.node)
            after, check = now.seq, (now.digest if now.seq else None)
            checks = await asyncio.to_thread(serve.recent_digests, own, after) if after else []
            async for cursor, _, ops in ex.pages(m, ex.node, after, check, checks):
                if not ops:
                    continue
                try:
                    done = await asyncio.to_thread(
                        receive.append,
                        ex.dir,
                        ex.node,
                        ops,
                        fsync=ex.settings.fsync,
                        held=held,
                        allow_skip=True,
                        consumed=cursor,
                    )
                except ForkDetected as exc:
                    ex.forks.record(m.node, ex.node, str(exc))
                    return
                ex.metrics.ops_recovered.inc(done.appended)
        except PeerError as exc:
            if exc.code == Code.FORK:
                ex.forks.record(m.node, ex.node, str(exc))
                return
            raise
        finally:
            if held is not None:
                held.release()
            self.behind = False
