"""Exchange with one member (PROTOCOL.md §6): compare digests; when they differ, compare
per-shard summaries (highest seq + digest of that op) and, per shard, pull what the member has
beyond ours, push our own shard beyond what it has, hand our own shard to recovery when it has
more of it than we do, and refuse (loudly) to merge a shard whose histories differ at the same
seq. Every member runs under its own lock, so a slow or misbehaving one harms no other.

Everything network-bound goes through :class:`~noond.client.Client`; a test gives it an
in-process transport to run exchanges without processes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Protocol

from noon.certs import CertError
from noon.core.collection import member_of
from noon.core.ops import valid_node_id
from noon.store import forgotten, receive, serve
from noon.store.readmodel.behind import full
from noond.client import PeerError, Unreachable
from noond.config import parse_address
from noond.membership import Member
from noond.pull import Puller
from noond.recovery import Recovery
from noond.revocations import MAX_RECORDS, cut_back
from noond.shards import refused
from noond.statefile import StateFile
from noond.stream_send import Streams
from noond.wire import (
    MAX_GOSSIP,
    Code,
    WireError,
    listing_root,
    parse_listing,
)
from noond.wiring import Wired, Wiring

log = logging.getLogger("noond")


class Suggest(Protocol):
    def __call__(
        self, address: str, node: str | None, source: str, *, via: str | None = None
    ) -> None: ...


class Exchanger(Wired):
    def __init__(self, wiring: Wiring, *, state: StateFile, suggest: Suggest) -> None:
        super().__init__(wiring)
        self.state = state
        self._suggest = suggest
        self.puller = Puller(wiring)
        self.streams = Streams(wiring)
        self.recovery = Recovery(wiring, self.puller, state, hold=wiring.settings.recovery_hold)
        self._locks: dict[str, asyncio.Lock] = {}
        self.waiting_for_floor: set[tuple[str, str]] = set()
        """(member, shard) pairs already logged as holding less than a damaged shard needs."""

    def _lock(self, node: str) -> asyncio.Lock:
        return self._locks.setdefault(node, asyncio.Lock())

    async def exchange(self, member: Member) -> None:
        """A full exchange with one member; its outcome only ever affects that member. While
        one ends on its pull budget having taken ops (this node is still behind the member),
        the next follows at once, each under a budget of its own (PROTOCOL.md §4), the
        member's lock let go in between (a push to it waiting meanwhile goes first). Then
        the streams of our own shards to it are opened, if they are not (PROTOCOL.md §5.1)."""
        while True:
            async with self._lock(member.node):
                behind = await self._guarded(member, self._sync(member))
            if not behind:
                break
            self.metrics.exchanges_followed.inc()
        await self._open_streams(member)

    async def push(self, member: Member, shard: str) -> None:
        """Push one of our own shards to ``member`` from the head it acknowledged: on the open
        stream when there is one (PROTOCOL.md §5.1), else by POST (a full exchange when that
        head is unknown or an own shard is being recovered)."""
        if not self.recovery.behind and await self.streams.send(member, shard):
            return
        async with self._lock(member.node):
            if self.recovery.behind or shard not in member.heads:
                await self._guarded(member, self._sync(member))
            else:
                await self._guarded(member, self._push_from(member, shard, member.heads[shard]))
        await self._open_streams(member)

    async def _open_streams(self, member: Member) -> None:
        """After a successful exchange or push by POST, open the streams the member lacks, so
        that the next write travels on one (a stream's opening is never on a write's path)."""
        if not self.recovery.behind and member.state == "alive" and not member.failures:
            await self.streams.open(member)

    async def _guarded(self, member: Member, work: Awaitable[bool | None]) -> bool:
        """Run ``work`` against ``member``, its failures counted and logged; what it returned
        when it succeeded (False when it failed)."""
        try:
            outcome = await work
        except Unreachable as exc:
            self.membership.failed(member)
            self.metrics.exchanges.labels("unreachable").inc()
            log.info("peer %s unreachable (%s): %s", member.node, member.state, exc)
        except PeerError as exc:
            member.error = str(exc)
            if exc.code == Code.IDENTITY:
                self.membership.failed(member)  # someone else answers there: it moved
            result = {
                Code.PROTOCOL: "incompatible",
                Code.FORBIDDEN: "refused",
                Code.IDENTITY: "refused",
            }.get(exc.code, "invalid")
            self.metrics.exchanges.labels(result).inc()
            if exc.code == Code.PROTOCOL:
                log.error("peer %s is incompatible: %s", member.node, exc)
            else:
                log.warning("exchange with %s failed: %s", member.node, exc)
        except receive.ReplicaError as exc:
            member.error = f"sent invalid ops: {exc}"
            self.metrics.exchanges.labels("invalid").inc()
            log.warning("peer %s sent invalid ops, nothing stored: %s", member.node, exc)
        except OSError as exc:  # this node's disk: full, or an entry that is not a file
            self.metrics.exchanges.labels("local_error").inc()
            if full(exc):
                self.holdings.disk_full(exc)
            else:
                log.error("exchange with %s stopped on a local file: %s", member.node, exc)
        else:
            self.membership.succeeded(member)
            self.metrics.exchanges.labels("ok").inc()
            return bool(outcome)
        return False

    async def refresh(self, members: list[Member], timeout: float) -> None:
        """Ask each member what it holds now (a digest, and its listing when the roots
        differ), all at once, for at most ``timeout`` seconds: what ``noon status`` shows as
        lag is then seconds old, not a round old. Stores nothing."""

        async def report(m: Member) -> None:
            local = await self.holdings.summaries()
            digest = await self.client.digest(m.address, expect=m.node)
            if digest.root == listing_root(local):
                heads = {n: s.seq for n, s in local.items()}
            else:
                listing = await self.client.get_json(m.address, "/shards", expect=m.node)
                heads = {n: s.seq for n, s in parse_listing(listing).items()}
            m.heads, m.reported_at = heads, time.time()

        tasks = [asyncio.create_task(report(m)) for m in members]
        if not tasks:
            return
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        for task in done:
            if task.exception() is not None:
                log.info("fresh report failed: %s", task.exception())

    async def _sync(self, m: Member) -> bool:
        """One exchange; whether it ended on its budget with more to take."""
        with self.puller.budgeted(m.node) as budget:
            await self._sync_within_budget(m)
        return budget.behind

    async def _sync_within_budget(self, m: Member) -> None:
        local = await self.holdings.summaries()
        members_hash: str | None = None
        revocations = self.signers.revocations
        revocations.reload()
        if not self.settings.digest and revocations.ca is not None:
            await self._revocations(m)
        if self.settings.digest:
            d = await self.client.digest(m.address, expect=m.node)
            members_hash = d.members
            if d.revocations not in ("", revocations.digest()):
                await self._revocations(m)
            if d.root == listing_root(local):
                m.heads = {n: s.seq for n, s in local.items()}
                m.reported_at = time.time()
                await self._gossip(m, members_hash)
                return
        if self.client.revision.get(m.node, 0) < self.client.speaks[1]:
            # Not known since this start, or older than ours: it may have been upgraded since
            # (a rolling upgrade, PROTOCOL.md §13.5); which revision it speaks decides what
            # is taken from it.
            await self.client.info(m.address, expect=m.node)
        listing = await self.client.get_json(m.address, "/shards", expect=m.node)
        try:
            remote = parse_listing(listing)
        except WireError as exc:
            raise PeerError(str(exc)) from None
        m.heads = {n: s.seq for n, s in remote.items()}
        m.reported_at = time.time()
        failure: Exception | None = None
        revoked = self.state.revoked
        for node in sorted(set(local) | set(remote)):
            if refused(node, revoked) or (m.node, node) in self.forks:
                continue
            mine = local.get(node) or serve.Summary(node, 0, 0)
            theirs = remote.get(node) or serve.Summary(node, 0, 0)
            try:
                await self._reconcile(m, node, mine, theirs)
            except (PeerError, receive.ReplicaError) as exc:
                # One unusable shard must not keep the member's other shards from syncing.
                log.warning("shard %s with %s: %s", node, m.node, exc)
                failure = failure or exc
        await self._gossip(m, members_hash)
        if failure is not None:
            raise failure

    async def _reconcile(
        self, m: Member, node: str, mine: serve.Summary, theirs: serve.Summary
    ) -> None:
        floor = forgotten.load(self.dir).floor.get(node, 0)
        if mine.seq < theirs.seq < floor:
            # Our copy lost part of its file since we collected from it; this member holds
            # less than we once did, and taking it would end the shard on an op we removed.
            # Wait for a member holding at least the floor (noon/store/forgotten.py).
            if (m.node, node) not in self.waiting_for_floor:
                self.waiting_for_floor.add((m.node, node))
                log.warning(
                    "shard %s here ends at seq %d, below seq %d held before a "
                    "collection (damaged?); %s holds only seq %d: waiting for a member "
                    "that holds more",
                    node,
                    mine.seq,
                    floor,
                    m.node,
                    theirs.seq,
                )
            return
        own = member_of(node) == self.node  # our shard, or our import shard
        if theirs.seq == mine.seq:
            if own:
                self.recovery.settled(m.node, node)
            if mine.seq and theirs.digest != mine.digest:
                self.forks.record(
                    m.node,
                    node,
                    f"op {node}:{mine.seq} differs: digest "
                    f"{mine.digest:016x} here, {theirs.digest:016x} there",
                )
        elif own:
            if theirs.seq < mine.seq:
                self.recovery.settled(m.node, node)
                await self._push(m, node, theirs)
            else:
                await self.recovery.claimed(m, node, mine, theirs)
        elif theirs.seq > mine.seq and self.puller.may_pull(m, node):
            await self.puller.pull(m, node, mine)

    async def _revocations(self, m: Member) -> None:
        """Take ``m``'s revocations (PROTOCOL.md §13.6): each counts once it verifies against
        the CA here, and cuts this node's copies of the revoked author's shards back to its
        cut-off."""
        obj = await self.client.get_json(m.address, "/revocations", expect=m.node)
        records = obj.get("records")
        for text in records[:MAX_RECORDS] if isinstance(records, list) else []:
            try:
                record = self.signers.revocations.add(str(text).encode())
            except CertError as exc:
                self.metrics.rejected.labels("revocation").inc()
                log.warning("%s offered a revocation that is not the CA's: %s", m.node, exc)
                continue
            if record is not None:
                cut = await asyncio.to_thread(cut_back, self.dir, record)
                log.warning(
                    "%s is revoked by the CA from stamp %d on (learnt from %s): its ops after "
                    "that are refused; %d held here were dropped",
                    record.node,
                    record.after,
                    m.node,
                    cut,
                )

    async def _gossip(self, m: Member, members_hash: str | None) -> None:
        if members_hash is not None and members_hash == m.members_hash:
            return
        obj = await self.client.get_json(m.address, "/membership", expect=m.node)
        entries = obj.get("peers")
        if not isinstance(entries, list):
            raise PeerError(f"{m.node}/membership: 'peers' is not a list")
        for e in entries[:MAX_GOSSIP]:
            if not isinstance(e, dict):
                continue
            node, address = e.get("node"), e.get("address")
            if not valid_node_id(node) or not isinstance(address, str):
                continue
            try:
                address = parse_address(address)
            except ValueError:
                continue
            if node == m.node:
                continue
            self._suggest(address, node, "gossip", via=m.node)
        if members_hash is not None:
            m.members_hash = members_hash

    # -- pushing the own shard --------------------------------------------------------------

    async def _push(self, m: Member, shard: str, theirs: serve.Summary) -> None:
        """Send one of our own shards beyond what ``m`` holds, after checking that what it
        holds is our history (same op at its highest seq)."""
        after = theirs.seq
        if after:
            mine = await asyncio.to_thread(serve.digest_of, self.holdings.path(shard), after)
            if mine is not None and mine != theirs.digest:
                self.forks.record(
                    m.node,
                    shard,
                    f"peer holds a different op {shard}:"
                    f"{after} ({theirs.digest:016x}, here {mine:016x})",
                )
                return
        await self._push_from(m, shard, after)

    async def _push_from(self, m: Member, shard: str, after: int) -> None:
        if (m.node, shard) in self.forks:
            return
        own = self.holdings.path(shard)
        check = await asyncio.to_thread(serve.digest_of, own, after) if after else None
        checks = await asyncio.to_thread(serve.recent_digests, own, after) if after else []
        while True:
            page = await asyncio.to_thread(
                serve.read_after, own, after, max_bytes=self.settings.page_bytes
            )
            if not page.ops:
                return
            try:
                result = await self.client.push(
                    m.address,
                    expect=m.node,
                    shard=shard,
                    after=after,
                    check=check,
                    body=page.body,
                    checks=checks,
                )
            except PeerError as exc:
                self.metrics.pushes.labels(exc.code).inc()
                if exc.code == Code.FORK:
                    self.forks.record(m.node, shard, str(exc))
                    return
                if exc.code == Code.GAP:
                    m.heads.pop(shard, None)  # the next round compares summaries again
                raise
            self.metrics.pushes.labels("ok").inc()
            self.metrics.ops_pushed.inc(page.ops)
            m.heads[shard] = result.head
            after, check, checks = page.last, None, []
            if not page.more:
                return

    # -- pulling ----------------------------------------------------------------------------
