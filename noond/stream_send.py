"""The sending end of op streams (PROTOCOL.md §5.1): one WebSocket per member and own shard,
opened as soon as the member's head is known (after an exchange with it, or a push by POST) and
kept open, on which every new batch is sent the moment the shard grows; one frame in flight,
answered with the member's head before the next is sent. A stream's opening (a TLS connection,
the upgrade, the receiver's checks) is thus never on a write's path: opened by the first push
instead, it made that write take twice as long as the later ones in a 10-node benchmark.

Whenever a stream cannot carry a push (the member does not stream, the stream broke, a frame
was refused, an answer did not come within the timeout, a batch is larger than a frame), the
push falls back to a ``POST`` (§5), which says why in its own way, and the stream is tried
again after a short pause. Anti-entropy rounds stay the backstop of both."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from functools import partial

import aiohttp
import orjson

from noon.core.collection import member_of
from noon.store import serve
from noond.client import PeerError, Unreachable
from noond.membership import Member
from noond.wire import STREAM_FRAME_MAX, STREAM_ROUTE, Code
from noond.wiring import Wired, Wiring

log = logging.getLogger("noond")

RETRY_AFTER = 2.0
"""Seconds after a stream failed before another is opened to that member (pushes go by POST
meanwhile)."""
NOT_STREAMING = 300.0
"""Seconds before a member that refused the route (an older release) is asked again."""


INLINE_BYTES = 64 << 10
"""A shard grown by at most this much since a page read up to a member's cursor is read on the
event loop: after a lone write that is a few hundred bytes of pages the last read left cached,
cheaper than a trip to a worker thread, which wakes the thread and then the loop again (a
loaded machine schedules each late, and every member's frame waits for this read)."""


@dataclass
class _Read:
    """The last page read of a shard: from ``key`` (cursor, inode, size when read)."""

    key: tuple[int, int, int]
    page: asyncio.Future[serve.Page]

    def failed(self) -> bool:
        return self.page.done() and self.page.exception() is not None

    def followed_by(self, key: tuple[int, int, int]) -> bool:
        """``key`` reads on from where this page ended, in the same file, grown a little."""
        if not self.page.done() or self.failed():
            return False
        page = self.page.result()
        return (
            not page.more
            and key[0] == page.last
            and key[1] == self.key[1]
            and 0 <= key[2] - self.key[2] <= INLINE_BYTES
        )


@dataclass
class _Stream:
    ws: aiohttp.ClientWebSocketResponse
    cursor: int
    """Highest seq of the shard the member acknowledged on this stream."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class Streams(Wired):
    def __init__(self, wiring: Wiring) -> None:
        super().__init__(wiring)
        self._open: dict[tuple[str, str], _Stream] = {}
        self._not_before: dict[tuple[str, str], float] = {}
        self._opening: dict[tuple[str, str], asyncio.Lock] = {}
        """Per (member, shard): held while a stream is opened, so two tasks (a push, an
        exchange) never open two."""
        self._read: dict[str, _Read] = {}
        """Per shard, the last page read: after a lone write every member's stream stands at
        the same cursor, and one read serves them all."""

    async def send(self, m: Member, shard: str) -> bool:
        """Send on the stream to ``m`` what it lacks of ``shard``; False when the stream cannot
        (the caller pushes by POST instead)."""
        key = (m.node, shard)
        if (
            not self.settings.stream
            or "stream" not in self.client.capabilities.get(m.node, ())
            or shard not in m.heads
        ):
            return False
        if time.monotonic() < self._not_before.get(key, 0.0) or key in self.forks:
            return False
        try:
            async with self._opening.setdefault(key, asyncio.Lock()):
                stream = self._open.get(key)
                if stream is None or stream.ws.closed:
                    stream = await self._connect(m, shard, m.heads[shard])
            async with stream.lock:
                await self._drain(m, shard, stream)
        except (Unreachable, PeerError, aiohttp.ClientError, TimeoutError, OSError) as exc:
            await self._drop(key, exc)
            return False
        return True

    async def open(self, m: Member) -> None:
        """Open a stream for each of our own shards that ``m`` holds and has none open yet,
        sending at once whatever it lacks: the next write finds the stream open."""
        for shard in [s for s in m.heads if member_of(s) == self.node]:
            stream = self._open.get((m.node, shard))
            if stream is None or stream.ws.closed:
                await self.send(m, shard)

    async def _connect(self, m: Member, shard: str, after: int) -> _Stream:
        own = self.holdings.path(shard)
        check = await asyncio.to_thread(serve.digest_of, own, after) if after else None
        checks = await asyncio.to_thread(serve.recent_digests, own, after) if after else []
        ws = await self.client.open_stream(
            m.address,
            expect=m.node,
            shard=shard,
            after=after,
            check=check,
            checks=checks,
            heartbeat=self.settings.timeout,
        )
        stream = self._open[(m.node, shard)] = _Stream(ws, after)
        self.metrics.streams.labels("out").set(len(self._open))
        return stream

    async def _drain(self, m: Member, shard: str, stream: _Stream) -> None:
        while True:
            page = await self._page(shard, stream.cursor)
            if not page.ops:
                return
            if len(page.body) > STREAM_FRAME_MAX:
                raise PeerError(f"a batch of {len(page.body)} bytes is larger than a frame")
            await stream.ws.send_bytes(page.body)
            self.metrics.client_sent.labels(STREAM_ROUTE).inc(len(page.body))
            msg = await stream.ws.receive(timeout=self.settings.timeout)
            if msg.type is not aiohttp.WSMsgType.BINARY:
                raise Unreachable(f"{m.node} closed the stream of {shard} ({msg.type.name})")
            self.metrics.client_received.labels(STREAM_ROUTE).inc(len(msg.data))
            try:
                answer = orjson.loads(msg.data)
            except orjson.JSONDecodeError:
                answer = None
            if not isinstance(answer, dict):
                raise PeerError(f"{m.node} answered a frame of {shard} with no JSON object")
            head = answer.get("head")
            if "error" in answer or not isinstance(head, int):
                code = Code.of(answer.get("code"))
                self.metrics.pushes.labels(code).inc()
                raise PeerError(
                    f"{m.node} refused a frame of {shard}: {str(answer.get('error'))[:500]}",
                    code=code,
                )
            self.metrics.pushes.labels("ok").inc()
            self.metrics.ops_pushed.inc(page.ops)
            m.heads[shard] = head
            stream.cursor = page.last
            if not page.more:
                return

    async def _page(self, shard: str, after: int) -> serve.Page:
        path = self.holdings.path(shard)
        st = os.lstat(path)
        key = (after, st.st_ino, st.st_size)
        known = self._read.get(shard)
        if known is not None and known.key == key and not known.failed():
            return await asyncio.shield(known.page)
        read = partial(serve.read_after, path, after, max_bytes=self.settings.page_bytes)
        page: asyncio.Future[serve.Page]
        if known is not None and known.followed_by(key):
            page = asyncio.get_running_loop().create_future()
            try:
                page.set_result(read())
            except Exception as exc:  # told to every member waiting for it, as a thread's is
                page.set_exception(exc)
        else:
            page = asyncio.ensure_future(asyncio.to_thread(read))
        self._read[shard] = _Read(key, page)
        return await asyncio.shield(page)

    async def _drop(self, key: tuple[str, str], exc: Exception) -> None:
        stream = self._open.pop(key, None)
        self.metrics.streams.labels("out").set(len(self._open))
        route_missing = isinstance(exc, PeerError) and exc.code == Code.NOT_FOUND
        self._not_before[key] = time.monotonic() + (NOT_STREAMING if route_missing else RETRY_AFTER)
        if stream is not None:
            self.metrics.streams_closed.labels("out", "failed").inc()
            with contextlib.suppress(Exception):
                await stream.ws.close()
        why = str(exc) or f"{type(exc).__name__}: no answer within {self.settings.timeout} s"
        log.info("stream of %s to %s: %s (pushing by POST)", key[1], key[0], why)

    async def close(self) -> None:
        for key, stream in list(self._open.items()):
            self.metrics.streams_closed.labels("out", "stopped").inc()
            with contextlib.suppress(Exception):
                await stream.ws.close()
            del self._open[key]
        self.metrics.streams.labels("out").set(0)
