"""The daemon's HTTP routes (PROTOCOL.md §3). Every input is validated and bounded before it
touches a file; every refusal is a JSON ``{"error", "code"}`` with a status that says why.

Handlers are module-level functions of the request; the daemon they serve is
``request.app[DAEMON]``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from noon.certs import ROLE_METRICS, peer_identity
from noon.core.collection import member_of
from noon.daemon_link import bodies
from noon.net import is_loopback
from noon.store import serve, store
from noon.store.errors import ForkDetected
from noond import intake
from noond.config import parse_address
from noond.node import Node
from noond.params import (
    Refused,
    check_param,
    checks_param,
    error_response,
    json_response,
    read_body,
    shard_param,
    uint_param,
)
from noond.shards import refused
from noond.stream_serve import Inbound
from noond.wire import (
    CAPABILITIES,
    STREAM_ROUTE,
    Code,
    Header,
    PageHeaders,
    listing_root,
    summary_json,
)

log = logging.getLogger("noond.server")

DAEMON: web.AppKey[Node] = web.AppKey("daemon")
OPEN_ROUTES = frozenset({"/info", "/health", "/metrics"})
"""Answered whatever protocol revision the caller speaks, so it can learn ours."""
MONITORING_ROUTES = frozenset({"/health", "/metrics"})
"""All a monitoring identity (a ``--role metrics`` certificate) may reach."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _route(request: web.Request) -> str:
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "unmatched"


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Authenticate, check the protocol revision, turn every refusal into its JSON error, and
    count every request and the bytes it sent."""
    metrics = request.app[DAEMON].metrics
    route = _route(request)
    try:
        response = await _admit(request, handler)
    except Refused as exc:
        response = exc.response
        metrics.rejected.labels(exc.code).inc()
        if exc.logged:
            log.warning(
                "refused %s %s from %s: %s (%s)",
                request.method,
                route,
                request.get("caller") or request.remote,
                exc,
                exc.code,
            )
    except web.HTTPException as exc:
        code = {
            404: Code.NOT_FOUND,
            405: Code.METHOD_NOT_ALLOWED,
            413: Code.TOO_LARGE,
        }.get(exc.status, Code.HTTP)
        response = error_response(exc.status, code, exc.reason)
    except Exception:
        log.exception("internal error on %s %s", request.method, request.path)
        response = error_response(500, Code.INTERNAL, "internal error")
    metrics.requests.labels(route, request.method, str(response.status)).inc()
    body = getattr(response, "body", None)
    if isinstance(body, bytes | bytearray):
        metrics.server_sent.labels(route).inc(len(body))
    return response


async def _admit(request: web.Request, handler: Handler) -> web.StreamResponse:
    daemon = request.app[DAEMON]
    config = daemon.config
    caller: str | None = None
    if config.tls:
        identity = peer_identity(
            request.transport.get_extra_info("ssl_object") if request.transport else None
        )
        if identity is None:
            raise Refused(403, Code.FORBIDDEN, "no verified client certificate with a known role")
        caller, role = identity
        if role == ROLE_METRICS:
            if request.path not in MONITORING_ROUTES:
                raise Refused(
                    403, Code.FORBIDDEN, "a metrics certificate reaches /metrics and /health only"
                )
            return await handler(request)
        revoked = daemon.signers.revocations.cutoff(caller or "") is not None
        if caller in daemon.state.ignored or revoked:
            raise Refused(403, Code.FORBIDDEN, f"node {caller!r} is revoked or departed")
    proto = request.headers.get(Header.PROTOCOL)
    low, high = daemon.revisions
    revision = _revision_said(request)
    if proto is not None and request.path not in OPEN_ROUTES and revision is None:
        raise Refused(
            400,
            Code.PROTOCOL,
            f"this node speaks protocol revisions {low}..{high}, the request says {proto!r}; "
            "upgrade the older node",
            protocol=high,
        )
    request["revision"] = revision or low
    if caller is not None and caller != config.node:
        try:
            address = parse_address(request.headers.get(Header.ADDRESS, ""))
        except ValueError:
            address = ""
        member = daemon.membership.members.get(caller)
        if member is not None and address in ("", member.address):
            daemon.membership.heard_from(caller)
        elif address:
            # New, or moved: verified first. Only a caller at that very host makes a
            # backed-off address due at once; what else it says is hearsay (membership.py).
            calling = address.rpartition(":")[0].strip("[]") == (request.remote or "")
            daemon.suggest(address, caller, "inbound", via=caller, calling=calling)
    request["caller"] = caller
    return await handler(request)


def _revision_said(request: web.Request) -> int | None:
    """The revision the caller's header says, when this node speaks it."""
    low, high = request.app[DAEMON].revisions
    said = request.headers.get(Header.PROTOCOL, "")
    return int(said) if said.isdigit() and len(said) < 5 and low <= int(said) <= high else None


