"""A node's reading side of one relay (PROTOCOL.md §14.2, §14.4, §14.5): list, prove each
author's head (its certificates, its signature, its frontier report), and take every other
author's segments beyond what is held here through the same receive path as a pulled page,
proven by their signatures. Every refusal is counted and logged; nothing of a refused object
is stored, and it is not fetched again by this process."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from noon.core.chain import Verify
from noon.core.collection import member_of
from noon.store import peerstate, receive
from noon.store.errors import ForkDetected
from noon.store.shard import write_file
from noond.relay import heads, seal
from noond.relay.backend import Entry
from noond.relay.link import Link, RelaySettings
from noond.shards import Holdings
from noond.signers import Signers
from noond.wire import MAX_OPS_PER_PAGE

log = logging.getLogger("noond.relay")

Segments = list[tuple[seal.Name, Entry]]


def _in_order(segment: tuple[seal.Name, Entry]) -> tuple[int, int, bool]:
    """Lowest first seq first, of those the one reaching furthest, an original before a sync
    tool's conflicted copy of it."""
    name, entry = segment
    return name.first, -name.last, entry.copy is not None


@dataclass
class _Author:
    node: str | None = None
    segments: Segments = field(default_factory=list)
    head: tuple[seal.Name, Entry] | None = None


class Downloader:
    def __init__(
        self,
        link: Link,
        *,
        holdings: Holdings,
        signers: Signers,
        revoked: Callable[[], set[str]],
        settings: RelaySettings,
    ) -> None:
        self.link = link
        self.holdings = holdings
        self.dir: Path = holdings.dir
        self.signers = signers
        self.revoked = revoked
        self.settings = settings
        self.heads_read: dict[str, str] = {}
        """Head name → the version last read (a head is read again only when it changed)."""
        self.reports: dict[str, peerstate.Report] = {}
        """Frontier reports of authors met through this relay (PROTOCOL.md §14.5)."""

    async def read(self) -> int:
        """Take every other author's segments beyond what this node holds. The number of ops
        appended."""
        link = self.link
        listing: list[Entry] = await link.io(link.backend.list)
        link.stats.last_read = time.time()
        for held in await self.holdings.summaries():
            for epoch in link.keys:
                link.tag_of(epoch, held)
        known = {(e, t): n for (e, n), t in link.tags.items()}
        cache: dict[str, tuple[str, bytes]] = {}
        by_node: dict[str, Segments] = {}
        for (epoch, tag_), group in self._group(listing).items():
            node = known.get((epoch, tag_))
            if group.head is not None:
                node = await self._read_head(*group.head) or node
            for first in sorted(group.segments, key=lambda s: s[0].first):
                if node is not None:
                    break
                opened = await link.fetch(*first)  # an author known by no head yet
                if opened is not None:
                    cache[first[1].stored] = opened
                    node = opened[0]
            if node is not None:
                link.tags[(epoch, node)] = tag_
                by_node.setdefault(node, []).extend(group.segments)
        revoked = self.revoked()
        appended = 0
        lag = 0
        for node, segments in sorted(by_node.items()):
            if member_of(node) == link.node:
                continue
            if member_of(node) in revoked:
                for _, entry in segments:  # never fetched: a revoked author is never read
                    link.refuse(entry, "revoked", f"an object of {node}, which is revoked")
                continue
            got, behind = await self._take(node, segments, cache)
            appended += got
            lag += behind
        link.stats.lag_ops = lag
        link.metrics.relay_lag.labels(link.url).set(lag)
        return appended

    def _group(self, listing: list[Entry]) -> dict[tuple[int, str], _Author]:
        """The listing's objects by author (epoch, tag), the own ones and refused ones left out."""
        link = self.link
        own_tags = {link.tag_of(e, s) for e in link.keys for s in link.own}
        groups: dict[tuple[int, str], _Author] = {}
        for entry in listing:
            name = seal.parse_name(entry.name)
            if name is None or name.epoch not in link.keys or name.tag in own_tags:
                continue
            if (entry.stored, entry.version) in link.refused:
                continue
            group = groups.setdefault((name.epoch, name.tag), _Author())
            if name.kind == "head":
                if group.head is None or group.head[1].copy is not None:
                    group.head = (name, entry)  # a conflicted copy only without the original
            else:
                group.segments.append((name, entry))
        return groups

    async def _read_head(self, name: seal.Name, entry: Entry) -> str | None:
        """The author a head names, once its signature is proven; its certificates are kept
        and its frontier report taken (PROTOCOL.md §14.5)."""
        link = self.link
        if self.heads_read.get(entry.stored) == entry.version:
            return link.node_of(name.epoch, name.tag)
        body = await link.get(entry, seal.MAX_HEAD)
        if body is None:
            return None
        try:
            doc = heads.open_head(
                link.keys[name.epoch], name, entry.name, body, self.signers, self.revoked()
            )
        except seal.Refused as exc:
            link.refuse(entry, exc.reason, str(exc))
            return None
        node = str(doc["node"])
        self.heads_read[entry.stored] = entry.version
        link.tags[(name.epoch, node)] = name.tag
        if node == member_of(node) and node != link.node:
            frontier = {str(k): int(v) for k, v in doc["frontier"].items()}
            at = min(doc["at"] / 1000, time.time())
            held = self.reports.get(node)
            if held is None or held.at < at:
                self.reports[node] = peerstate.Report(frontier, at)
        return node

    async def _take(
        self, node: str, segments: Segments, cache: dict[str, tuple[str, bytes]]
    ) -> tuple[int, int]:
        """Append ``node``'s segments beyond what is held, in seq order; (ops appended, ops
        listed beyond what is held when done)."""
        link = self.link
        summary = await self.holdings.summary(node)
        cursor = summary.seq
        top = max((n.last for n, _ in segments), default=0)
        allowed, check = self._verifier(node)
        appended = 0
        if not allowed:
            return 0, max(0, top - cursor)
        # A refused segment is passed over: a conflicted copy of it, or another segment from
        # the same seq, may carry what it does not; past a gap in seqs nothing is taken.
        for name, entry in sorted(segments, key=_in_order):
            if name.last <= cursor:
                continue
            if name.first > cursor + 1:
                break  # the segment before it is not listed yet (a lagging listing, a late copy)
            opened = cache.pop(entry.stored, None) or await link.fetch(name, entry)
            if opened is None:
                if (entry.stored, entry.version) in link.refused:
                    continue
                break  # the relay failed: the rest waits for the next read
            author, lines = opened
            if author != node:
                link.refuse(entry, "foreign", f"a segment of {author!r} among {node!r}'s")
                continue
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
                log.info("relay %s: %s", link.url, exc)
                appended += await self._refetch(node, segments, check)
                break
            except receive.Unproven as exc:
                link.refuse(entry, "unproven", str(exc))
                continue
            except ForkDetected as exc:
                link.refuse(entry, "fork", str(exc))
                continue
            except receive.ReplicaError as exc:
                link.refuse(entry, "invalid_ops", str(exc))
                continue
            self.holdings.stored()
            link.metrics.relay_ops_down.labels(link.url).inc(done.appended)
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
            self.link.metrics.relay_rejected.labels(self.link.url, "uncertified").inc()
            log.warning(
                "relay %s lists shard %s, but no signing certificate of %s by this CA is known "
                "(its head is missing or refused): nothing of it is taken",
                self.link.url,
                node,
                member_of(node),
            )
            return False, None
        return True, check

    async def _refetch(self, node: str, segments: Segments, check: Verify | None) -> int:
        """The relay's whole copy of ``node`` merged in place of ours (ours lags behind a
        compaction the author made before uploading: PROTOCOL.md §14.4)."""
        link = self.link
        lines: dict[int, bytes] = {}
        covered = 0
        for name, entry in sorted(segments, key=_in_order):
            if name.last <= covered:
                continue
            if name.first > covered + 1:
                log.info("relay %s: %s's segments are not all listed yet", link.url, node)
                return 0
            opened = await link.fetch(name, entry)
            if opened is None or opened[0] != node:
                return 0
            try:
                ops = await asyncio.to_thread(
                    receive.parse_ops, opened[1], node, max_ops=MAX_OPS_PER_PAGE
                )
            except receive.ReplicaError as exc:
                link.refuse(entry, "invalid_ops", str(exc))
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
            link.metrics.relay_rejected.labels(link.url, "unproven").inc()
            log.warning("relay %s: the whole copy of %s is not taken: %s", link.url, node, exc)
            return 0
        finally:
            fetched.unlink(missing_ok=True)
        log.warning("took the relay's whole copy of %s (ours lagged behind a compaction)", node)
        return len(lines) if done else 0
