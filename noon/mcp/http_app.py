"""``noon serve --http``: one ASGI app serving MCP two ways, behind the guard, on uvicorn.

- Streamable HTTP at ``/mcp`` (both protocol eras; sessions bounded per client).
- The legacy HTTP+SSE transport at ``/sse`` (an event stream) and ``/messages/`` (where the
  client posts), for clients configured for Nocturne Memory's SSE endpoint. The namespace of an
  SSE session is the one its ``GET /sse`` asked for (``X-Noon-Namespace``, ``X-Namespace`` or
  ``?namespace=``): the posts that follow carry only a session id, so the session remembers it.

uvicorn logs through noon's handlers (``log_config=None``), so its warnings are rate-limited like
noon's own; connections are admitted and timed by :func:`noon.mcp.http_limits.guarded_protocol`.
"""

from __future__ import annotations

import logging
import re
import socket
import sys
from typing import Any

import uvicorn
from mcp.server.runner import serve_loop
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from noon.mcp.http_guard import Guard
from noon.mcp.http_limits import (
    BoundedSessions,
    ConnectionCounter,
    HttpLimits,
    guarded_protocol,
)
from noon.mcp.server import NAMESPACE_HEADER, NoonServer, initialization_options
from noon.net import is_loopback

log = logging.getLogger("noon.serve")

MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"
BACKLOG = 2048
_SESSION_ID = re.compile(rb"session_id=([0-9a-f]{32})")
# The guard checks Host and Origin for every route; the SDK's own check would only cover some
# hosts and some routes.
_NO_SDK_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)


class LegacySse:
    """The HTTP+SSE transport of MCP 2024-11-05, with a namespace per session."""

    def __init__(self, server: NoonServer) -> None:
        self.server = server
        self.transport = SseServerTransport(MESSAGES_PATH, security_settings=_NO_SDK_CHECK)
        self.namespaces: dict[bytes, bytes] = {}
        """session id (hex) -> the namespace header its stream was opened with."""

    async def stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        namespace = dict(scope.get("headers") or []).get(NAMESPACE_HEADER.encode())
        opened: list[bytes] = []

        async def watch(message: Message) -> None:
            if not opened and message["type"] == "http.response.body":
                found = _SESSION_ID.search(message.get("body", b""))
                if found:  # the first event names the session's message endpoint
                    opened.append(found.group(1))
                    if namespace is not None:
                        self.namespaces[found.group(1)] = namespace
            await send(message)

        try:
            async with self.transport.connect_sse(scope, receive, watch) as (read, write):
                await serve_loop(
                    self.server,
                    read,
                    write,
                    lifespan_state={},
                    init_options=initialization_options(self.server),
                )
        finally:
            for session in opened:
                self.namespaces.pop(session, None)

    async def post(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = _SESSION_ID.search(scope.get("query_string", b""))
        namespace = self.namespaces.get(found.group(1)) if found else None
        if namespace is not None:
            headers = [(k, v) for k, v in scope["headers"] if k != NAMESPACE_HEADER.encode()]
            scope = {**scope, "headers": [*headers, (NAMESPACE_HEADER.encode(), namespace)]}
        await self.transport.handle_post_message(scope, receive, send)


class _Endpoint:
    """A plain ASGI callable as a Starlette route endpoint (Starlette calls it as an app)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def build_app(server: NoonServer, *, host: str, token: str | None, limits: HttpLimits) -> Any:
    sessions = BoundedSessions(server, limits, security_settings=_NO_SDK_CHECK)
    sse = LegacySse(server)
    app = Starlette(
        routes=[
            Route(MCP_PATH, endpoint=StreamableHTTPASGIApp(sessions)),
            Route(SSE_PATH, endpoint=_Endpoint(sse.stream), methods=["GET"]),
            Mount(MESSAGES_PATH, app=sse.post),
        ],
        lifespan=lambda _: sessions.run(),
    )
    return Guard(app, loopback=is_loopback(host), token=token)


async def serve_http(
    server: NoonServer, host: str, port: int, token: str | None, limits: HttpLimits
) -> None:
    app = build_app(server, host=host, token=token, limits=limits)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(BACKLOG)  # before the line below: whoever reads it may connect at once
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    counter = ConnectionCounter(
        limits.connection_cap(),
        limits.connections_per_client,
        "NOON_HTTP_MAX_CONNECTIONS",
        "NOON_HTTP_CONNECTIONS_PER_CLIENT",
    )
    if not log.isEnabledFor(logging.DEBUG):
        # The SDK logs every session opened, expired or unknown at INFO, with the id in the
        # format string (so no rate limit can group them): a session flood would flood the log.
        logging.getLogger("mcp").setLevel(logging.WARNING)
    config = uvicorn.Config(
        app,
        http=guarded_protocol(counter, limits.header_timeout),
        log_config=None,  # through noon's handlers: one format, rate-limited
        log_level="warning",
        lifespan="on",
        backlog=BACKLOG,
    )
    # The line tests and scripts wait for; stderr, like every log.
    print(f"noon: serving MCP on http://{shown}:{bound}{MCP_PATH}", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])
