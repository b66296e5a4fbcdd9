"""Own-shard recovery (PROTOCOL.md §6.1): a member lists more of one of this node's own shards
(``<node>``, or ``<node>-import`` that ``noon import`` writes here) than this node holds. That
is what a disk loss or a restored backup looks like, and also what a lying member looks like;
nothing the member sends can tell the two apart. So:

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
from contextlib import aclosing
from dataclasses import dataclass

from noon.daemon_link import bodies
from noon.store import receive, serve
from noon.store.errors import ForkDetected
from noon.store.peerstate import Confirmation
from noon.store.shard import HeldLock
from noond.budget import BudgetSpent
from noond.client import PeerError
from noond.membership import Member
from noond.pull import Puller
from noond.statefile import StateFile
from noond.wire import Code
from noond.wiring import Wired, Wiring

log = logging.getLogger("noond")

PROBE_BYTES = 1024


@dataclass(frozen=True)
class Claim:
    """A member holds one of our own shards up to ``seq`` (digest of that op), beyond
    ``held`` here; its history matched ours up to ``held`` when it was checked."""

    shard: str
    seq: int
    digest: int
    held: int

    def report(self, peer: str, confirmed: bool) -> bodies.Claim:
        return bodies.Claim(
            peer=peer,
            shard=self.shard,
            seq=self.seq,
            digest=f"{self.digest:016x}",
            held=self.held,
            confirmed=confirmed,
        )


class Recovery(Wired):
    """Own-shard claims, checked and recorded, and the recoveries the operator confirmed."""

    def __init__(self, wiring: Wiring, puller: Puller, state: StateFile, hold: float) -> None:
        super().__init__(wiring)
        self.puller = puller
        self.state = state
        self.hold = hold
        self.claims: dict[tuple[str, str], Claim] = {}
        """(member, own shard) -> what it claims beyond our head."""
        self.behind = False
        """A confirmed recovery is under way."""

    def reports(self) -> tuple[bodies.Claim, ...]:
        return tuple(
            c.report(peer, peer in self.state.recover)
            for (peer, _), c in sorted(self.claims.items())
        )

    def settled(self, member: str, shard: str) -> None:
        """``member`` no longer claims more of ``shard`` than we hold."""
        self.claims.pop((member, shard), None)

    async def claimed(
        self, m: Member, shard: str, mine: serve.Summary, theirs: serve.Summary
    ) -> None:
        """``m`` lists more of our own ``shard`` than we hold: check, record, and recover only
        what the operator confirmed. ``mine`` was read when the exchange began: local writers
        (and the pushes that carried their ops to ``m`` meanwhile) may have moved past it, so
        the shard is read again before anything is called a claim."""
        mine = await self.holdings.summary(shard)
        if mine.seq >= theirs.seq:
            self.settled(m.node, shard)  # it only lagged our own writers; nothing is missing
            return
        known = self.claims.get((m.node, shard))
        if known is None or (known.seq, known.digest, known.held) != (
            theirs.seq,
            theirs.digest,
            mine.seq,
        ):
            if not await self._same_history(m, shard, mine):
                return
            self.claims[(m.node, shard)] = Claim(shard, theirs.seq, theirs.digest, mine.seq)
            self.metrics.rejected.labels("own_shard_claim").inc()
            log.warning(
                "member %s holds this node's own shard %s up to seq %d, this machine only up to "
                "seq %d. If this machine lost data or was restored from a backup, run `noon "
                "peers recover %s` to take the missing ops back; if it did not, %s is lying: "
                "`noon peers revoke %s`. Nothing is taken until then.",
                m.node,
                shard,
                theirs.seq,
                mine.seq,
                m.node,
                m.node,
                m.node,
            )
        confirmation = self.state.recover.get(m.node)
        if confirmation is not None:
            await self._recover(m, self.claims[(m.node, shard)], confirmation)

    async def _same_history(self, m: Member, shard: str, mine: serve.Summary) -> bool:
        """A small read beyond our head carrying our digests: False when ``m``'s history of
        the shard differs from ours (recorded as a fork) or it cannot show more."""
        path = self.holdings.path(shard)
        checks = await asyncio.to_thread(serve.recent_digests, path, mine.seq) if mine.seq else []
        try:
            page = await self.client.pull(
                m.address,
                expect=m.node,
                shard=shard,
                after=mine.seq,
                check=mine.digest if mine.seq else None,
                limit=PROBE_BYTES,
                checks=checks,
            )
        except PeerError as exc:
            if exc.code == Code.FORK:
                self.forks.record(m.node, shard, str(exc))
                return False
            raise
        ops = await asyncio.to_thread(receive.parse_ops, page.body, shard, max_ops=1 << 20)
        if not ops or ops[0][1].seq <= mine.seq:
            raise PeerError(f"{m.node} lists more of {shard} than it serves")
        return True

    async def _recover(self, m: Member, claim: Claim, confirmation: Confirmation) -> None:
        through, digest = claim.seq, f"{claim.digest:016x}"
        if claim.shard == self.node:
            if confirmation.through is None:
                # Confirmed without knowing the claim: pin it now, so it cannot grow later.
                confirmation = Confirmation(claim.seq, digest, confirmation.at)
                self.state.confirm(m.node, confirmation)
            through, digest = confirmation.through or claim.seq, confirmation.digest or digest
        if claim.seq < through:
            log.warning(
                "recovery of %s from %s: it holds seq %d now, less than the %d confirmed; waiting",
                claim.shard,
                m.node,
                claim.seq,
                through,
            )
            return
        log.warning("recovering own shard %s from %s up to seq %d", claim.shard, m.node, through)
        self.behind = True
        held: HeldLock | None = None
        try:
            held = await asyncio.to_thread(HeldLock, self.holdings.path(claim.shard))
            done = await self._take(m, claim.shard, held, through, digest)
        finally:
            if held is not None:
                held.release()
            self.behind = False
        if done:
            self.claims.pop((m.node, claim.shard), None)
            if not any(peer == m.node for peer, _ in self.claims):
                self.state.confirm(m.node, None)
            log.warning("own shard %s recovered from %s up to seq %d", claim.shard, m.node, through)

    async def _take(
        self, m: Member, shard: str, held: HeldLock, through: int, digest: str | None
    ) -> bool:
        """Under the shard's lock, for at most ``hold`` seconds: append ``m``'s ops up to
        ``through``. True when the shard reached it."""
        path = self.holdings.path(shard)
        deadline = time.monotonic() + self.hold
        # A writer may have appended since the summary: start from the shard as it is now
        # (a reused seq then shows up as a fork, never merged).
        now = await self.holdings.summary(shard)
        after = now.seq
        checks = await asyncio.to_thread(serve.recent_digests, path, after) if after else []
        check = now.digest if after else None
        allowed, verify = await self.puller.verifier(m, shard)
        if not allowed:
            return False
        try:
            async with aclosing(self.puller.pages(m, shard, after, check, checks)) as pages:
                async for cursor, _, ops in pages:
                    kept = [(line, op) for line, op in ops if op.seq <= through]
                    if kept:
                        last = kept[-1][1]
                        if last.seq == through and digest and f"{last.digest:016x}" != digest:
                            raise PeerError(
                                f"{m.node} serves another op {shard}:{through} than the one it "
                                "claimed when recovery was confirmed; nothing more is taken"
                            )
                        done = await asyncio.to_thread(
                            receive.append,
                            self.dir,
                            shard,
                            kept,
                            fsync=self.settings.fsync,
                            held=held,
                            allow_skip=True,
                            consumed=cursor,
                            check=verify,
                        )
                        self.metrics.ops_recovered.inc(done.appended)
                        self.holdings.stored()
                    if (kept and kept[-1][1].seq >= through) or len(kept) < len(ops):
                        return True
                    if time.monotonic() > deadline:
                        log.info("recovery from %s paused (lock held long enough); goes on", m.node)
                        return False
        except ForkDetected as exc:
            self.forks.record(m.node, shard, str(exc))
            return False
        except BudgetSpent:
            return False
        except PeerError as exc:
            if exc.code == Code.FORK:
                self.forks.record(m.node, shard, str(exc))
                return False
            raise
        return (await self.holdings.summary(shard)).seq >= through
