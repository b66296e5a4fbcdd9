"""The daemon's HTTP client: identity checked on every response (the server certificate's CN
must be the node we meant to reach), every body bounded, every answer checked against the
protocol before anyone uses it.

Errors come in two kinds, because they mean different things for liveness:
:class:`Unreachable` (no answer: refused, timed out, TLS failed) counts against a peer's health;
:class:`PeerError` (an answer we cannot use: an error status, a bad body, the wrong identity)
does not make the peer dead, but the exchange fails and the reason is logged and counted.

The bytes travel through a :class:`Transport` (like httpx's transports): :class:`HttpTransport`
is the real one, over aiohttp with one keep-alive session; a test passes its own to run an
exchange against an in-process peer.
"""

from __future__ import annotations

import ssl
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import orjson
from multidict import CIMultiDict

from noon.certs import peer_node_id
from noon.daemon_link import clock_skew, http_date
from noon.daemon_link.bodies import Digest, Info, M, Pushed
from noon.daemon_link.message import BodyError, Fields, parse
from noon.errors import NoonError
from noon.store.serve import Checks
from noond.metrics import Metrics
from noond.wire import (
    REVISIONS,
    STREAM_ACK_MAX,
    Code,
    Header,
    PageHeaders,
    Revisions,
    check_params,
    common_revision,
)

MAX_JSON = 8 << 20
OPS_ROUTE = "/shards/{node}/ops"
"""The route label of op pages and pushes, as the server names it (pulls and pushes alike)."""
IDLE_CLOSE = 10.0
"""Idle keep-alive connections are closed after this long, well before a server gives up on
them (noond waits 30 s): a request never races the server's close."""


class Unreachable(NoonError):
    """The peer did not answer (connection refused or reset, timeout, TLS handshake failed)."""


