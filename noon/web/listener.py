"""What a connection to the page server may cost before it proves anything (docs/web.md,
"Security"): checked when it is accepted and while its request arrives, before the token.

- A connection beyond ``connections_per_client`` open from its address, or beyond
  ``max_connections`` in all (kept below the open-files limit), is closed at once.
- A connection that has not sent a complete request head ``header_timeout`` seconds after it
  opened, or after its last answer, is closed (aiohttp's keep-alive timer, which runs from
  the connection's start and closes it whenever it is waiting for a request, however many
  bytes of one arrived).
- A request body must arrive within ``body_timeout`` seconds (:func:`noon.web.inputs.json_body`
  answers 408 otherwise; a body nobody reads is drained for at most 10 s, then the connection
  is closed).

Refusals are logged at a bounded rate (:mod:`noon.logging_setup`) and cost no more than closing
a socket.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from noon.net import ConnectionCounter, connection_cap
from noon.setting import Setting, Table

log = logging.getLogger("noon.web")

BACKLOG = 1024


WEB = Table(
    "web",
    "docs/web.md",
    (
        Setting(
            "NOON_WEB_MAX_CONNECTIONS",
            "open connections in all (kept below the open-files limit)",
            256,
            lo=1,
            field="max_connections",
        ),
        Setting(
            "NOON_WEB_CONNECTIONS_PER_CLIENT",
            "open connections from one address",
            32,
            lo=1,
            field="connections_per_client",
        ),
        Setting(
            "NOON_WEB_HEADER_TIMEOUT",
            "seconds a connection has to send a complete request head, after it opened or after "
            "its last answer",
            10.0,
            lo=0.1,
            field="header_timeout",
        ),
        Setting(
            "NOON_WEB_BODY_TIMEOUT",
            "seconds a request body has to arrive (408 after)",
            30.0,
            lo=0.1,
            field="body_timeout",
        ),
    ),
)
"""The limits of ``noon web`` (its other settings are ``noon``'s: :data:`noon.config.STORE`)."""


@dataclass(frozen=True)
class WebLimits:
    max_connections: int = 256
    connections_per_client: int = 32
    header_timeout: float = 10.0
    body_timeout: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WebLimits:
        return cls(**WEB.read_fields(env))


class _Admitted(asyncio.Protocol):
    """aiohttp's protocol for one connection, once :class:`ConnectionCounter` admits it."""

    def __init__(self, inner: asyncio.Protocol, counter: ConnectionCounter) -> None:
        self.inner = inner
        self.counter = counter
        self.source = ""
        self.admitted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        self.source = str(peer[0]) if peer else "unknown"
        reason = self.counter.admit(self.source)
        if reason is not None:
            log.warning("refused a connection from %s: %s", self.source, reason)
            assert isinstance(transport, asyncio.Transport)
            transport.abort()
            return
        self.admitted = True
        self.inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.admitted:
            return
        self.admitted = False
        try:
            self.inner.connection_lost(exc)
        finally:
            self.counter.release(self.source)

    def data_received(self, data: bytes) -> None:
        if self.admitted:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.admitted else None

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


async def serve(
    app: web.Application, sock: socket.socket, limits: WebLimits, ready: Callable[[], None]
) -> None:
    """Serve ``app`` on the bound ``sock`` until SIGINT or SIGTERM; ``ready()`` runs once
    connections are accepted."""
    runner = web.AppRunner(
        app, access_log=None, handle_signals=False, keepalive_timeout=limits.header_timeout
    )
    await runner.setup()
    assert runner.server is not None
    factory = runner.server
    counter = ConnectionCounter(
        connection_cap(limits.max_connections),
        limits.connections_per_client,
        "NOON_WEB_MAX_CONNECTIONS",
        "NOON_WEB_CONNECTIONS_PER_CLIENT",
    )
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    server = await loop.create_server(
        lambda: _Admitted(factory(), counter), sock=sock, backlog=BACKLOG
    )
    try:
        ready()
        await stopping.wait()
    finally:
        server.close()
        await runner.cleanup()
