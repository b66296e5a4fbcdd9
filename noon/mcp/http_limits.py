"""What one source address may cost ``noon serve --http``: connections, time to send a request
head, and MCP sessions. Limits are per source address and in total, so one client (a buggy one,
or a token holder flooding) cannot lock the others out.

- Connections: a connection beyond ``connections_per_client`` for its address, or beyond
  ``max_connections`` in all (kept below the process's descriptor limit), is closed at once. A
  connection that has not sent a complete request head ``header_timeout`` seconds after it
  opened (or after it started sending one, between keep-alive requests) is closed too: idle
  sockets cannot pile up.
- Sessions (Streamable HTTP): a source at ``sessions_per_client`` that opens another one loses
  its own least recently used idle session; at ``max_sessions`` in all, the source holding the
  most loses its least recently used idle one. A new session is refused (503) only when every
  session in the way is busy. Idle sessions expire after ``session_idle`` seconds.

Every refusal is logged through :mod:`noon.logging_setup` (rate-limited per kind) and never
costs more than closing a socket.

The session bound hooks into the MCP SDK's session manager (``mcp==2.3.0``, pinned): its
admission and discard steps and its session table. tests/mcp/test_serve_limits.py fails if an SDK
upgrade moves them.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import h11
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from noon.config import STORE
from noon.net import ConnectionCounter, connection_cap
from noon.setting import Setting, Table

log = logging.getLogger("noon.serve")


SERVE = Table(
    "serve",
    "docs/uri-graph.md",
    (
        replace(STORE["NOON_TOKEN"], help="the bearer token; required off loopback"),
        Setting(
            "NOON_HTTP_MAX_CONNECTIONS",
            "open connections in all (kept below the descriptor limit)",
            256,
            lo=1,
            field="max_connections",
        ),
        Setting(
            "NOON_HTTP_CONNECTIONS_PER_CLIENT",
            "open connections per source address",
            32,
            lo=1,
            field="connections_per_client",
        ),
        Setting(
            "NOON_HTTP_HEADER_TIMEOUT",
            "seconds a connection has to send a complete request head",
            10.0,
            lo=0.1,
            field="header_timeout",
        ),
        Setting(
            "NOON_HTTP_MAX_SESSIONS",
            "Streamable HTTP sessions in all",
            256,
            lo=1,
            field="max_sessions",
        ),
        Setting(
            "NOON_HTTP_SESSIONS_PER_CLIENT",
            "sessions per source address",
            32,
            lo=1,
            field="sessions_per_client",
        ),
        Setting(
            "NOON_HTTP_SESSION_IDLE",
            "seconds after which an idle session ends",
            1800.0,
            lo=1.0,
            field="session_idle",
        ),
    ),
)
"""The settings of ``noon serve --http HOST:PORT`` (``--token`` overrides ``NOON_TOKEN``; the
store's settings are :data:`noon.config.STORE`)."""


@dataclass(frozen=True)
class HttpLimits:
    max_connections: int = 256
    connections_per_client: int = 32
    header_timeout: float = 10.0
    max_sessions: int = 256
    sessions_per_client: int = 32
    session_idle: float = 1800.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HttpLimits:
        return cls(**SERVE.read_fields(env))

    def connection_cap(self) -> int:
        """``max_connections``, or fewer if the descriptor limit would not hold them."""
        return connection_cap(self.max_connections)


def refused(what: str, source: str, reason: str, *detail: object) -> None:
    """One log line per refusal. ``what`` and ``reason`` are constants (``reason`` may hold
    ``%`` placeholders for ``detail``), so each kind of refusal is its own template for
    :class:`noon.logging_setup.RateLimit`, which keeps a flood of it to a burst a minute."""
    log.warning(f"refused {what} from %s: {reason}", source, *detail)


# -- connections ------------------------------------------------------------------------------


def guarded_protocol(counter: ConnectionCounter, header_timeout: float) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol with :class:`ConnectionCounter` admission and a deadline for
    each request head (uvicorn has only a keep-alive timeout, which starts after a response)."""

    class GuardedH11Protocol(H11Protocol):
        _source = ""
        _admitted = False
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._source = self.client[0] if self.client else "unknown"
            reason = counter.admit(self._source)
            if reason is not None:
                refused("a connection", self._source, reason)
                transport.abort()
                return
            self._admitted = True
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:
                self._arm()  # part of a head: it has until the deadline to finish it
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._admitted:
                self._admitted = False
                counter.release(self._source)
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._deadline is None and not self.transport.is_closing():
                self._deadline = self.loop.call_later(header_timeout, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                refused("a connection", self._source, "no request head in time")
                self.transport.close()

    return GuardedH11Protocol


# -- sessions ---------------------------------------------------------------------------------

_SOURCE: contextvars.ContextVar[str] = contextvars.ContextVar("noon_http_source", default="")


def _source_of(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


@dataclass
class _Session:
    source: str
    used: float
    busy: int = 0


class BoundedSessions(StreamableHTTPSessionManager):
    """The SDK's Streamable HTTP session manager with sessions bounded per source address."""

    def __init__(self, app: Any, limits: HttpLimits, **kwargs: Any) -> None:
        super().__init__(app, session_idle_timeout=limits.session_idle, max_sessions=None, **kwargs)
        self.limits = limits
        self.sessions: dict[str, _Session] = {}

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        raw = headers.get(MCP_SESSION_ID_HEADER.encode())
        session = self.sessions.get(raw.decode("latin-1")) if raw else None
        if session is None:
            _SOURCE.set(_source_of(scope))
            await super()._handle_stateful_request(scope, receive, send)
            return
        session.busy += 1
        session.used = time.monotonic()
        try:
            await super()._handle_stateful_request(scope, receive, send)
        finally:
            session.busy -= 1
            session.used = time.monotonic()

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        source = _SOURCE.get()
        mine = [sid for sid, s in self.sessions.items() if s.source == source]
        if len(mine) >= self.limits.sessions_per_client and not self._evict(mine):
            refused(
                "a session", source, "all its sessions are busy (NOON_HTTP_SESSIONS_PER_CLIENT)"
            )
            return None
        if len(self.sessions) >= self.limits.max_sessions and not self._evict(self._largest()):
            refused("a session", source, "every session is busy (NOON_HTTP_MAX_SESSIONS)")
            return None
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self.sessions[transport.mcp_session_id] = _Session(source, time.monotonic())
        return transport

    def _largest(self) -> list[str]:
        """The sessions of the source that holds the most."""
        counts: dict[str, int] = {}
        for s in self.sessions.values():
            counts[s.source] = counts.get(s.source, 0) + 1
        top = max(counts, key=lambda src: counts[src])
        return [sid for sid, s in self.sessions.items() if s.source == top]

    def _evict(self, candidates: list[str]) -> bool:
        """End the least recently used idle session among ``candidates``; False if all are busy."""
        idle = [sid for sid in candidates if self.sessions[sid].busy == 0]
        if not idle:
            return False
        victim = min(idle, key=lambda sid: self.sessions[sid].used)
        log.info("ending session %s of %s to make room", victim[:8], self.sessions[victim].source)
        self.sessions.pop(victim)
        transport = self._server_instances.pop(victim, None)
        self._session_owners.pop(victim, None)
        if transport is not None and self._task_group is not None:
            self._task_group.start_soon(self._discard_session, victim, transport)
        return True

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        self.sessions.pop(session_id, None)
        await super()._discard_session(session_id, transport)