class PeerError(NoonError):
    """The peer answered with something unusable. ``code`` is the protocol's error code."""

    def __init__(self, message: str, *, status: int = 0, code: Code = Code.INVALID) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class Reply:
    """One answer as a transport got it: the body as sent (maybe compressed), at most the
    request's ``limit`` bytes, and the node id the server's certificate proves (None without
    TLS)."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    peer: str | None


class Transport(Protocol):
    """Moves one request and its answer. Raises :class:`Unreachable` when nothing answered
    and :class:`PeerError` when the body exceeds ``limit``."""

    async def request(
        self,
        method: str,
        address: str,
        path: str,
        *,
        params: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes | None,
        limit: int,
    ) -> Reply: ...

    async def close(self) -> None: ...


class _Response(aiohttp.ClientResponse):
    """Keeps the TLS object of the connection, which aiohttp drops once the body is read."""

    ssl_object: Any = None

    async def start(self, connection: Any) -> aiohttp.ClientResponse:
        transport = connection.transport
        if transport is not None:
            self.ssl_object = transport.get_extra_info("ssl_object")
        return await super().start(connection)


class HttpTransport:
    """HTTP/1.1 (over mutual TLS unless ``ssl_context`` is None) with one keep-alive session
    for every peer, outgoing connections bound to ``source_ip`` when given."""

    def __init__(
        self, *, ssl_context: ssl.SSLContext | None, timeout: float, source_ip: str = ""
    ) -> None:
        self.ssl_context = ssl_context
        self.scheme = "https" if ssl_context else "http"
        self.source_ip = source_ip
        self._timeout = aiohttp.ClientTimeout(
            total=timeout * 3, sock_connect=timeout, sock_read=timeout
        )
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    ssl=self.ssl_context or False,
                    limit=256,
                    limit_per_host=4,
                    keepalive_timeout=IDLE_CLOSE,
                    local_addr=(self.source_ip, 0) if self.source_ip else None,
                ),
                timeout=self._timeout,
                auto_decompress=False,
                response_class=_Response,
            )
        return self._session

    async def request(
        self,
        method: str,
        address: str,
        path: str,
        *,
        params: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes | None,
        limit: int,
    ) -> Reply:
        url = f"{self.scheme}://{address}{path}"
        try:
            async with self.session.request(
                method, url, params=dict(params), data=body, headers=dict(headers)
            ) as resp:
                ssl_object = resp.ssl_object if isinstance(resp, _Response) else None
                peer = peer_node_id(ssl_object) if self.ssl_context else None
                declared = resp.content_length
                if declared is not None and declared > limit:
                    raise PeerError(f"{address}{path}: response of {declared} bytes is too large")
                data = bytearray()
                async for chunk in resp.content.iter_chunked(1 << 16):
                    data += chunk
                    if len(data) > limit:
                        raise PeerError(f"{address}{path}: response exceeds {limit} bytes")
                return Reply(resp.status, CIMultiDict(resp.headers), bytes(data), peer)
        except (TimeoutError, aiohttp.ClientError, ssl.SSLError, OSError) as e:
            raise Unreachable(f"{address}: {type(e).__name__}: {e}") from None

    async def open_stream(
        self,
        address: str,
        path: str,
        *,
        params: Mapping[str, str],
        headers: Mapping[str, str],
        heartbeat: float,
    ) -> tuple[aiohttp.ClientWebSocketResponse, str | None]:
        """A WebSocket to ``path`` (PROTOCOL.md §5.1) on a connection of its own, and the node
        id the server's certificate proves. Pinged every ``heartbeat`` seconds: a peer that
        stops answering is found out even while nothing is written."""
        url = f"{self.scheme}://{address}{path}"
        try:
            ws = await self.session.ws_connect(
                url,
                params=dict(params),
                headers=dict(headers),
                heartbeat=heartbeat,
                max_msg_size=STREAM_ACK_MAX,
                compress=0,
                timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=self._timeout.sock_read),
            )
        except aiohttp.WSServerHandshakeError as e:
            code = Code.NOT_FOUND if e.status == 404 else Code.HTTP
            message = f"{address}{path}: {e.status} {e.message}"
            raise PeerError(message, status=e.status, code=code) from None
        except (TimeoutError, aiohttp.ClientError, ssl.SSLError, OSError) as e:
            raise Unreachable(f"{address}: {type(e).__name__}: {e}") from None
        ssl_object = ws.get_extra_info("ssl_object")
        return ws, peer_node_id(ssl_object) if self.ssl_context else None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


@dataclass
class OpsPage:
    body: bytes
    """Decompressed NDJSON, not validated yet."""
    last: int
    more: bool
    head: int
    checked: bool


class Client:
    def __init__(
        self,
        *,
        node: str,
        advertise: str,
        transport: Transport,
        tls: bool,
        max_body: int,
        metrics: Metrics,
    ) -> None:
        self.node = node
        self.speaks: Revisions = REVISIONS
        """What this node speaks (revision 1 only without its signing key: the daemon says)."""
        self.revision: dict[str, int] = {}
        """Per peer, the highest revision both speak, learned from its ``/info``."""
        self.capabilities: dict[str, frozenset[str]] = {}
        """Per peer, the capabilities its ``/info`` lists (§2.2)."""
        self.advertise = advertise
        self.transport = transport
        self.tls = tls
        self.max_body = max_body
        self.metrics = metrics

    async def close(self) -> None:
        await self.transport.close()

    async def _request(
        self,
        method: str,
        address: str,
        path: str,
        *,
        expect: str | None,
        route: str,
        params: Mapping[str, str] | None = None,
        data: bytes | None = None,
        limit: int = MAX_JSON,
    ) -> tuple[Reply, bytes]:
        """One request; returns the reply and its body, decompressed."""
        headers = self._headers(expect)
        if data is not None:
            headers["Content-Type"] = "application/x-ndjson"
            self.metrics.client_sent.labels(route).inc(len(data))
        sent = time.time()
        reply = await self.transport.request(
            method, address, path, params=params or {}, headers=headers, body=data, limit=limit
        )
        if self.tls and (reply.peer is None or (expect and reply.peer != expect)):
            raise PeerError(
                f"{address} proved identity {reply.peer!r}, expected {expect!r}",
                code=Code.IDENTITY,
            )
        self._clock(reply.peer or expect, reply.headers.get("Date"), sent)
        self.metrics.client_received.labels(route).inc(len(reply.body))
        raw = reply.body
        if reply.headers.get("Content-Encoding", "").lower() == "gzip":
            raw = _gunzip(raw, limit)
        return reply, raw

    def _headers(self, expect: str | None) -> dict[str, str]:
        # Before a peer's /info is read, the lowest revision: every release of a range accepts it.
        revision = self.revision.get(expect or "", self.speaks[0])
        return {
            Header.PROTOCOL: str(revision),
            Header.NODE: self.node,
            Header.ADDRESS: self.advertise,
            "User-Agent": f"noond/{self.speaks[1]}",
            "Accept-Encoding": "gzip",
        }

    async def open_stream(
        self,
        address: str,
        *,
        expect: str,
        shard: str,
        after: int,
        check: int | None,
        checks: Checks,
        heartbeat: float,
    ) -> aiohttp.ClientWebSocketResponse:
        """An op stream of ``shard`` to ``expect`` (PROTOCOL.md §5.1), its identity checked.
        :class:`PeerError` (code ``not_found``) when the transport cannot stream."""
        if not isinstance(self.transport, HttpTransport):
            raise PeerError("this transport carries no streams", code=Code.NOT_FOUND)
        ws, peer = await self.transport.open_stream(
            address,
            f"/shards/{shard}/stream",
            params={"after": str(after), **check_params(check, checks)},
            headers=self._headers(expect),
            heartbeat=heartbeat,
        )
        if self.tls and peer != expect:
            await ws.close()
            raise PeerError(
                f"{address} proved identity {peer!r}, expected {expect!r}", code=Code.IDENTITY
            )
        return ws

    def _clock(self, peer: str | None, date: str | None, sent: float) -> None:
        """Record the peer's clock skew from its ``Date``."""
        theirs = http_date(date)
        if peer is None or theirs is None:
            return
        skew = clock_skew(theirs, sent, time.time())
        self.metrics.peer_clock_skew.labels(peer).set(round(skew, 1))

    async def _json(
        self,
        method: str,
        address: str,
        path: str,
        *,
        expect: str | None,
        route: str,
        params: Mapping[str, str] | None = None,
        data: bytes | None = None,
        limit: int = MAX_JSON,
    ) -> tuple[dict[str, Any], str | None]:
        reply, body = await self._request(
            method,
            address,
            path,
            expect=expect,
            route=route,
            params=params,
            data=data,
            limit=limit,
        )
        try:
            obj = parse(body, limit=limit, what=f"{address}{path} (status {reply.status})")
        except BodyError as exc:
            raise PeerError(str(exc)) from None
        if reply.status != 200:
            raise PeerError(
                f"{address}{path}: {reply.status} {str(obj.get('error', ''))[:500]}",
                status=reply.status,
                code=Code.of(obj.get("code")),
            )
        return obj, reply.peer

    async def _message(
        self,
        kind: type[M],
        method: str,
        address: str,
        path: str,
        *,
        expect: str | None,
        route: str,
        params: Mapping[str, str] | None = None,
        data: bytes | None = None,
    ) -> tuple[M, str | None]:
        """An answer read as the message ``kind`` its route promises; one that is not is a
        :class:`PeerError` naming the field."""
        obj, peer = await self._json(
            method, address, path, expect=expect, route=route, params=params, data=data
        )
        try:
            return kind.read(Fields(obj, f"{address}{path}")), peer
        except BodyError as exc:
            raise PeerError(str(exc)) from None

    async def info(self, address: str, expect: str | None = None) -> tuple[Info, str]:
        """``/info``, with the identity check: the node id it states must be the one its
        certificate proves (and the expected one, when we expect one)."""
        info, proven = await self._message(
            Info, "GET", address, "/info", expect=expect, route="/info"
        )
        node = info.node
        if proven is not None and node != proven:
            raise PeerError(
                f"{address}/info says node {node!r} but its certificate proves {proven!r}",
                code=Code.IDENTITY,
            )
        if expect is not None and node != expect:
            raise PeerError(f"{address} is node {node!r}, not {expect!r}", code=Code.IDENTITY)
        theirs = info.revisions
        common = common_revision(self.speaks, theirs)
        if common is None:
            raise PeerError(
                f"{address} ({node}) speaks protocol revisions {theirs[0]}..{theirs[1]}; this "
                f"node speaks {self.speaks[0]}..{self.speaks[1]}. Upgrade the older one.",
                code=Code.PROTOCOL,
            )
        self.revision[node] = common
        self.capabilities[node] = frozenset(info.capabilities)
        return info, node

    async def digest(self, address: str, *, expect: str) -> Digest:
        """``/shards/digest`` (PROTOCOL.md §3.1)."""
        route = "/shards/digest"
        return (await self._message(Digest, "GET", address, route, expect=expect, route=route))[0]

    async def get_json(
        self,
        address: str,
        path: str,
        *,
        expect: str,
        params: dict[str, str] | None = None,
        limit: int = MAX_JSON,
    ) -> dict[str, Any]:
        answer = await self._json(
            "GET", address, path, expect=expect, route=path, params=params, limit=limit
        )
        return answer[0]

    async def pull(
        self,
        address: str,
        *,
        expect: str,
        shard: str,
        after: int,
        check: int | None,
        limit: int,
        checks: Checks = (),
    ) -> OpsPage:
        params = {"after": str(after), "limit": str(limit), **check_params(check, checks)}
        reply, body = await self._request(
            "GET",
            address,
            f"/shards/{shard}/ops",
            expect=expect,
            route=OPS_ROUTE,
            params=params,
            limit=self.max_body,
        )
        if reply.status != 200:
            try:
                obj = orjson.loads(body)
            except orjson.JSONDecodeError:
                obj = {}
            if not isinstance(obj, dict):
                obj = {}
            raise PeerError(
                f"{address} ops of {shard}: {reply.status} {str(obj.get('error', ''))[:500]}",
                status=reply.status,
                code=Code.of(obj.get("code")),
            )
        paging = PageHeaders.decode(reply.headers)
        if paging is None:
            raise PeerError(f"{address} ops of {shard}: missing or bad paging headers")
        return OpsPage(body, paging.last, paging.more, paging.head, paging.checked)

    async def push(
        self,
        address: str,
        *,
        expect: str,
        shard: str,
        after: int,
        check: int | None,
        body: bytes,
        checks: Checks = (),
    ) -> Pushed:
        params = {"after": str(after), **check_params(check, checks)}
        answer = await self._message(
            Pushed,
            "POST",
            address,
            f"/shards/{shard}/ops",
            expect=expect,
            route=OPS_ROUTE,
            params=params,
            data=body,
        )
        return answer[0]


def _gunzip(data: bytes, limit: int) -> bytes:
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise PeerError(f"bad gzip body: {exc}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise PeerError(f"decompressed body exceeds {limit} bytes")
    return out
