"""A node's writing side of one relay (PROTOCOL.md §14.2, §14.3): upload the own shards as
write-once sealed segments, coalesced (one PUT per shard that grew, whatever the number of
ops), and keep each own shard's head, the own one carrying this node's signed frontier report,
with a conditional write."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from typing import Any, TypeVar

from noon.core.chain import Sign
from noon.core.collection import member_of
from noon.store import serve
from noond.relay import heads as heads_
from noond.relay import seal
from noond.relay.backend import Conflict, Entry, RelayDown
from noond.relay.link import Link, RelaySettings
from noond.shards import Holdings
from noond.signers import Signers

log = logging.getLogger("noond.relay")

Got = TypeVar("Got")


class Uploader:
    def __init__(
        self,
        link: Link,
        *,
        holdings: Holdings,
        signers: Signers,
        sign: Sign | None,
        settings: RelaySettings,
    ) -> None:
        self.link = link
        self.holdings = holdings
        self.signers = signers
        self.sign = sign
        self.settings = settings
        self.uploaded: dict[str, int] | None = None
        """Per own shard, the last seq in the relay (None until listed once)."""
        self.head_versions: dict[str, str] = {}
        self.head_sent: dict[str, tuple[bytes, float]] = {}
        """Per own shard, the head content last written and when."""

    async def resume(self, listing: list[Entry]) -> None:
        """Where the own uploads stand, per own shard: the seq its own signed head vouches
        for, then each listed segment above it that holds this shard's own lines (a head may
        lag behind the segments; a segment cut by a crash is not there). Anyone holding the mesh
        key can name a segment under this node's tag (PROTOCOL.md §14.6): one that is not this
        node's own lines does not move the cursor, so the seqs it names are uploaded over it."""
        link = self.link
        segments: dict[str, list[tuple[seal.Name, Entry]]] = {s: [] for s in link.own}
        heads: dict[str, list[tuple[seal.Name, Entry]]] = {s: [] for s in link.own}
        for entry in listing:
            name = seal.parse_name(entry.name)
            if name is None or entry.copy is not None or name.epoch not in link.keys:
                continue
            for shard in link.own:
                if name.tag == link.tag_of(name.epoch, shard):
                    if name.kind == "seg":
                        segments[shard].append((name, entry))
                    else:
                        heads[shard].append((name, entry))
                        if name.epoch == link.epoch:
                            self.head_versions[shard] = entry.version
        held = await self.holdings.summaries()
        uploaded: dict[str, int] = {}
        for shard in link.own:
            cursor = min(
                await self._vouched(shard, heads[shard]), held[shard].seq if shard in held else 0
            )
            for name, entry in sorted(segments[shard], key=lambda s: (s[0].first, -s[0].last)):
                if (
                    name.first <= cursor + 1
                    and name.last > cursor
                    and await self._own(shard, name, entry)
                ):
                    cursor = name.last
            uploaded[shard] = cursor
        self.uploaded = uploaded

    async def _vouched(self, shard: str, heads: list[tuple[seal.Name, Entry]]) -> int:
        """The highest seq a head of ``shard`` signed by this node says was uploaded (0 when
        there is none, or heads are not signed here: then every listed segment is checked)."""
        link = self.link
        if not self.signers.required:
            return 0
        best = 0
        for name, entry in heads:
            body = self._failed_or(entry, await link.get(entry, seal.MAX_HEAD))
            if body is None:
                continue
            try:
                doc = heads_.open_head(
                    link.keys[name.epoch], name, entry.name, body, self.signers, set()
                )
            except seal.Refused as exc:
                link.refuse(entry, exc.reason, str(exc))
                continue
            if doc["node"] == shard:
                best = max(best, int(doc["seq"]))
        return best

    def _failed_or(self, entry: Entry, got: Got) -> Got:
        """What a read got: None when ``entry`` was refused; the relay failing stops the
        resume (it is tried again next flush) rather than pass an own segment over."""
        if got is None and (entry.stored, entry.version) not in self.link.refused:
            raise RelayDown(f"{entry.name}: not read")
        return got

    async def _own(self, shard: str, name: seal.Name, entry: Entry) -> bool:
        """Whether a segment listed under this node's tag holds exactly this shard's lines
        ``name.first..name.last`` (else it is refused, counted, and passed over)."""
        link = self.link
        opened = self._failed_or(entry, await link.fetch(name, entry))
        if opened is None:
            return False
        page = None
        if opened[0] == shard:
            with contextlib.suppress(FileNotFoundError):
                page = await asyncio.to_thread(
                    serve.read_after,
                    self.holdings.path(shard),
                    name.first - 1,
                    max_bytes=len(opened[1]),
                )
        if page is not None and page.last == name.last and page.body == opened[1]:
            return True
        link.refuse(
            entry,
            "not_own",
            f"listed under this node's name without its lines {name.first}..{name.last} "
            "(written by another holder of the mesh key?); they are uploaded over it",
        )
        return False

    async def upload(self) -> int:
        """Upload what the own shards hold beyond the relay: one segment per shard that grew
        (more past :data:`~noond.relay.seal.SEGMENT_TARGET`). The number of ops uploaded."""
        link = self.link
        if self.uploaded is None:
            await self.resume(await link.io(link.backend.list))
        assert self.uploaded is not None
        sent = 0
        for shard in link.own:
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
                    link.epoch, link.tag_of(link.epoch, shard), after + 1, page.last
                )
                plain = seal.segment_plain(shard, after + 1, page.last, page.body)
                body = seal.seal(link.keys[link.epoch], name, plain)
                await link.io(link.backend.put, name, body)
                self.uploaded[shard] = page.last
                link.sent(len(body))
                link.stats.last_upload = time.time()
                link.metrics.relay_last_upload.labels(link.url).set(link.stats.last_upload)
                link.metrics.relay_ops_up.labels(link.url).inc(page.ops)
                sent += page.ops
                if not page.more:
                    break
        return sent

    async def write_heads(self, *, force: bool = False) -> None:
        """The head of each own shard whose content changed (its last seq; for the own shard
        also its frontier report), at most every ``head_every`` seconds, or now with ``force``
        (at stop)."""
        link = self.link
        if self.uploaded is None:
            return
        held = await self.holdings.summaries()
        frontier = {n: s.seq for n, s in sorted(held.items())}
        now = time.time()
        for shard in link.own:
            seq = self.uploaded.get(shard, 0)
            if not seq and (shard != link.node or not frontier):
                continue  # a machine that only reads still reports what it holds
            report = frontier if shard == link.node else {}
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
            name = seal.head_name(link.epoch, link.tag_of(link.epoch, shard))
            body = seal.seal(link.keys[link.epoch], name, seal.canonical(doc))
            try:
                version = await link.io(
                    link.backend.put_head, name, body, self.head_versions.get(shard)
                )
            except Conflict:
                log.warning(
                    "relay %s: the head of %s changed under this node (is another noond "
                    "running as %s?); it is listed again and written next time",
                    link.url,
                    shard,
                    link.node,
                )
                self.uploaded = None
                return
            self.head_versions[shard] = version
            self.head_sent[shard] = (content, now)
            link.sent(len(body))

    def backlog(self) -> int:
        """Own ops held here and not yet uploaded (all of them until the relay was listed)."""
        held = self.holdings.held()
        done = self.uploaded or {}
        return sum(max(0, held[s].seq - done.get(s, 0)) for s in self.link.own if s in held)