def _revision_for(request: web.Request) -> int:
    return _revision_said(request) or request.app[DAEMON].revisions[1]


async def health(request: web.Request) -> web.Response:
    return json_response({"status": "ok"})


async def info(request: web.Request) -> web.Response:
    daemon = request.app[DAEMON]
    answer = bodies.Info(
        node=daemon.node,
        address=daemon.advertise,
        # The caller's revision when this node speaks it: a node of a release before ranges
        # talks only to a peer whose "protocol" is its own (PROTOCOL.md §2.1).
        protocol=_revision_for(request),
        revisions=daemon.revisions,
        capabilities=tuple(c for c in CAPABILITIES if c != "signed" or daemon.revisions[1] > 1),
    )
    return json_response(answer.to_json())


async def status(request: web.Request) -> web.Response:
    daemon = request.app[DAEMON]
    summaries = await daemon.holdings.summaries()
    own = summaries.get(daemon.node)
    answer = bodies.Status(
        node=daemon.node,
        protocol=daemon.revisions[1],
        uptime_seconds=round(time.monotonic() - daemon.started, 3),
        shards=len(summaries),
        own_seq=own.seq if own else 0,
        behind=daemon.exchanger.recovery.behind,
        claims=daemon.exchanger.recovery.reports(),
        peers=bodies.PeerCounts(**daemon.membership.counts()),
        candidates=len(daemon.membership.candidates),
        forks=daemon.forks.reports(),
        rounds=daemon.scheduler.rounds,
        collection=daemon.collector.status(),
        relays=daemon.relays.status(),
    )
    return json_response(answer.to_json())


async def peers(request: web.Request) -> web.Response:
    daemon = request.app[DAEMON]
    local = request.get("caller") == daemon.node or (
        not daemon.config.tls and is_loopback(request.remote or "")
    )
    if local:  # the operator's `noon status` / `noon peers`: show lag as it is now
        await daemon.fresh_reports()
    answer = bodies.Peers(
        peers=tuple(
            m.report() for m in sorted(daemon.membership.members.values(), key=lambda m: m.node)
        ),
        candidates=tuple(
            bodies.CandidateEntry(c.address, c.node, c.source, c.failures)
            for c in daemon.membership.candidates.values()
        ),
        revoked=tuple(sorted(daemon.state.revoked)),
        departed=tuple(sorted(daemon.state.departed)),
    )
    return json_response(answer.to_json())


async def membership(request: web.Request) -> web.Response:
    return json_response({"peers": request.app[DAEMON].membership_payload()})


async def shards(request: web.Request) -> web.Response:
    summaries = await request.app[DAEMON].holdings.summaries()
    return json_response({"shards": [summary_json(s) for s in summaries.values()]})


async def digest(request: web.Request) -> web.Response:
    daemon = request.app[DAEMON]
    summaries = await daemon.holdings.summaries()
    answer = bodies.Digest(
        root=listing_root(summaries),
        shards=len(summaries),
        members=daemon.members_hash(),
        revocations=daemon.signers.revocations.digest(),
    )
    return json_response(answer.to_json())


