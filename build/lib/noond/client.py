"""The daemon's HTTP client: one keep-alive session to every peer, identity checked on every
response (the server certificate's CN must be the node we meant to reach), every body bounded.

Errors come in two kinds, because they mean different things for liveness:
:class:`Unreachable` (no answer: refused, timed out, TLS failed) counts against a peer's health;
:class:`PeerError` (an answer we cannot use: an error status, a bad body, the wrong identity)
does not make the peer dead, but the exchange fails and the reason is logged and counted.
"""

from __future__ import annotations

import email.utils
import ssl
import time
import zlib
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from noon.certs import peer_node_id
from noon.errors import NoonError
from noon.store.replica import Checks
from noond.config import PROTOCOL
from noond.metrics import Metrics

MAX_JSON = 8 << 20


class Unreachable(NoonError):
    """The peer did not answer (connection refused or reset, timeout, TLS handshake failed)."""


class PeerError(NoonError):
    """The peer answered with something unusable. ``code`` is the protocol's error code."""

    def __init__(self, message: str, *, status: int = 0, code: str = "invalid") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class _Response(aiohttp.ClientResponse):
    """Keeps the TLS object of the connection, which aiohttp drops once the body is read."""

    ssl_object: Any = None

    async def start(self, connection: Any) -> aiohttp.ClientResponse:
        transport = connection.transport
        if transport is not None:
            self.ssl_object = transport.get_extra_info("ssl_object")
        return await super().start(connection)


@dataclass
class OpsPage:
    body: bytes
    last: int
    more: bool
    head: int
    checked: bool
    wire_bytes: int


