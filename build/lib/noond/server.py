"""The daemon's HTTP routes (PROTOCOL.md, "Routes"). Every input is validated and bounded before
it touches a file; every refusal is a JSON ``{"error", "code"}`` with a status that says why."""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from noon.certs import peer_node_id
from noon.core.ops import valid_node_id
from noon.errors import NoonError
from noon.names import shard_file
from noon.store import replica
from noon.store.store import ForkDetected
from noond.config import CAPABILITIES, PROTOCOL, parse_address

if TYPE_CHECKING:
    from noond.daemon import Daemon

log = logging.getLogger("noond.server")

MAX_OPS_PER_PUSH = 200_000
OPEN_ROUTES = frozenset({"/info", "/health", "/metrics"})
"""Answered whatever protocol revision the caller speaks, so it can learn ours."""


def _error(status: int, code: str, message: str, **extra: Any) -> web.Response:
    return web.json_response(
        {"error": message, "code": code, **extra},
        status=status,
        dumps=lambda o: orjson.dumps(o).decode(),
    )


def _json(obj: Any) -> web.Response:
    return web.Response(body=orjson.dumps(obj), content_type="application/json")


class Refused(NoonError):
    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.response = _error(status, code, message, **extra)


def _int_param(request: web.Request, name: str, default: int | None, lo: int, hi: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        if default is None:
            raise Refused(400, "bad_request", f"query parameter {name!r} is required")
        return default
    if not raw.isdigit() or len(raw) > 16 or not lo <= int(raw) <= hi:
        raise Refused(400, "bad_request", f"{name!r} must be an integer in [{lo}, {hi}]")
    return int(raw)


def _check_param(request: web.Request) -> int | None:
    raw = request.query.get("check")
    if raw is None:
        return None
    if len(raw) != 16 or any(c not in "0123456789abcdefABCDEF" for c in raw):
        raise Refused(400, "bad_request", "'check' must be 16 hex digits")
    return int(raw, 16)


def _checks_param(request: web.Request) -> list[tuple[int, int]]:
    """``checks=seq:digest,...``: more of the caller's ops for a fork to show on (§4)."""
    raw = request.query.get("checks")
    if not raw:
        return []
    pairs = raw.split(",")
    if len(pairs) > replica.MAX_CHECKS:
        raise Refused(400, "bad_request", f"at most {replica.MAX_CHECKS} 'checks'")
    out = []
    for pair in pairs:
        seq, _, digest = pair.partition(":")
        if (
            not seq.isdigit()
            or len(seq) > 16
            or len(digest) != 16
            or any(c not in "0123456789abcdefABCDEF" for c in digest)
        ):
            raise Refused(
                400,
                "bad_request",
                "'checks' must be seq:digest pairs (16 hex digits), comma-separated",
            )
        out.append((int(seq), int(digest, 16)))
    return out


def _shard_param(request: web.Request) -> str:
    node = request.match_info["node"]
    if not valid_node_id(node):
        raise Refused(400, "bad_request", "invalid node id in path")
    return node


def build_app(daemon: Daemon) -> web.Application:
    config = daemon.config
    metrics = daemon.metrics

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        route = (
            request.match_info.route.resource.canonical
            if (request.match_info.route.resource is not None)
            else "unmatched"
        )
        try:
            response = await _guarded(request, handler)
        except Refused as refused:
            response = refused.response
            metrics.rejected.labels(refused.code).inc()
        except web.HTTPException as exc:
            code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
                exc.status, "http"
            )
            response = _error(exc.status, code, exc.reason)
        except Exception:
            log.exception("internal error on %s %s", request.method, request.path)
            response = _error(500, "internal", "internal error")
        metrics.requests.labels(route, str(response.status)).inc()
        body = getattr(response, "body", None)
        if isinstance(body, bytes | bytearray):
            metrics.server_sent.labels(route).inc(len(body))
        return response

    async def _guarded(request: web.Request, handler: Any) -> web.StreamResponse:
        caller: str | None = None
        if config.tls:
            caller = peer_node_id(
                request.transport.get_extra_info("ssl_object") if request.transport else None
            )
            if caller is None:
                raise Refused(403, "forbidden", "no verified client certificate")
            if caller in daemon.ignored:
                raise Refused(403, "forbidden", f"node {caller!r} is revoked or departed")
        proto = request.headers.get("X-Noon-Protocol")
        if proto is not None and proto != str(PROTOCOL) and request.path not in OPEN_ROUTES:
            raise Refused(
                400,
                "protocol",
                f"this node speaks protocol revision {PROTOCOL}, the request says {proto!r}; "
                "upgrade the older node",
                protocol=PROTOCOL,
            )
        if caller is not None and caller != config.node:
            try:
                address = parse_address(request.headers.get("X-Noon-Address", ""))
            except ValueError:
                address = ""
            member = daemon.membership.members.get(caller)
            if member is not None and address in ("", member.address):
                daemon.membership.heard_from(caller)
            elif address:
                daemon.suggest(address, caller, "inbound")  # new, or moved: verify first
        request["caller"] = caller
        return await handler(request)

    async def health(request: web.Request) -> web.Response:
        return _json({"status": "ok"})

    async def info(request: web.Request) -> web.Response:
        return _json(
            {
                "node": config.node,
                "address": daemon.advertise,
                "protocol": PROTOCOL,
                "capabilities": list(CAPABILITIES),
                "software": "noond",
            }
        )

    async def status(request: web.Request) -> web.Response:
        summaries = await daemon.summaries()
        own = summaries.get(config.node)
        return _json(
            {
                "node": config.node,
                "protocol": PROTOCOL,
                "uptime_seconds": round(time.monotonic() - daemon.started, 3),
                "shards": len(summaries),
                "own_seq": own.seq if own else 0,
                "behind": daemon.behind,
                "peers": daemon.membership.counts(),
                "candidates": len(daemon.membership.candidates),
                "forks": [
                    {"peer": peer, "shard": shard, "error": msg}
                    for (peer, shard), msg in sorted(daemon.forks.items())
                ],
                "rounds": daemon.rounds,
                "collection": daemon.collector.status(),
            }
        )

    async def peers(request: web.Request) -> web.Response:
        return _json(
            {
                "peers": [
                    m.as_json()
                    for m in sorted(daemon.membership.members.values(), key=lambda m: m.node)
                ],
                "candidates": [
                    {
                        "address": c.address,
                        "node": c.node,
                        "source": c.source,
                        "failures": c.failures,
                    }
                    for c in daemon.membership.candidates.values()
                ],
                "revoked": sorted(daemon.revoked),
                "departed": sorted(daemon.departed),
            }
        )

    async def membership(request: web.Request) -> web.Response:
        return _json({"peers": daemon.membership_payload()})

    async def shards(request: web.Request) -> web.Response:
        summaries = await daemon.summaries()
        return _json({"shards": [s.as_json() for s in summaries.values()]})

    async def digest(request: web.Request) -> web.Response:
        summaries = await daemon.summaries()
        return _json(
            {
                "root": daemon.root(summaries),
                "shards": len(summaries),
                "members": daemon.members_hash(),
            }
        )

    async def get_ops(request: web.Request) -> web.StreamResponse:
        node = _shard_param(request)
        if node in daemon.revoked:
            raise Refused(404, "not_found", f"shard {node!r} is not served (revoked)")
        after = _int_param(request, "after", 0, 0, (1 << 53) - 1)
        limit = _int_param(request, "limit", config.page_bytes, 1, 1 << 40)
        limit = max(1024, min(limit, config.max_body // 2))
        check = _check_param(request)
        checks = _checks_param(request)
        path = config.store.dir / shard_file(node)
        try:
            page = await asyncio.to_thread(
                replica.read_after, path, after, max_bytes=limit, check=check, checks=checks
            )
        except ForkDetected as exc:
            daemon.record_fork(request.get("caller") or "?", node, str(exc))
            raise Refused(409, "fork", str(exc)) from None
        body = page.body
        headers = {
            "X-Noon-Last": str(page.last),
            "X-Noon-More": "1" if page.more else "0",
            "X-Noon-Head": str(page.head),
            "X-Noon-Checked": "1" if page.checked else "0",
            "X-Noon-Ops": str(page.ops),
        }
        if "gzip" in request.headers.get("Accept-Encoding", "") and body:
            gz = zlib.compressobj(6, zlib.DEFLATED, 31)
            body = gz.compress(body) + gz.flush()
            headers["Content-Encoding"] = "gzip"
        metrics.ops_served.inc(page.ops)
        return web.Response(body=body, headers=headers, content_type="application/x-ndjson")

    async def push_ops(request: web.Request) -> web.Response:
        node = _shard_param(request)
        caller = request.get("caller")
        if node in daemon.ignored:
            raise Refused(403, "forbidden", f"shard {node!r} is revoked or departed")
        if node == config.node:
            raise Refused(403, "forbidden", "nobody pushes this node's own shard to it")
        if config.tls and caller != node:
            raise Refused(
                403,
                "forbidden",
                f"a peer may push only its own shard: certificate {caller!r} cannot push {node!r}",
            )
        if not config.tls and request.headers.get("X-Noon-Node") != node:
            raise Refused(403, "forbidden", "a peer may push only its own shard")
        after = _int_param(request, "after", None, 0, (1 << 53) - 1)
        check = _check_param(request)
        checks = _checks_param(request)
        declared = request.content_length
        if declared is not None and declared > config.max_body:
            raise Refused(413, "too_large", f"body larger than {config.max_body} bytes")
        body = bytearray()
        try:
            async with asyncio.timeout(config.timeout * 3):
                while True:
                    chunk = await request.content.read(1 << 16)
                    if not chunk:
                        break
                    body += chunk
                    if len(body) > config.max_body:
                        raise Refused(413, "too_large", f"body larger than {config.max_body} bytes")
        except TimeoutError:
            raise Refused(408, "timeout", "the body did not arrive in time") from None
        metrics.server_received.inc(len(body))
        try:
            ops = await asyncio.to_thread(
                replica.parse_ops, bytes(body), node, max_ops=MAX_OPS_PER_PUSH
            )
        except replica.ReplicaError as exc:
            raise Refused(400, "invalid_ops", f"nothing stored: {exc}") from None
        held = (await daemon.summary(node)).seq
        if held < after:
            raise Refused(
                409,
                "gap",
                f"this node holds {node!r} up to seq {held}, the push starts after {after}",
                head=held,
            )
        pairs = [(after, check)] if check is not None and after else []
        try:
            await asyncio.to_thread(
                replica.compare,
                config.store.dir / shard_file(node),
                [*pairs, *checks],
                who="pusher",
            )
        except ForkDetected as exc:
            message = f"{exc}; refusing to merge"
            daemon.record_fork(caller or node, node, message)
            raise Refused(409, "fork", message) from None
        try:
            done = await asyncio.to_thread(
                replica.append, config.store.dir, node, ops, fsync=config.store.fsync
            )
        except ForkDetected as exc:
            daemon.record_fork(caller or node, node, str(exc))
            raise Refused(409, "fork", str(exc)) from None
        except replica.SkipsCompacted as exc:
            # This replica lags behind a compaction of the pusher: it re-fetches the whole
            # shard when it next pulls (PROTOCOL.md §5).
            raise Refused(409, "gap", str(exc), head=held) from None
        metrics.ops_received.inc(done.appended)
        return _json({"appended": done.appended, "skipped": done.skipped, "head": done.head})

    async def graph(request: web.Request) -> web.Response:
        try:
            return _json(await daemon.graph())
        except ForkDetected as exc:
            raise Refused(409, "fork", str(exc)) from None

    async def metrics_route(request: web.Request) -> web.Response:
        daemon.update_gauges()
        return web.Response(
            body=generate_latest(metrics.registry),
            headers={"Content-Type": CONTENT_TYPE_LATEST},
        )

    app = web.Application(middlewares=[guard], client_max_size=config.max_body)
    app.router.add_get("/health", health)
    app.router.add_get("/info", info)
    app.router.add_get("/status", status)
    app.router.add_get("/peers", peers)
    app.router.add_get("/membership", membership)
    app.router.add_get("/shards", shards)
    app.router.add_get("/shards/digest", digest)
    app.router.add_get("/shards/{node}/ops", get_ops)
    app.router.add_post("/shards/{node}/ops", push_ops)
    app.router.add_get("/graph", graph)
    app.router.add_get("/metrics", metrics_route)
    return app


def build_metrics_app(daemon: Daemon) -> web.Application:
    """The optional plaintext listener for Prometheus (``NOOND_METRICS_LISTEN``): ``/metrics``
    and ``/health`` only, nothing that reads or writes memories."""

    async def health(request: web.Request) -> web.Response:
        return _json({"status": "ok"})

    async def metrics_route(request: web.Request) -> web.Response:
        daemon.update_gauges()
        return web.Response(
            body=generate_latest(daemon.metrics.registry),
            headers={"Content-Type": CONTENT_TYPE_LATEST},
        )

    app = web.Application()
    app.router.add_get("/health", health)
    app.router.add_get("/metrics", metrics_route)
    return app