async def get_ops(request: web.Request) -> web.StreamResponse:
    daemon = request.app[DAEMON]
    config = daemon.config
    node = shard_param(request)
    if refused(node, daemon.state.revoked):
        raise Refused(404, Code.NOT_FOUND, f"shard {node!r} is not served (revoked)")
    after = uint_param(request, "after", 0)
    limit = uint_param(request, "limit", config.page_bytes, 1 << 40)
    limit = max(1024, min(limit, config.max_body // 2))
    check = check_param(request)
    checks = checks_param(request)
    path = daemon.holdings.path(node)
    try:
        page = await asyncio.to_thread(
            serve.read_after, path, after, max_bytes=limit, check=check, checks=checks
        )
    except ForkDetected as exc:
        # The reader's history differs from ours, and the reader records it (it gets this
        # answer). Here it is a fork only on the author's own word (its own shard, as with a
        # push): any other reader could send any digest, so nothing is recorded for it.
        caller = request.get("caller")
        if caller is not None and member_of(node) == caller:
            daemon.forks.record(caller, node, str(exc))
        raise Refused(409, Code.FORK, str(exc)) from None
    body = page.body
    headers = PageHeaders(page.last, page.more, page.head, page.checked, page.ops).encode()
    if "gzip" in request.headers.get("Accept-Encoding", "") and body:
        gz = zlib.compressobj(6, zlib.DEFLATED, 31)
        body = gz.compress(body) + gz.flush()
        headers["Content-Encoding"] = "gzip"
    daemon.metrics.ops_served.inc(page.ops)
    return web.Response(body=body, headers=headers, content_type="application/x-ndjson")


async def push_ops(request: web.Request) -> web.Response:
    daemon = request.app[DAEMON]
    config = daemon.config
    node = shard_param(request)
    caller = request.get("caller")
    intake.pusher_of(daemon, node, caller, request.headers.get(Header.NODE))
    after = uint_param(request, "after", None)
    check = check_param(request)
    checks = checks_param(request)
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        # Inflating on the event loop would stall every peer, and a small bomb inflates to
        # far beyond max_body: bodies travel as they are (noond never compresses them).
        raise Refused(415, Code.UNSUPPORTED_ENCODING, f"request bodies are not {encoding}-coded")
    body = await read_body(request, config.max_body, config.timeout * 3)
    daemon.metrics.server_received.labels(_route(request)).inc(len(body))
    pairs = [(after, check)] if check is not None and after else []
    done = await intake.take(
        daemon, caller, node, body, after, [*pairs, *checks], request["revision"]
    )
    return json_response(bodies.Pushed(done.appended, done.skipped, done.head).to_json())


async def signers(request: web.Request) -> web.Response:
    """The signing certificates known for a node (PROTOCOL.md §13.2): checked against the CA
    here, and by every node that takes them."""
    daemon = request.app[DAEMON]
    node = shard_param(request)
    pems = daemon.signers.pems(node)
    if not pems:
        raise Refused(404, Code.NOT_FOUND, f"no signing certificate of {node!r} is known here")
    found = await asyncio.to_thread(daemon.signers.checkpoints, node)
    return json_response({"node": node, "certs": pems, "checkpoints": found})


async def revocations(request: web.Request) -> web.Response:
    """The revocations signed by the CA that this node believes (PROTOCOL.md §13.6)."""
    known = request.app[DAEMON].signers.revocations
    known.reload()
    return json_response({"records": [r.encode().decode() for r in known.records()]})


async def graph(request: web.Request) -> web.Response:
    try:
        return json_response(await request.app[DAEMON].graph())
    except store.ForkDetected as exc:
        raise Refused(409, Code.FORK, str(exc)) from None


async def metrics(request: web.Request) -> web.Response:
    daemon = request.app[DAEMON]
    daemon.update_gauges()
    return web.Response(
        body=generate_latest(daemon.metrics.registry),
        headers={"Content-Type": CONTENT_TYPE_LATEST},
    )


def build_app(daemon: Node) -> web.Application:
    app = web.Application(middlewares=[guard], client_max_size=daemon.config.max_body)
    app[DAEMON] = daemon
    app.router.add_get("/health", health)
    app.router.add_get("/info", info)
    app.router.add_get("/status", status)
    app.router.add_get("/peers", peers)
    app.router.add_get("/membership", membership)
    app.router.add_get("/shards", shards)
    app.router.add_get("/shards/digest", digest)
    app.router.add_get("/shards/{node}/ops", get_ops)
    app.router.add_post("/shards/{node}/ops", push_ops)
    inbound = Inbound(daemon)
    app.router.add_get(STREAM_ROUTE, inbound.serve)
    app.on_shutdown.append(inbound.close_all)
    app.router.add_get("/signers/{node}", signers)
    app.router.add_get("/revocations", revocations)
    app.router.add_get("/graph", graph)
    app.router.add_get("/metrics", metrics)
    return app


def build_metrics_app(daemon: Node) -> web.Application:
    """The optional plaintext listener for Prometheus (``NOOND_METRICS_LISTEN``): ``/metrics``
    and ``/health`` only, nothing that reads or writes memories."""
    app = web.Application()
    app[DAEMON] = daemon
    app.router.add_get("/health", health)
    app.router.add_get("/metrics", metrics)
    return app
