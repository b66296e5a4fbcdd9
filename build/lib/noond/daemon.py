"""The daemon: serve every shard held, run anti-entropy rounds with every member, push the own
shard shortly after it changes, admit discovered candidates, keep the state file.

Exchange with one member (PROTOCOL.md, "Exchange"): compare digests; when they differ, compare
per-shard summaries (highest seq + digest of that op) and, per shard, pull what the member has
beyond ours, push our own shard beyond what it has, recover our own shard when it has more of it
than we do, and refuse (loudly) to merge a shard whose histories differ at the same seq. Every
member runs independently and under its own lock, so a slow or misbehaving one harms no other.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from noon.certs import CertError, cert_info, client_ssl_context, server_ssl_context
from noon.config import ConfigError
from noon.core.ops import valid_node_id
from noon.names import shard_file
from noon.store import forgotten, peerstate, replica
from noon.store.store import ForkDetected, Store
from noond import discovery
from noond.client import Client, PeerError, Unreachable
from noond.collection import Collector
from noond.config import PROTOCOL, DaemonConfig, parse_address, split_address
from noond.membership import Candidate, Member, Membership
from noond.metrics import Metrics
from noond.server import build_app, build_metrics_app

log = logging.getLogger("noond")

MAX_LISTING = 100_000
MAX_GOSSIP = 1000
MAX_OPS_PER_PAGE = 1_000_000


class Daemon:
    def __init__(self, config: DaemonConfig) -> None:
        self.config = config
        self.node = config.node
        self.dir = config.store.dir
        self.own = self.dir / shard_file(self.node)
        self.metrics = Metrics()
        self.metrics.info.labels(self.node, str(PROTOCOL)).set(1)
        self.membership = Membership(
            self.node,
            suspect_after=config.suspect_after,
            dead_after=config.dead_after,
            dead_retry=config.dead_retry,
        )
        self.advertise = config.advertise
        self.membership.self_addresses.add(config.advertise)
        self._summaries = replica.Summaries(self.dir)
        self.forks: dict[tuple[str, str], str] = {}
        self._refetching: dict[str, asyncio.Lock] = {}
        """Per shard: a re-fetch under way (two members' exchanges may both find the gap)."""
        self.waiting_for_floor: set[tuple[str, str]] = set()
        """(member, shard) pairs already logged as holding less than a damaged shard needs."""
        self.revoked: set[str] = set(config.revoked)
        self.departed: set[str] = set(config.departed)
        self.behind = False
        self.started = time.monotonic()
        self.rounds = 0
        self._locks: dict[str, asyncio.Lock] = {}
        self._admit_wake = asyncio.Event()
        self._round_lock = asyncio.Lock()
        self._pushing: dict[str, asyncio.Task[None]] = {}
        self._repush: set[str] = set()
        self._state_ident: tuple[int, int] | None = None
        self._state_loaded = False
        self._saved_members: dict[str, str] = {}
        self._store: Store | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self._busy: set[str] = set()
        self._sem = asyncio.Semaphore(config.concurrency)
        self._cand_sem = asyncio.Semaphore(config.concurrency)
        """Candidates have their own slots: a flood of bogus addresses never delays members."""
        self.collector = Collector(
            self.dir,
            self.node,
            config.state_path,
            config.forget_after,
            self.metrics,
            collect_unseen=config.collect_unseen,
        )
        self._runner: web.AppRunner | None = None
        self._metrics_runner: web.AppRunner | None = None
        self.port = config.listen_port
        self.server_ssl = None
        client_ssl = None
        if config.tls:
            cert, key, ca = config.tls_files()
            try:
                self.server_ssl = server_ssl_context(cert, key, ca)
                client_ssl = client_ssl_context(cert, key, ca)
                for label, path in (("node", cert), ("ca", ca)):
                    self.metrics.cert_expiry.labels(label).set(
                        cert_info(path).not_after.timestamp()
                    )
            except CertError as exc:
                raise ConfigError(
                    f"TLS files for node {self.node!r}: {exc}. Create them with `noon certs "
                    f"init` and `noon certs issue {self.node}` (or set NOOND_TLS_CERT, "
                    "NOOND_TLS_KEY, NOOND_TLS_CA)"
                ) from None
        self.client = Client(
            node=self.node,
            advertise=config.advertise,
            source_ip=config.source_ip,
            ssl_context=client_ssl,
            timeout=config.timeout,
            max_body=config.max_body,
            metrics=self.metrics,
        )

    # -- state shared with the server ----------------------------------------------------

    @property
    def ignored(self) -> set[str]:
        return self.revoked | self.departed

    async def summaries(self) -> dict[str, replica.Summary]:
        return await asyncio.to_thread(self._held)

    def _held(self) -> dict[str, replica.Summary]:
        # A departed node's shard stays shared (its memories are still yours); a revoked one's
        # is neither listed, served nor pulled.
        out = {}
        for node in self._summaries.nodes():
            if node in self.revoked:
                continue
            s = self._summaries.get(node)
            if s.seq > 0:
                out[node] = s
        return out

    async def summary(self, node: str) -> replica.Summary:
        return await asyncio.to_thread(self._summaries.get, node)

    @staticmethod
    def root(summaries: dict[str, replica.Summary]) -> str:
        h = hashlib.sha256()
        for node in sorted(summaries):
            s = summaries[node]
            h.update(f"{node} {s.seq} {s.digest:016x}\n".encode())
        return h.hexdigest()[:32]

    def membership_payload(self) -> list[dict[str, str]]:
        entries = [{"node": self.node, "address": self.advertise}]
        entries += [
            {"node": m.node, "address": m.address}
            for m in sorted(self.membership.members.values(), key=lambda m: m.node)
            if m.state != "dead" and m.node not in self.ignored
        ]
        return entries

    def members_hash(self) -> str:
        h = hashlib.sha256()
        for e in self.membership_payload():
            h.update(f"{e['node']} {e['address']}\n".encode())
        return h.hexdigest()[:16]

    def suggest(self, address: str, node: str | None, source: str) -> None:
        self.membership.suggest(address, node, source)
        if self.membership.due_candidates():
            self._admit_wake.set()

    def record_fork(self, peer: str, shard: str, message: str) -> None:
        if (peer, shard) not in self.forks:
            self.metrics.forks.inc()
            log.error(
                "FORK DETECTED on shard %s (with peer %s): %s. This node refuses to merge that "
                "shard with that peer until the operator resolves it; see `noon doctor`.",
                shard,
                peer,
                message,
            )
        self.forks[(peer, shard)] = message
        self.metrics.forked_shards.set(len({s for _, s in self.forks}))

    async def graph(self) -> dict[str, Any]:
        return await asyncio.to_thread(self._graph)

    def _graph(self) -> dict[str, Any]:
        if self._store is None:
            self._store = Store(self.config.store)
        store = self._store
        store.refresh()
        elements = []
        for key in sorted(store.fold.elements):
            el = store.fold.elements[key]
            elements.append(
                {
                    "el": list(key),
                    "winner": [el.winner.node, el.winner.seq],
                    "val": el.winner.val,
                    "heads": sorted([list(h) for h in el.heads]) if el.heads else None,
                }
            )
        return {"node": self.node, "frontier": store.fold.frontier(), "elements": elements}

    def update_gauges(self) -> None:
        counts = self.membership.counts()
        for state, n in counts.items():
            self.metrics.peers.labels(state).set(n)
        self.metrics.candidates.set(len(self.membership.candidates))
        held = self._held()
        self.metrics.shards.set(len(held))
        own = held.get(self.node)
        self.metrics.shard_seq.set(own.seq if own else 0)
        self.metrics.behind.set(1 if self.behind else 0)
        self.metrics.peer_missing.clear()
        for m in self.membership.members.values():
            missing = sum(max(0, s.seq - m.heads.get(node, 0)) for node, s in held.items())
            self.metrics.peer_missing.labels(m.node).set(missing)

    # -- operator state ------------------------------------------------------------------

    def reload_state(self) -> None:
        path = self.config.state_path
        try:
            st = path.stat()
            ident: tuple[int, int] | None = (st.st_ino, st.st_mtime_ns)
        except FileNotFoundError:
            ident = None
        if ident != self._state_ident or not self._state_loaded:
            self._state_ident = ident
            self._state_loaded = True
            self._load_state(path)

    def _load_state(self, path: Path) -> None:
        try:
            state = peerstate.load(path)
        except peerstate.StateError as exc:
            log.error("state file unusable, keeping the previous revocations: %s", exc)
            return
        self.revoked = set(self.config.revoked) | state.revoked
        self.departed = set(self.config.departed) | state.departed
        self.membership.ignore(self.ignored)
        for node, address in state.members.items():
            if node not in self.membership.members:
                with contextlib.suppress(ValueError):
                    self.membership.suggest(parse_address(address), node, "state")
        self._saved_members = dict(state.members)

    def save_members(self) -> None:
        members = {m.node: m.address for m in self.membership.members.values()}
        if members == self._saved_members:
            return

        def change(state: peerstate.PeerState) -> None:
            state.members = members

        try:
            peerstate.update(self.config.state_path, change)
        except (OSError, peerstate.StateError) as exc:
            log.error("cannot save the state file: %s", exc)
            return
        self._saved_members = members
        st = self.config.state_path.stat()
        self._state_ident = (st.st_ino, st.st_mtime_ns)

    # -- exchange ------------------------------------------------------------------------

    def _lock(self, node: str) -> asyncio.Lock:
        return self._locks.setdefault(node, asyncio.Lock())

    async def exchange(self, member: Member) -> None:
        """A full exchange with one member; its outcome only ever affects that member."""
        async with self._lock(member.node):
            await self._guarded(member, self._sync(member))

    async def _guarded(self, member: Member, work: Any) -> None:
        try:
            await work
        except Unreachable as exc:
            self.membership.failed(member)
            self.metrics.exchanges.labels("unreachable").inc()
            log.info("peer %s unreachable (%s): %s", member.node, member.state, exc)
        except PeerError as exc:
            member.error = str(exc)
            if exc.code == "identity":
                self.membership.failed(member)  # someone else answers there: it moved
            result = {
                "protocol": "incompatible",
                "forbidden": "refused",
                "identity": "refused",
            }.get(exc.code, "invalid")
            self.metrics.exchanges.labels(result).inc()
            if exc.code == "protocol":
                log.error("peer %s is incompatible: %s", member.node, exc)
            else:
                log.warning("exchange with %s failed: %s", member.node, exc)
        except replica.ReplicaError as exc:
            member.error = f"sent invalid ops: {exc}"
            self.metrics.exchanges.labels("invalid").inc()
            log.warning("peer %s sent invalid ops, nothing stored: %s", member.node, exc)
        else:
            self.membership.succeeded(member)
            self.metrics.exchanges.labels("ok").inc()

    async def _sync(self, m: Member) -> None:
        local = await self.summaries()
        members_hash = None
        if self.config.digest:
            d = await self.client.get_json(m.address, "/shards/digest", expect=m.node)
            members_hash = d.get("members")
            if d.get("root") == self.root(local):
                m.heads = {n: s.seq for n, s in local.items()}
                m.reported_at = time.time()
                await self._gossip(m, members_hash)
                return
        listing = await self.client.get_json(m.address, "/shards", expect=m.node)
        remote = _parse_listing(listing)
        m.heads = {n: s.seq for n, s in remote.items()}
        m.reported_at = time.time()
        failure: Exception | None = None
        for node in sorted(set(local) | set(remote)):
            if node in self.revoked or (m.node, node) in self.forks:
                continue
            mine = local.get(node) or replica.Summary(node, 0, 0)
            theirs = remote.get(node) or replica.Summary(node, 0, 0)
            try:
                await self._reconcile(m, node, mine, theirs)
            except (PeerError, replica.ReplicaError) as exc:
                # One unusable shard must not keep the member's other shards from syncing.
                log.warning("shard %s with %s: %s", node, m.node, exc)
                failure = failure or exc
        await self._gossip(m, members_hash)
        if failure is not None:
            raise failure

    async def _reconcile(
        self, m: Member, node: str, mine: replica.Summary, theirs: replica.Summary
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
        if theirs.seq == mine.seq:
            if mine.seq and theirs.digest != mine.digest:
                self.record_fork(
                    m.node,
                    node,
                    f"op {node}:{mine.seq} differs: digest "
                    f"{mine.digest:016x} here, {theirs.digest:016x} there",
                )
        elif node == self.node:
            if theirs.seq < mine.seq:
                await self._push(m, theirs)
            else:
                await self._pull(m, node, mine, own=True)
        elif theirs.seq > mine.seq:
            await self._pull(m, node, mine)

    async def _gossip(self, m: Member, members_hash: Any) -> None:
        if isinstance(members_hash, str) and members_hash == m.members_hash:
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
            self.suggest(address, node, "gossip")
        if isinstance(members_hash, str):
            m.members_hash = members_hash

    async def _push(self, m: Member, theirs: replica.Summary) -> None:
        """Send our own shard beyond what ``m`` holds, after checking that what it holds is
        our history (same op at its highest seq)."""
        after = theirs.seq
        if after:
            mine = await asyncio.to_thread(replica.digest_at, self.own, after)
            if mine is not None and mine != theirs.digest:
                self.record_fork(
                    m.node,
                    self.node,
                    f"peer holds a different op {self.node}:"
                    f"{after} ({theirs.digest:016x}, here {mine:016x})",
                )
                return
        await self._push_from(m, after)

    async def _push_from(self, m: Member, after: int) -> None:
        if (m.node, self.node) in self.forks:
            return
        check = await asyncio.to_thread(replica.digest_at, self.own, after) if after else None
        checks = await asyncio.to_thread(replica.recent_digests, self.own, after) if after else []
        while True:
            page = await asyncio.to_thread(
                replica.read_after, self.own, after, max_bytes=self.config.page_bytes
            )
            if not page.ops:
                return
            try:
                result = await self.client.push(
                    m.address,
                    expect=m.node,
                    shard=self.node,
                    after=after,
                    check=check,
                    body=page.body,
                    checks=checks,
                )
            except PeerError as exc:
                self.metrics.pushes.labels(exc.code).inc()
                if exc.code == "fork":
                    self.record_fork(m.node, self.node, str(exc))
                    return
                if exc.code == "gap":
                    m.heads.pop(self.node, None)  # the next round compares summaries again
                raise
            self.metrics.pushes.labels("ok").inc()
            self.metrics.ops_pushed.inc(page.ops)
            head = result.get("head")
            m.heads[self.node] = head if isinstance(head, int) else page.last
            after, check, checks = page.last, None, []
            if not page.more:
                return

    async def _pull(
        self, m: Member, node: str, mine: replica.Summary, *, own: bool = False
    ) -> None:
        """Fetch ``node``'s ops beyond ours from ``m``, page by page, and append them."""
        after = mine.seq
        check = mine.digest if mine.seq else None
        held: replica.HeldLock | None = None
        if own:
            self.behind = True
            log.warning(
                "own shard %s is behind peer %s's copy (seq %d here): recovering it; local "
                "writers wait until it has caught up",
                self.own.name,
                m.node,
                after,
            )
            held = await asyncio.to_thread(replica.HeldLock, self.own)
            # A writer may have appended between the summary and the lock: start from the
            # shard as it is now (a reused seq then shows up as a fork, never merged).
            now = await self.summary(self.node)
            after, check = now.seq, (now.digest if now.seq else None)
        local = self.dir / shard_file(node)
        checks = await asyncio.to_thread(replica.recent_digests, local, after) if after else []
        try:
            while True:
                try:
                    page = await self.client.pull(
                        m.address,
                        expect=m.node,
                        shard=node,
                        after=after,
                        check=check,
                        limit=self.config.page_bytes,
                        checks=checks,
                    )
                except PeerError as exc:
                    if exc.code == "fork":
                        self.record_fork(m.node, node, str(exc))
                        return
                    raise
                if page.body:
                    ops = await asyncio.to_thread(
                        replica.parse_ops, page.body, node, max_ops=MAX_OPS_PER_PAGE
                    )
                    if ops and ops[0][1].seq <= after:
                        raise PeerError(f"{m.node} served {node} ops at or below seq {after}")
                    try:
                        done = await asyncio.to_thread(
                            replica.append,
                            self.dir,
                            node,
                            ops,
                            fsync=self.config.store.fsync,
                            held=held,
                            allow_skip=own,
                            consumed=after,
                        )
                    except ForkDetected as exc:
                        self.record_fork(m.node, node, str(exc))
                        return
                    except replica.SkipsCompacted as exc:
                        log.info("pull of %s from %s: %s", node, m.node, exc)
                        await self._refetch(m, node)
                        return
                    (self.metrics.ops_recovered if own else self.metrics.ops_pulled).inc(
                        done.appended
                    )
                if not page.more or page.last <= after:
                    return
                after, check, checks = page.last, None, []
        finally:
            if held is not None:
                held.release()
            if own:
                self.behind = False

    async def _refetch(self, m: Member, node: str) -> None:
        """Take ``m``'s whole copy of ``node``'s shard in place of ours (ours lags behind a
        compaction there: see :class:`replica.SkipsCompacted`). Written to a hidden file first
        and swapped in atomically, so a failure leaves our copy as it was."""
        lock = self._refetching.setdefault(node, asyncio.Lock())
        if lock.locked():
            return  # another member's copy is being taken: one is enough
        async with lock:
            await self._refetch_from(m, node)

    async def _refetch_from(self, m: Member, node: str) -> None:
        fetched = self.dir / f".{node}.{m.node}.refetch.tmp"
        after = 0
        try:
            with open(fetched, "wb") as out:
                while True:
                    page = await self.client.pull(
                        m.address,
                        expect=m.node,
                        shard=node,
                        after=after,
                        check=None,
                        limit=self.config.page_bytes,
                    )
                    ops = (
                        await asyncio.to_thread(
                            replica.parse_ops, page.body, node, max_ops=MAX_OPS_PER_PAGE
                        )
                        if page.body
                        else []
                    )
                    if ops and ops[0][1].seq <= after:
                        raise PeerError(f"{m.node} served {node} ops at or below seq {after}")
                    out.write(page.body)
                    self.metrics.ops_pulled.inc(len(ops))
                    if not page.more or page.last <= after:
                        break
                    after = page.last
            done = await asyncio.to_thread(
                replica.replace, self.dir, node, fetched, fsync=self.config.store.fsync
            )
            log.warning(
                "re-fetched the whole shard %s from %s (ours lagged behind a compaction there)%s",
                node,
                m.node,
                "" if done else ": not needed",
            )
        finally:
            fetched.unlink(missing_ok=True)

    async def verify(self, cand: Candidate) -> None:
        """Admit a candidate once ``/info`` over mTLS proves its node id."""
        try:
            _, node = await self.client.info(cand.address, expect=cand.node)
        except PeerError as exc:
            self.membership.candidate_failed(cand)
            if exc.code == "protocol":
                self.metrics.exchanges.labels("incompatible").inc()
                log.error("candidate %s (%s) not admitted: %s", cand.address, cand.source, exc)
            else:
                self.metrics.exchanges.labels(
                    "refused" if exc.code == "identity" else "invalid"
                ).inc()
                log.warning("candidate %s (%s) not admitted: %s", cand.address, cand.source, exc)
            return
        except Unreachable as exc:
            self.membership.candidate_failed(cand)
            log.info("candidate %s (%s) not admitted: %s", cand.address, cand.source, exc)
            return
        if node in self.ignored:
            self.membership.candidates.pop(cand.address, None)
            return
        member = self.membership.admit(node, cand.address)
        if member is not None:
            self.metrics.admissions.inc()
            log.info("admitted %s at %s (from %s)", node, cand.address, cand.source)
            self.save_members()
            await self.exchange(member)

    # -- push after a local change --------------------------------------------------------

    def trigger_push(self) -> None:
        """Push to every live member, each on its own: a slow member delays only itself."""
        for m in self.membership.alive():
            task = self._pushing.get(m.node)
            if task is not None and not task.done():
                self._repush.add(m.node)
                continue
            task = asyncio.create_task(self._push_loop(m))
            self._pushing[m.node] = task

    async def _push_loop(self, m: Member) -> None:
        while True:
            self._repush.discard(m.node)
            await self._push_one(m)
            if m.node not in self._repush:
                return

    async def _push_one(self, m: Member) -> None:
        async with self._lock(m.node):
            if self.behind or self.node not in m.heads:
                await self._guarded(m, self._sync(m))
            else:
                await self._guarded(m, self._push_from(m, m.heads[self.node]))

    def _own_ident(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.own)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size)

    async def _watch(self) -> None:
        """Poll the own shard's identity; a change (creation included) triggers a push to every
        live member."""
        last = self._own_ident()
        while True:
            await asyncio.sleep(self.config.watch_interval)
            ident = self._own_ident()
            if ident != last and ident is not None:
                self.trigger_push()
            last = ident

    async def _admit(self) -> None:
        """Probe candidates as their backoff falls due, between rounds too, so a peer that
        starts after us is admitted within seconds whatever the round interval."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._admit_wake.wait(), min(1.0, self.config.interval))
            self._admit_wake.clear()
            due = self.membership.due_candidates()
            for cand in due:
                self._spawn(f"c:{cand.address}", self.verify(cand), self._cand_sem)

    # -- rounds --------------------------------------------------------------------------

    def _spawn(self, key: str, work: Any, sem: asyncio.Semaphore) -> asyncio.Task[None] | None:
        """Run ``work`` in the background unless the same member or candidate is still busy
        from an earlier round: a slow peer occupies only its own slot."""
        if key in self._busy:
            work.close()
            return None
        self._busy.add(key)

        async def run() -> None:
            try:
                async with sem:
                    await work
            finally:
                self._busy.discard(key)

        task = asyncio.create_task(run())
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return task

    async def _settle(self, tasks: list[asyncio.Task[None] | None]) -> None:
        """Wait for this round's exchanges, but never longer than a request timeout: the ones
        still running carry on in the background."""
        live = [t for t in tasks if t is not None]
        if live:
            await asyncio.wait(live, timeout=self.config.timeout)

    async def round(self) -> None:
        async with self._round_lock:
            t0 = time.monotonic()
            self.rounds += 1
            self.metrics.rounds.inc()
            self.reload_state()
            due = self.membership.due_candidates()
            await self._settle(
                [self._spawn(f"c:{c.address}", self.verify(c), self._cand_sem) for c in due]
            )
            members = self.membership.contactable()
            await self._settle(
                [self._spawn(f"m:{m.node}", self.exchange(m), self._sem) for m in members]
            )
            self.save_members()
            if self.config.collect:
                await self._collect()
            self.update_gauges()
            self.metrics.round_seconds.observe(time.monotonic() - t0)
            self.metrics.last_round.set(time.time())

    async def _collect(self) -> None:
        """After the round's exchanges: physically remove what no member can bring back."""
        members = list(self.membership.members.values())
        try:
            await asyncio.to_thread(self.collector.run, members, set(self.ignored))
        except Exception:  # collection only ever removes; a failure leaves everything in place
            log.exception("tombstone collection failed")

    async def _rounds(self) -> None:
        while True:
            try:
                await self.round()
            except Exception:
                log.exception("round failed")
            await asyncio.sleep(self.config.interval)

    async def _discover(self) -> None:
        while True:
            found = await discovery.discover(
                self.config, lambda src: self.metrics.discovery_errors.labels(src).inc()
            )
            for address, node, source in found:
                self.suggest(address, node, source)
            if self.config.discover_interval <= 0:
                return
            await asyncio.sleep(self.config.discover_interval)

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        if not self.config.tls:
            log.warning(
                "!!! TLS IS OFF: noond serves and pushes in PLAINTEXT on %s:%d. Anyone who can "
                "reach this port can read every shard and push any non-revoked shard. Use this "
                "only on loopback or a network you fully trust. !!!",
                self.config.listen_host,
                self.config.listen_port,
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        self.reload_state()
        self._runner = web.AppRunner(build_app(self), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner,
            self.config.listen_host,
            self.config.listen_port,
            ssl_context=self.server_ssl,
            reuse_address=True,
        )
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        if self.advertise.endswith(":0"):
            self.advertise = f"{self.advertise[:-2]}:{self.port}"
            self.client.advertise = self.advertise
            self.membership.self_addresses.add(self.advertise)
        log.info(
            "noond %s listening on %s:%d (protocol %d, %s), advertising %s",
            self.node,
            self.config.listen_host,
            self.port,
            PROTOCOL,
            "mTLS" if self.config.tls else "plaintext",
            self.advertise,
        )
        if self.config.metrics_listen:
            host, port = split_address(self.config.metrics_listen)
            self._metrics_runner = web.AppRunner(
                build_metrics_app(self), access_log=None, handle_signals=False
            )
            await self._metrics_runner.setup()
            await web.TCPSite(self._metrics_runner, host, port, reuse_address=True).start()
            log.info(
                "metrics (plaintext, /metrics and /health only) on %s",
                host_port(self._metrics_runner),
            )
        self._tasks.append(asyncio.create_task(self._discover()))
        self._tasks.append(asyncio.create_task(self._rounds()))
        self._tasks.append(asyncio.create_task(self._admit()))
        if self.config.push:
            self._tasks.append(asyncio.create_task(self._watch()))

    async def stop(self) -> None:
        for task in [*self._tasks, *self._inflight, *self._pushing.values()]:
            task.cancel()
        for task in [*self._tasks, *self._inflight]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.save_members()
        for runner in (self._runner, self._metrics_runner):
            if runner is not None:
                await runner.cleanup()
        await self.client.close()
        if self._store is not None:
            self._store.close()


def _parse_listing(obj: dict[str, Any]) -> dict[str, replica.Summary]:
    entries = obj.get("shards")
    if not isinstance(entries, list) or len(entries) > MAX_LISTING:
        raise PeerError(f"'shards' must be a list of at most {MAX_LISTING} summaries")
    out: dict[str, replica.Summary] = {}
    for e in entries:
        if not isinstance(e, dict):
            raise PeerError("a shard summary is not an object")
        node, seq, digest = e.get("node"), e.get("seq"), e.get("digest")
        if (
            not isinstance(node, str)
            or not valid_node_id(node)
            or not isinstance(seq, int)
            or isinstance(seq, bool)
            or seq < 0
            or not isinstance(digest, str)
            or len(digest) != 16
        ):
            raise PeerError(f"invalid shard summary {str(e)[:200]}")
        try:
            out[node] = replica.Summary(node, seq, int(digest, 16))
        except ValueError:
            raise PeerError(f"invalid digest in shard summary {str(e)[:200]}") from None
    return out


def host_port(runner: web.AppRunner) -> str:
    """Where a runner's first site actually listens (resolves port 0)."""
    for site in runner.sites:
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            host, port = server.sockets[0].getsockname()[:2]
            return f"{host}:{port}"
    return "?"
