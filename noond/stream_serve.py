"""The receiving end of op streams (PROTOCOL.md §5.1): a member keeps one WebSocket open per
shard it authors and sends each new batch on it the moment it is written; every frame is taken
exactly as a ``POST`` push would be (:mod:`noond.intake`) and answered with the head held.

What one stream may cost here is bounded: a frame of at most ``STREAM_FRAME_MAX`` bytes, which
must arrive whole within the idle time (a sender that stalls, mid-frame or between frames, is
closed then); one stream per member and shard (a new one replaces the old); no lock is held
while a frame is awaited."""

from __future__ import annotations

import contextlib
import logging

import orjson
from aiohttp import WSMsgType, web

from noond import intake
from noond.node import Node
from noond.params import Refused, check_param, checks_param, shard_param, uint_param
from noond.wire import STREAM_FRAME_MAX, STREAM_ROUTE, Code, Header

log = logging.getLogger("noond.server")


class Inbound:
    """The streams open to this node, one per (sender, shard)."""

    def __init__(self, daemon: Node) -> None:
        self.daemon = daemon
        self._open: dict[tuple[str, str], web.WebSocketResponse] = {}

    async def opened(self, key: tuple[str, str], ws: web.WebSocketResponse) -> None:
        older = self._open.get(key)
        self._open[key] = ws
        self.daemon.metrics.streams.labels("in").set(len(self._open))
        if older is not None and not older.closed:
            self.daemon.metrics.streams_closed.labels("in", "replaced").inc()
            await older.close(code=1001, message=b"replaced by a newer stream")

    def closed(self, key: tuple[str, str], ws: web.WebSocketResponse, reason: str) -> None:
        if self._open.get(key) is ws:
            del self._open[key]
        self.daemon.metrics.streams.labels("in").set(len(self._open))
        self.daemon.metrics.streams_closed.labels("in", reason).inc()

    async def serve(self, request: web.Request) -> web.StreamResponse:
        return await stream_ops(self, request)

    async def close_all(self, _app: web.Application) -> None:
        for ws in list(self._open.values()):
            await ws.close(code=1001, message=b"noond stops")


async def stream_ops(inbound: Inbound, request: web.Request) -> web.StreamResponse:
    """``GET /shards/{node}/stream?after=N&check=D&checks=...``, upgraded to a WebSocket: the
    checks of a push (§5, steps 1, 3 and 4) once, then every frame as a push body."""
    daemon = inbound.daemon
    node = shard_param(request)
    caller = request.get("caller")
    sender = intake.pusher_of(daemon, node, caller, request.headers.get(Header.NODE))
    after = uint_param(request, "after", None)
    check = check_param(request)
    pairs = [(after, check)] if check is not None and after else []
    held = await intake.continues(daemon, caller, node, after, [*pairs, *checks_param(request)])
    idle = daemon.config.timeout * 3
    ws = web.WebSocketResponse(
        max_msg_size=STREAM_FRAME_MAX, compress=False, autoping=True, timeout=daemon.config.timeout
    )
    if not ws.can_prepare(request).ok:
        raise Refused(400, Code.BAD_REQUEST, "this route is a WebSocket: send an upgrade")
    await ws.prepare(request)
    key = (sender, node)
    await inbound.opened(key, ws)
    reason = "peer"
    try:
        while True:
            try:
                msg = await ws.receive(timeout=idle)
            except TimeoutError:
                reason = "idle"
                log.info("closed the stream of %s from %s: no frame for %s s", node, sender, idle)
                break
            if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
                break
            if msg.type is WSMsgType.ERROR:
                reason = "failed"
                log.info("stream of %s from %s failed: %s", node, sender, ws.exception())
                break
            if msg.type is not WSMsgType.BINARY:
                reason = "refused"
                await ws.send_bytes(_error(Code.BAD_REQUEST, "frames are binary NDJSON"))
                break
            daemon.metrics.server_received.labels(STREAM_ROUTE).inc(len(msg.data))
            try:
                intake.still_member(daemon, caller)
                done = await intake.take(
                    daemon, caller, node, msg.data, held, [], request["revision"]
                )
            except Refused as exc:
                reason = "refused"
                daemon.metrics.rejected.labels(exc.code).inc()
                if exc.logged:
                    log.warning(
                        "refused a frame of %s from %s: %s (%s)", node, sender, exc, exc.code
                    )
                await ws.send_bytes(exc.body)
                break
            held = done.head
            answer = orjson.dumps({"head": done.head})
            daemon.metrics.server_sent.labels(STREAM_ROUTE).inc(len(answer))
            await ws.send_bytes(answer)
    except (ConnectionError, RuntimeError) as exc:  # the sender went away mid-answer
        reason = "failed"
        log.info("stream of %s from %s ended: %s", node, sender, exc)
    except Exception:  # after the upgrade no HTTP error can be answered: log and close
        reason = "failed"
        log.exception("internal error on the stream of %s from %s", node, sender)
    finally:
        inbound.closed(key, ws, reason)
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.close()
    return ws


def _error(code: Code, message: str) -> bytes:
    return orjson.dumps({"error": message, "code": code.value})
