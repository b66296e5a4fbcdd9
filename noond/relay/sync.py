"""One relay, both ways (PROTOCOL.md §14): upload this node's own shards as write-once sealed
segments (coalesced: one PUT per flush, whatever the number of ops), keep its head, and take
other authors' segments beyond what is held here through the same receive path as a pulled
page, proven by their signatures. Every refusal is counted and logged; nothing of a refused
object is stored, and it is not fetched again by this process."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noon.certs import MeshKey
from noon.core.chain import Sign, Verify
from noon.core.collection import member_of
from noon.store import peerstate, receive, serve
from noon.store.errors import ForkDetected
from noon.store.shard import write_file
from noond.metrics import Metrics
from noond.relay import heads, seal
from noond.relay.backend import Backend, Conflict, Entry, Missing, RelayDown, TooLarge
from noond.shards import Holdings
from noond.signers import Signers
from noond.wire import MAX_OPS_PER_PAGE

log = logging.getLogger("noond.relay")

MAX_REFUSED = 4096
"""Refused objects remembered (not fetched again); past it the oldest are forgotten."""


@dataclass
class RelaySettings:
    flush: float = 1.0
    interval: float = 10.0
    head_every: float = 30.0
    fsync: bool = True


@dataclass
class Stats:
    reachable: bool | None = None
    error: str = ""
    last_upload: float | None = None
    last_read: float | None = None
    bytes_up: int = 0
    bytes_down: int = 0
    requests: int = 0
    lag_ops: int = 0
    """Ops the relay lists beyond what this node holds (authors not revoked)."""
    backlog_ops: int = 0
    """Own ops written here and not yet uploaded."""
    refused: int = 0

    def as_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class _Author:
    node: str | None = None
    segments: list[tuple[seal.Name, Entry]] = field(default_factory=list)
    head: tuple[seal.Name, Entry] | None = None


class Relay:
    def __init__(
        self,
        backend: Backend,
        mesh: MeshKey,
        *,
        node: str,
        holdings: Holdings,
        signers: Signers,
        sign: Sign | None,
        revoked: Callable[[], set[str]],
        metrics: Metrics,
        settings: RelaySettings,
    ) -> None:
        self.backend = backend
        self.url = backend.url
        self.mesh = mesh
        self.node = node
        self.own = [node, f"{node}-import"]
        self.holdings = holdings
        self.dir: Path = holdings.dir
        self.signers = signers
        self.sign = sign
        self.revoked = revoked
        self.metrics = metrics
        self.settings = settings
        self.stats = Stats()
        self.keys = {epoch: seal.keys(mesh, epoch) for epoch in mesh.epochs}
        self.epoch = mesh.current
        self.uploaded: dict[str, int] | None = None
        """Per own shard, the last seq in the relay (None until listed once)."""
        self.head_versions: dict[str, str] = {}
        self.head_sent: dict[str, tuple[bytes, float]] = {}
        self.heads_read: dict[str, str] = {}
        """Head name → the version last read (a head is read again only when it changed)."""
        self.reports: dict[str, peerstate.Report] = {}
        """Frontier reports of authors met through this relay (PROTOCOL.md §14.5)."""
        self.refused: dict[tuple[str, str], None] = {}
        self.tags: dict[tuple[int, str], str] = {}

    # -- bookkeeping --------------------------------------------------------------------------

    async def _io(self, fn: Callable[..., Any], *args: Any) -> Any:
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

    def _refuse(self, entry: Entry, reason: str, message: str) -> None:
        self.refused[(entry.name, entry.version)] = None
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

    # -- writing ------------------------------------------------------------------------------

    async def _resume(self, listing: list[Entry]) -> None:
        """Where the own uploads stand: the highest segment listed per own shard (a head may
        lag behind the segments; a segment cut by a crash is not there)."""
        uploaded = dict.fromkeys(self.own, 0)
        for entry in listing:
            name = seal.parse_name(entry.name)
            if name is None or name.epoch not in self.keys:
                continue
            for shard in self.own:
                if name.tag == self.tag_of(name.epoch, shard):
                    if name.kind == "seg":
                        uploaded[shard] = max(uploaded[shard], name.last)
                    elif name.epoch == self.epoch:
                        self.head_versions[shard] = entry.version
        # A segment under the own tag beyond what this node ever wrote is not its own (anyone
        # holding the mesh key can name one so): it does not move the upload cursor.
        held = await self.holdings.summaries()
        self.uploaded = {s: min(n, held[s].seq if s in held else 0) for s, n in uploaded.items()}

    async def upload(self) -> int:
        """Upload what the own shards hold beyond the relay: one segment per shard that grew
        (more past :data:`~noond.relay.seal.SEGMENT_TARGET`). The number of ops uploaded."""
        if self.uploaded is None:
            await self._resume(await self._io(self.backend.list))
        assert self.uploaded is not None
        sent = 0
        for shard in self.own:
            path = self.holdings.path(shard)
            while True:
                after = self.uploaded[shard]
                try:
                    page = await asyncio.to_thread(
                        serve.read_after, path, after, max_bytes=seal.SEGMENT_TARGET
                    )
                except FileNotFoundError:
                    break
                if not page.ops:
                    break
                name = seal.segment_name(
                    self.epoch, self.tag_of(self.epoch, shard), after + 1, page.last
                )
                plain = seal.segment_plain(shard, after + 1, page.last, page.body)
                body = seal.seal(self.keys[self.epoch], name, plain)
                await self._io(self.backend.put, name, body)
                self.uploaded[shard] = page.last
                self.stats.bytes_up += len(body)
                self.stats.last_upload = time.time()
                self.metrics.relay_bytes.labels(self.url, "up").inc(len(body))
                self.metrics.relay_last_upload.labels(self.url).set(self.stats.last_upload)
                self.metrics.relay_ops_up.labels(self.url).inc(page.ops)
                sent += page.ops
                if not page.more:
                    break
        return sent

    async def write_heads(self, *, force: bool = False) -> None:
        """The head of each own shard whose content changed (its last seq; for the own shard
        also its frontier report), at most every ``head_every`` seconds, or now with ``force``
        (at stop)."""
        if self.uploaded is None:
            return
        held = await self.holdings.summaries()
        frontier = {n: s.seq for n, s in sorted(held.items())}
        now = time.time()
        for shard in self.own:
            seq = self.uploaded.get(shard, 0)
            if not seq and (shard != self.node or not frontier):
                continue  # a machine that only reads still reports what it holds
            report = frontier if shard == self.node else {}
            content = seal.canonical({"seq": seq, "frontier": report})
            last = self.head_sent.get(shard)
            if last is not None and last[0] == content:
                continue
            if last is not None and not force and last[1] + self.settings.head_every > now:
                continue
            doc: dict[str, Any] = {
                "node": shard,
                "seq": seq,
                "at": int(now * 1000),
                "certs": self.signers.pems(member_of(shard)),
                "frontier": report,
            }
            if self.sign is not None:
                sig = self.sign(seal.HEAD_CONTEXT + seal.canonical(doc))
                doc["sig"] = base64.urlsafe_b64encode(sig).rstrip(b"=").decode()
            name = seal.head_name(self.epoch, self.tag_of(self.epoch, shard))
            body = seal.seal(self.keys[self.epoch], name, seal.canonical(doc))
            try:
                version = await self._io(
                    self.backend.put_head, name, body, self.head_versions.get(shard)
                )
            except Conflict:
                log.warning(
                    "relay %s: the head of %s changed under this node (is another noond "
                    "running as %s?); it is listed again and written next time",
                    self.url,
                    shard,
                    self.node,
                )
                self.uploaded = None
                return
            self.head_versions[shard] = version
            self.head_sent[shard] = (content, now)
            self._sent(len(body))

    def _sent(self, size: int) -> None:
        self.stats.bytes_up += size
        self.metrics.relay_bytes.labels(self.url, "up").inc(size)

    def _got(self, size: int) -> None:
        self.stats.bytes_down += size
        self.metrics.relay_bytes.labels(self.url, "down").inc(size)

    # -- reading ------------------------------------------------------------------------------

    async def read(self) -> int:
        """Take every other author's segments beyond what this node holds. The number of ops
        appended."""
        listing: list[Entry] = await self._io(self.backend.list)
        self.stats.last_read = time.time()
        if self.uploaded is None:
            await self._resume(listing)
        own_tags = {self.tag_of(e, s) for e in self.keys for s in self.own}
        groups: dict[tuple[int, str], _Author] = {}
        for entry in listing:
            name = seal.parse_name(entry.name)
            if name is None or name.epoch not in self.keys or name.tag in own_tags:
                continue
            if (entry.name, entry.version) in self.refused:
                continue
            group = groups.setdefault((name.epoch, name.tag), _Author())
            if name.kind == "head":
                group.head = (name, entry)
            else:
                group.segments.append((name, entry))
        for held in await self.holdings.summaries():
            for epoch in self.keys:
                self.tags.setdefault((epoch, held), seal.tag(self.keys[epoch], held))
        known = {(e, t): n for (e, n), t in self.tags.items()}
        cache: dict[str, tuple[str, bytes]] = {}
        by_node: dict[str, list[tuple[seal.Name, Entry]]] = {}
        for (epoch, tag_), group in groups.items():
            node = known.get((epoch, tag_))
            if group.head is not None:
                node = await self._read_head(*group.head) or node
            for first in sorted(group.segments, key=lambda s: s[0].first):
                if node is not None:
                    break
                opened = await self._fetch(*first)  # an author known by no head yet
                if opened is not None:
                    cache[first[1].name] = opened
                    node = opened[0]
            if node is not None:
                self.tags[(epoch, node)] = tag_
                by_node.setdefault(node, []).extend(group.segments)
        revoked = self.revoked()
        appended = 0
        lag = 0
        for node, segments in sorted(by_node.items()):
            if member_of(node) == self.node:
                continue
            if member_of(node) in revoked:
                for _, entry in segments:  # never fetched: a revoked author is never read
                    self._refuse(entry, "revoked", f"an object of {node}, which is revoked")
                continue
            got, behind = await self._take(node, segments, cache)
            appended += got
            lag += behind
        self.stats.lag_ops = lag
        self.metrics.relay_lag.labels(self.url).set(lag)
        return appended

    async def _get(self, entry: Entry, limit: int) -> bytes | None:
        """An object's bytes, at most ``limit`` of them, counted; None when the relay failed or
        the object is larger (refused)."""
        try:
            body = await self._io(self.backend.get, entry.name, limit)
        except RelayDown as exc:
            if isinstance(exc, TooLarge):
                self._refuse(entry, "too_large", str(exc))
            return None
        self._got(len(body))
        return body

    async def _fetch(self, name: seal.Name, entry: Entry) -> tuple[str, bytes] | None:
        """A segment's author and lines, or None (refused, or the relay failed)."""
        body = await self._get(entry, seal.MAX_SEGMENT)
        if body is None:
            return None
        try:
            plain = seal.unseal(self.keys[name.epoch], entry.name, body, seal.MAX_SEGMENT)
            return seal.open_segment(self.keys[name.epoch], name, plain)
        except seal.Refused as exc:
            self._refuse(entry, exc.reason, str(exc))
            return None

    async def _read_head(self, name: seal.Name, entry: Entry) -> str | None:
        """The author a head names, once its signature is proven; its certificates are kept
        and its frontier report taken (PROTOCOL.md §14.5)."""
        if self.heads_read.get(entry.name) == entry.version:
            return self.tags_node(name)
        body = await self._get(entry, seal.MAX_HEAD)
        if body is None:
            return None
        try:
            doc = heads.open_head(
                self.keys[name.epoch], name, entry.name, body, self.signers, self.revoked()
            )
        except seal.Refused as exc:
            self._refuse(entry, exc.reason, str(exc))
            return None
        node = str(doc["node"])
        self.heads_read[entry.name] = entry.version
        self.tags[(name.epoch, node)] = name.tag
        if node == member_of(node) and node != self.node:
            frontier = {str(k): int(v) for k, v in doc["frontier"].items()}
            at = min(doc["at"] / 1000, time.time())
            held = self.reports.get(node)
            if held is None or held.at < at:
                self.reports[node] = peerstate.Report(frontier, at)
        return node

    def tags_node(self, name: seal.Name) -> str | None:
        for (epoch, node), tag_ in self.tags.items():
            if epoch == name.epoch and tag_ == name.tag:
                return node
        return None

    async def _take(
        self,
        node: str,
        segments: list[tuple[seal.Name, Entry]],
        cache: dict[str, tuple[str, bytes]],
    ) -> tuple[int, int]:
        """Append ``node``'s segments beyond what is held, in seq order; (ops appended, ops
        listed beyond what is held when done)."""
        summary = await self.holdings.summary(node)
        cursor = summary.seq
        top = max((n.last for n, _ in segments), default=0)
        allowed, check = self._verifier(node)
        appended = 0
        if not allowed:
            return 0, max(0, top - cursor)
        for name, entry in sorted(segments, key=lambda s: (s[0].first, -s[0].last)):
            if name.last <= cursor:
                continue
            if name.first > cursor + 1:
                break  # the segment before it is not listed yet (a lagging listing, a late copy)
            opened = cache.pop(entry.name, None) or await self._fetch(name, entry)
            if opened is None:
                break
            author, lines = opened
            if author != node:
                self._refuse(entry, "foreign", f"a segment of {author!r} among {node!r}'s")
                break
            try:
                ops = await asyncio.to_thread(
                    receive.parse_ops, lines, node, max_ops=MAX_OPS_PER_PAGE
                )
                done = await asyncio.to_thread(
                    receive.append,
                    self.dir,
                    node,
                    ops,
                    fsync=self.settings.fsync,
                    consumed=cursor,
                    check=check,
                )
            except receive.SkipsCompacted as exc:
                log.info("relay %s: %s", self.url, exc)
                appended += await self._refetch(node, segments, check)
                break
            except receive.Unproven as exc:
                self._refuse(entry, "unproven", str(exc))
                break
            except ForkDetected as exc:
                self._refuse(entry, "fork", str(exc))
                break
            except receive.ReplicaError as exc:
                self._refuse(entry, "invalid_ops", str(exc))
                break
            self.holdings.stored()
            self.metrics.relay_ops_down.labels(self.url).inc(done.appended)
            appended += done.appended
            cursor = max(cursor, done.head)
        return appended, max(0, top - cursor)

    def _verifier(self, node: str) -> tuple[bool, Verify | None]:
        """Whether ``node``'s lines may be taken, and how they are proven here: not when no
        certificate of its author is known (it is waited for, nothing is taken); without a
        CA nothing is checked."""
        if not self.signers.required:
            return True, None
        check = self.signers.check(node)
        if check is None:
            self.metrics.relay_rejected.labels(self.url, "uncertified").inc()
            log.warning(
                "relay %s lists shard %s, but no signing certificate of %s by this CA is known "
                "(its head is missing or refused): nothing of it is taken",
                self.url,
                node,
                member_of(node),
            )
            return False, None
        return True, check

    async def _refetch(
        self, node: str, segments: list[tuple[seal.Name, Entry]], check: Verify | None
    ) -> int:
        """The relay's whole copy of ``node`` merged in place of ours (ours lags behind a
        compaction the author made before uploading: PROTOCOL.md §14.4)."""
        lines: dict[int, bytes] = {}
        covered = 0
        for name, entry in sorted(segments, key=lambda s: (s[0].first, -s[0].last)):
            if name.last <= covered:
                continue
            if name.first > covered + 1:
                log.info("relay %s: %s's segments are not all listed yet", self.url, node)
                return 0
            opened = await self._fetch(name, entry)
            if opened is None or opened[0] != node:
                return 0
            try:
                ops = await asyncio.to_thread(
                    receive.parse_ops, opened[1], node, max_ops=MAX_OPS_PER_PAGE
                )
            except receive.ReplicaError as exc:
                self._refuse(entry, "invalid_ops", str(exc))
                return 0
            for line, op in ops:
                lines.setdefault(op.seq, line)
            covered = name.last
        fetched = self.dir / f".{node}.relay.refetch.tmp"
        body = [lines[s] + b"\n" for s in sorted(lines)]
        await asyncio.to_thread(write_file, fetched, body, durable=False)
        try:
            done = await asyncio.to_thread(
                receive.replace, self.dir, node, fetched, fsync=self.settings.fsync, check=check
            )
        except (receive.ReplicaError, ForkDetected) as exc:  # Unproven among them
            self.metrics.relay_rejected.labels(self.url, "unproven").inc()
            log.warning("relay %s: the whole copy of %s is not taken: %s", self.url, node, exc)
            return 0
        finally:
            fetched.unlink(missing_ok=True)
        log.warning("took the relay's whole copy of %s (ours lagged behind a compaction)", node)
        return len(lines) if done else 0

    def backlog(self) -> int:
        """Own ops held here and not yet uploaded (all of them until the relay was listed)."""
        held = self.holdings.held()
        done = self.uploaded or {}
        return sum(max(0, held[s].seq - done.get(s, 0)) for s in self.own if s in held)

    def report(self) -> dict[str, Any]:
        return {
            "url": self.url,
            **self.stats.as_json(),
            "uploaded": dict(self.uploaded or {}),
            "head": {shard: json.loads(sent[0])["seq"] for shard, sent in self.head_sent.items()},
        }