class Client:
    def __init__(
        self,
        *,
        node: str,
        advertise: str,
        source_ip: str = "",
        ssl_context: ssl.SSLContext | None,
        timeout: float,
        max_body: int,
        metrics: Metrics,
    ) -> None:
        self.node = node
        self.advertise = advertise
        self.source_ip = source_ip
        self.ssl_context = ssl_context
        self.scheme = "https" if ssl_context else "http"
        self.max_body = max_body
        self.metrics = metrics
        self._timeout = aiohttp.ClientTimeout(
            total=timeout * 3, sock_connect=timeout, sock_read=timeout
        )
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    ssl=self.ssl_context or False, limit=256, limit_per_host=4
                ),
                timeout=self._timeout,
                auto_decompress=False,
                response_class=_Response,
                headers={
                    "X-Noon-Protocol": str(PROTOCOL),
                    "X-Noon-Node": self.node,
                    "X-Noon-Address": self.advertise,
                    "User-Agent": f"noond/{PROTOCOL}",
                },
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _request(
        self,
        method: str,
        address: str,
        path: str,
        *,
        expect: str | None,
        route: str,
        params: dict[str, str] | None = None,
        data: bytes | None = None,
        limit: int = MAX_JSON,
    ) -> tuple[int, dict[str, str], bytes, str | None, int]:
        """One request; returns (status, headers, body, proven node id, wire body bytes)."""
        url = f"{self.scheme}://{address}{path}"
        headers = {"Accept-Encoding": "gzip"}
        if data is not None:
            headers["Content-Type"] = "application/x-ndjson"
            self.metrics.client_sent.labels(route).inc(len(data))
        sent = time.time()
        try:
            async with self.session.request(
                method, url, params=params, data=data, headers=headers
            ) as resp:
                ssl_object = resp.ssl_object if isinstance(resp, _Response) else None
                proven = peer_node_id(ssl_object) if self.ssl_context else None
                if self.ssl_context and (proven is None or (expect and proven != expect)):
                    raise PeerError(
                        f"{address} proved identity {proven!r}, expected {expect!r}",
                        code="identity",
                    )
                self._clock(proven or expect, resp.headers.get("Date"), sent)
                declared = resp.content_length
                if declared is not None and declared > limit:
                    raise PeerError(f"{address}{path}: response of {declared} bytes is too large")
                body = bytearray()
                async for chunk in resp.content.iter_chunked(1 << 16):
                    body += chunk
                    if len(body) > limit:
                        raise PeerError(f"{address}{path}: response exceeds {limit} bytes")
                self.metrics.client_received.labels(route).inc(len(body))
                raw = bytes(body)
                if resp.headers.get("Content-Encoding", "").lower() == "gzip":
                    raw = _gunzip(raw, limit)
                return resp.status, dict(resp.headers), raw, proven, len(body)
        except (TimeoutError, aiohttp.ClientError, ssl.SSLError, OSError) as e:
            raise Unreachable(f"{address}: {type(e).__name__}: {e}") from None

    def _clock(self, peer: str | None, date: str | None, sent: float) -> None:
        """Record the peer's clock skew from its ``Date`` (whole seconds, truncated: compare
        its middle with the middle of the request)."""
        if peer is None or not date:
            return
        try:
            theirs = email.utils.parsedate_to_datetime(date).timestamp() + 0.5
        except (TypeError, ValueError):
            return
        self.metrics.peer_clock_skew.labels(peer).set(round(theirs - (sent + time.time()) / 2, 1))

    async def _json(
        self,
        method: str,
        address: str,
        path: str,
        *,
        expect: str | None,
        route: str,
        params: dict[str, str] | None = None,
        data: bytes | None = None,
    ) -> tuple[dict[str, Any], str | None]:
        status, _, body, proven, _ = await self._request(
            method, address, path, expect=expect, route=route, params=params, data=data
        )
        try:
            obj = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            raise PeerError(f"{address}{path}: answer is not JSON (status {status})") from None
        if not isinstance(obj, dict):
            raise PeerError(f"{address}{path}: answer is not a JSON object")
        if status != 200:
            raise PeerError(
                f"{address}{path}: {status} {obj.get('error', '')}",
                status=status,
                code=str(obj.get("code", "http")),
            )
        return obj, proven

    async def info(self, address: str, expect: str | None = None) -> tuple[dict[str, Any], str]:
        """``/info``, with the identity check: the node id it states must be the one its
        certificate proves (and the expected one, when we expect one)."""
        obj, proven = await self._json("GET", address, "/info", expect=expect, route="info")
        node = obj.get("node")
        if not isinstance(node, str):
            raise PeerError(f"{address}/info: no node id")
        if proven is not None and node != proven:
            raise PeerError(
                f"{address}/info says node {node!r} but its certificate proves {proven!r}",
                code="identity",
            )
        if expect is not None and node != expect:
            raise PeerError(f"{address} is node {node!r}, not {expect!r}", code="identity")
        if obj.get("protocol") != PROTOCOL:
            raise PeerError(
                f"{address} ({node}) speaks protocol revision {obj.get('protocol')!r}; this node "
                f"speaks {PROTOCOL}. Upgrade the older one.",
                code="protocol",
            )
        return obj, node

    async def get_json(
        self, address: str, path: str, *, expect: str, params: dict[str, str] | None = None
    ) -> dict[str, Any]:
        route = path.strip("/").split("/")[0] or "root"
        if path == "/shards/digest":
            route = "digest"
        return (await self._json("GET", address, path, expect=expect, route=route, params=params))[
            0
        ]

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
        params = {"after": str(after), "limit": str(limit), **_check_params(check, checks)}
        status, headers, body, _, wire = await self._request(
            "GET",
            address,
            f"/shards/{shard}/ops",
            expect=expect,
            route="ops",
            params=params,
            limit=self.max_body,
        )
        if status != 200:
            try:
                obj = orjson.loads(body)
            except orjson.JSONDecodeError:
                obj = {}
            raise PeerError(
                f"{address} ops of {shard}: {status} {obj.get('error', '')}",
                status=status,
                code=str(obj.get("code", "http")),
            )
        try:
            return OpsPage(
                body=body,
                last=int(headers["X-Noon-Last"]),
                more=headers.get("X-Noon-More") == "1",
                head=int(headers["X-Noon-Head"]),
                checked=headers.get("X-Noon-Checked") == "1",
                wire_bytes=wire,
            )
        except (KeyError, ValueError):
            raise PeerError(f"{address} ops of {shard}: missing paging headers") from None

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
    ) -> dict[str, Any]:
        params = {"after": str(after), **_check_params(check, checks)}
        return (
            await self._json(
                "POST",
                address,
                f"/shards/{shard}/ops",
                expect=expect,
                route="push",
                params=params,
                data=body,
            )
        )[0]


def _check_params(check: int | None, checks: Checks) -> dict[str, str]:
    params = {}
    if check is not None:
        params["check"] = f"{check:016x}"
    if checks:
        params["checks"] = ",".join(f"{seq}:{digest:016x}" for seq, digest in checks)
    return params


def _gunzip(data: bytes, limit: int) -> bytes:
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise PeerError(f"bad gzip body: {exc}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise PeerError(f"decompressed body exceeds {limit} bytes")
    return out
