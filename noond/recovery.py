"""Own-shard recovery (PROTOCOL.md §6.1): a member lists more of this node's own shard than this
node holds. That is what a disk loss or a restored backup looks like, and also what a lying
member looks like; nothing the member sends can tell the two apart. So:

1. The member must first prove it holds *this* history: a small read of the own shard beyond
   our head, carrying the digests of our newest ops (``check``, ``checks``). A differing op is
   a fork, reported as such; nothing else happens.
2. A claim that passes is only recorded (``/status`` ``claims``, gauge
   ``noond_own_shard_behind``, a warning naming the member and what to do). Nothing is written.
3. Only when the operator confirms that this machine lost data (``noon peers recover NODE``,
   written to the state file) are the missing ops taken from that member, verbatim, up to what
   it claimed when the operator confirmed (pinned with its digest, so a member raising its
   claim afterwards gets nothing more), under the own shard's lock (so local writers wait
   instead of reusing seqs) for at most ``hold`` seconds at a time; an unfinished recovery goes
   on at the next exchange.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from noon.store import receive, serve
from noon.store.errors import ForkDetected
from noon.store.peerstate import Confirmation
from noon.store.shard import HeldLock
from noond.budget import BudgetSpent
from noond.client import PeerError
from noond.membership import Member
from noond.statefile import StateFile
from noond.wire import Code

if TYPE_CHECKING:
    from noond.exchange import Exchanger

log = logging.getLogger("noond")

PROBE_BYTES = 1024


@dataclass(frozen=True)
class Claim:
    """A member holds the own shard up to ``seq`` (digest of that op), beyond ``held`` here;
    its history matched ours up to ``held`` when it was checked."""

    seq: int
    digest: int
    held: int

    def as_json(self, peer: str, confirmed: bool) -> dict[str, object]:
        return {
            "peer": peer,
            "seq": self.seq,
            "digest": f"{self.digest:016x}",
            "held": self.held,
            "confirmed": confirmed,
        }


class Recovery:
    def __init__(self, exchanger: Exchanger, state: StateFile, hold: float) -> None:
        self.ex = exchanger
        self.state = state
        self.hold = hold
        self.claims: dict[str, Claim] = {}
        self.behind = False
        """A confirmed recovery is under way."""

    def as_json(self) -> list[dict[str, object]]:
        return [
            c.as_json(peer, peer in self.state.recover) for peer, c in sorted(self.claims.items())
        ]

    def settled(self, member: str) -> None:
        """``member`` no longer claims more than we hold."""
        self.claims.pop(member, None)

    async def claimed(self, m: Member, mine: serve.Summary, theirs: serve.Summary) -> None:
        """``m`` lists more of the own shard than we hold: check, record, and recover only what
        the operator confirmed."""
        known = self.claims.get(m.node)
        if known is None or (known.seq, known.digest, known.held) != (
            theirs.seq,
            theirs.digest,
            mine.seq,
        ):
            if not await self._same_history(m, mine):
                return
            self.claims[m.node] = Claim(theirs.seq, theirs.digest, mine.seq)
            self.ex.metrics.rejected.labels("own_shard_claim").inc()
            log.warning(
                "member %s holds this node's own shard %s up to seq %d, this machine only up to "
                "seq %d. If this machine lost data or was restored from a backup, run `noon "
                "peers recover %s` to take the missing ops back; if it did not, %s is lying: "
                "`noon peers revoke %s`. Nothing is taken until then.",
                m.node,
                self.ex.holdings.own.name,
                theirs.seq,
                mine.seq,
                m.node,
                m.node,
                m.node,
            )
        confirmation = self.state.recover.get(m.node)
        if confirmation is not None:
            await self._recover(m, self.claims[m.node], confirmation)

    async def _same_history(self, m: Member, mine: serve.Summary) -> bool:
        """A small read beyond our head carrying our digests: False when ``m``'s history of
        the own shard differs from ours (recorded as a fork) or it cannot show more."""
        own = self.ex.holdings.own
        checks = await asyncio.to_thread(serve.recent_digests, own, mine.seq) if mine.seq else []
        try:
            page = await self.ex.client.pull(
                m.address,
                expect=m.node,
                shard=self.ex.node,
                after=mine.seq,
                check=mine.digest if mine.seq else None,
                limit=PROBE_BYTES,
                checks=checks,
            )
        except PeerError as exc:
            if exc.code == Code.FORK:
                self.ex.forks.record(m.node, self.ex.node, str(exc))
                return False
            raise
        ops = await asyncio.to_thread(receive.parse_ops, page.body, self.ex.node, max_ops=1 << 20)
        if not ops or ops[0][1].seq <= mine.seq:
            raise PeerError(f"{m.node} lists more of {self.ex.node} than it serves")
        return True

    async def _recover(self, m: Member, claim: Claim, confirmation: Confirmation) -> None:
        ex = self.ex
        if confirmation.through is None:
            # Confirmed without knowing the claim: pin it now, so it cannot grow later.
            confirmation = Confirmation(claim.seq, f"{claim.digest:016x}", confirmation.at)
            self.state.confirm(m.node, confirmation)
        through = confirmation.through or claim.seq
        if claim.seq < through:
            log.warning(
                "recovery from %s: it holds seq %d now, less than the %d confirmed; waiting",
                m.node,
                claim.seq,
                through,
            )
            return
        log.warning("recovering own shard %s from %s up to seq %d", ex.node, m.node, through)
        self.behind = True
        held: HeldLock | None = None
        try:
            held = await asyncio.to_thread(HeldLock, ex.holdings.own)
            done = await self._take(m, held, through, confirmation.digest)
        finally:
            if held is not None:
                held.release()
            self.behind = False
        if done:
            self.state.confirm(m.node, None)
            self.claims.pop(m.node, None)
            log.warning("own shard %s recovered from %s up to seq %d", ex.node, m.node, through)

    async def _take(self, m: Member, held: HeldLock, through: int, digest: str | None) -> bool:
        """Under the own shard's lock, for at most ``hold`` seconds: append ``m``'s ops up to
        ``through``. True when the shard reached it."""
        ex = self.ex
        own = ex.holdings.own
        deadline = time.monotonic() + self.hold
        # A writer may have appended since the summary: start from the shard as it is now
        # (a reused seq then shows up as a fork, never merged).
        now = await ex.holdings.summary(ex.node)
        after = now.seq
        checks = await asyncio.to_thread(serve.recent_digests, own, after) if after else []
        check = now.digest if after else None
        try:
            async for cursor, _, ops in ex.pages(m, ex.node, after, check, checks):
                kept = [(line, op) for line, op in ops if op.seq <= through]
                if kept:
                    last = kept[-1][1]
                    if last.seq == through and digest and f"{last.digest:016x}" != digest:
                        raise PeerError(
                            f"{m.node} serves another op {ex.node}:{through} than the one it "
                            "claimed when recovery was confirmed; nothing more is taken"
                        )
                    done = await asyncio.to_thread(
                        receive.append,
                        ex.dir,
                        ex.node,
                        kept,
                        fsync=ex.settings.fsync,
                        held=held,
                        allow_skip=True,
                        consumed=cursor,
                    )
                    ex.metrics.ops_recovered.inc(done.appended)
                if (kept and kept[-1][1].seq >= through) or len(kept) < len(ops):
                    return True
                if time.monotonic() > deadline:
                    log.info("recovery from %s paused (lock held long enough); goes on", m.node)
                    return False
        except ForkDetected as exc:
            ex.forks.record(m.node, ex.node, str(exc))
            return False
        except BudgetSpent:
            return False
        except PeerError as exc:
            if exc.code == Code.FORK:
                ex.forks.record(m.node, ex.node, str(exc))
                return False
            raise
        return (await ex.holdings.summary(ex.node)).seq >= through
