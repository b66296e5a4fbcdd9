"""``noon serve``: the MCP server, on stdio (default) or Streamable HTTP.

On stdio, stdout carries only the protocol; logs go to stderr. Over HTTP, a host other than
loopback requires a bearer token (``--token`` or ``NOON_TOKEN``), and each request may pick its
namespace with an ``X-Noon-Namespace`` header.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import logging
import os
import socket
import sys
from typing import Any

import anyio

from noon.config import ConfigError, Settings
from noon.mcp.server import create_server, initialization_options
from noon.store.store import Store

log = logging.getLogger("noon.serve")

TOOL_SETS = {"all": {"uri", "kg"}, "uri": {"uri"}, "kg": {"kg"}}
MCP_PATH = "/mcp"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP on HOST:PORT (path /mcp) instead of stdio; port 0 picks one",
    )
    parser.add_argument(
        "--token",
        help="bearer token HTTP clients must send (default NOON_TOKEN); required off loopback",
    )
    parser.add_argument(
        "--tools",
        choices=sorted(TOOL_SETS),
        default="all",
        help="tool families: uri (memory graph), kg (the official memory server's nine tools), "
        "or all (default)",
    )
    parser.add_argument("--namespace", help="namespace (default NOON_NAMESPACE or 'default')")
    parser.add_argument("--dir", help="memory directory (default NOON_DIR or ~/.noon)")
    parser.add_argument("--node-id", help="this machine's node id (default NOON_NODE_ID)")


def settings_from(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    env = dict(os.environ)
    if getattr(args, "dir", None):
        env["NOON_DIR"] = args.dir
    if getattr(args, "node_id", None):
        env["NOON_NODE_ID"] = args.node_id
    if getattr(args, "namespace", None):
        overrides["namespace"] = args.namespace
    return Settings.from_env(env, **overrides)


def parse_host_port(raw: str) -> tuple[str, int]:
    host, sep, port_text = raw.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8765), got {raw!r}")
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    host, port, token = "", 0, None
    if args.http:
        host, port = parse_host_port(args.http)
        token = args.token or os.environ.get("NOON_TOKEN", "").strip() or None
        if token is None and not is_loopback(host):
            raise ConfigError(
                f"--http {host}: serving beyond loopback needs a bearer token; "
                "pass --token or set NOON_TOKEN"
            )
    store = Store(settings)
    server = create_server(store, settings, TOOL_SETS[args.tools])
    try:
        if args.http:
            anyio.run(serve_http, server, host, port, token)
        else:
            anyio.run(serve_stdio, server)
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
    return 0


async def serve_stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    log.info("noon MCP server on stdio")
    async with stdio_server() as (read, write):
        await server.run(read, write, initialization_options(server))


class BearerToken:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            got = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                body = b'{"error":"missing or wrong bearer token"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def serve_http(server: Any, host: str, port: int, token: str | None) -> None:
    import uvicorn

    app: Any = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    if token is not None:
        app = BearerToken(app, token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    # The line tests and scripts wait for; stderr, like every log.
    print(f"noon: serving MCP on http://{shown}:{bound}{MCP_PATH}", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])
