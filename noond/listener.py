"""Accepting connections, with a bound on what one that has proven nothing may cost
(PROTOCOL.md §10.3): noond accepts sockets itself instead of leaving it to the event loop, so
that before a byte is read it can refuse a source holding too many connections already, or any
connection beyond the total budget, and give the TLS handshake a short deadline. Every refusal
and every failed handshake is counted (``noond_rejected_total``) and logged at a bounded rate.

Idle connections after the handshake, the first request's headers included, are closed by the
HTTP server's idle timeout (``daemon.IDLE_TIMEOUT``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
import ssl
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from noond.metrics import Metrics

log = logging.getLogger("noond.listener")

RESERVED_FILES = 256
"""Descriptors kept for shards, locks, peers and logs whatever the connections take."""


@dataclass(frozen=True)
class Limits:
    total: int
    """Connections open at once, every source together."""
    per_source: int
    """Connections open at once from one IP address."""
    handshake: float
    """Seconds a TLS handshake may take."""


def descriptor_budget(wanted: int) -> int:
    """Raise the soft limit of open files to the hard one, and return how many connections
    fit beside :data:`RESERVED_FILES` (at most ``wanted``)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - RESERVED_FILES))


class _Counted(asyncio.Protocol):
    """Hands everything to the HTTP protocol, and tells the listener when the connection
    ends."""

    def __init__(self, inner: asyncio.Protocol, release: Callable[[], None]) -> None:
        self.inner = inner
        self.release = release

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self.inner.connection_lost(exc)
        finally:
            self.release()

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


class Listener:
    def __init__(
        self,
        protocol: Callable[[], Any],
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None,
        limits: Limits,
        metrics: Metrics,
    ) -> None:
        self.protocol = protocol
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.limits = limits
        self.metrics = metrics
        self.open: Counter[str] = Counter()
        """Connections open per source IP."""
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._handshakes: set[asyncio.Task[None]] = set()

    @property
    def total(self) -> int:
        return sum(self.open.values())

    async def start(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.create_server(
            (self.host, self.port), family=family, backlog=1024, reuse_port=False
        )
        sock.setblocking(False)
        self._sock = sock
        self.port = sock.getsockname()[1]
        self._accepting = asyncio.create_task(self._accept())

    async def stop(self) -> None:
        for task in [self._accepting, *self._handshakes]:
            if task is not None:
                task.cancel()
        for task in [self._accepting, *self._handshakes]:
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self._sock is not None:
            self._sock.close()

    def _refuse(self, reason: str, source: str, detail: str) -> None:
        self.metrics.rejected.labels(reason).inc()
        log.warning("connection from %s refused (%s): %s", source, reason, detail)

    async def _accept(self) -> None:
        assert self._sock is not None
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, addr = await loop.sock_accept(self._sock)
            except OSError as exc:  # out of descriptors: wait for some to come back
                self._refuse("accept", "?", str(exc))
                await asyncio.sleep(0.1)
                continue
            source = str(addr[0])
            if self.total >= self.limits.total:
                conn.close()
                self._refuse("connections", source, f"{self.limits.total} open in all")
                continue
            if self.open[source] >= self.limits.per_source:
                conn.close()
                self._refuse(
                    "connections_per_source", source, f"{self.limits.per_source} open from it"
                )
                continue
            self.open[source] += 1
            task = asyncio.create_task(self._serve(conn, source))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _serve(self, conn: socket.socket, source: str) -> None:
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.open[source] -= 1
                if self.open[source] <= 0:
                    del self.open[source]

        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(
                lambda: _Counted(self.protocol(), release),
                conn,
                ssl=self.ssl_context,
                ssl_handshake_timeout=self.limits.handshake if self.ssl_context else None,
            )
        except asyncio.CancelledError:
            release()
            conn.close()
            raise
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError) as exc:
            release()
            conn.close()
            reason = "tls_handshake" if self.ssl_context else "connection"
            self._refuse(reason, source, str(exc) or type(exc).__name__)
