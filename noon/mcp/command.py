"""``noon serve``: the MCP server, on stdio (default) or HTTP (Streamable HTTP at ``/mcp`` and
the legacy SSE transport at ``/sse``; see :mod:`noon.mcp.http_app`).

On stdio, stdout carries only the protocol; logs go to stderr. Over HTTP, a host other than
loopback requires a bearer token (``--token`` or ``NOON_TOKEN``), and each request may pick its
namespace with an ``X-Noon-Namespace`` header (or Nocturne's ``X-Namespace``/``?namespace=``).
A Nocturne client's ``NAMESPACE`` environment variable is honoured when noon's own setting is
not given.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

import anyio

from noon.app.actor import NAMESPACE
from noon.config import ConfigError, add_store_flags, parse_host_port, settings_from
from noon.core.gcpause import sized_for_answers
from noon.mcp.server import create_server, initialization_options
from noon.net import is_loopback
from noon.store.store import Store

log = logging.getLogger("noon.serve")

TOOL_SETS = {"all": {"uri", "kg"}, "uri": {"uri"}, "kg": {"kg"}}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve HTTP on HOST:PORT instead of stdio: Streamable HTTP at /mcp, the legacy SSE "
        "transport at /sse; port 0 picks one",
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
    add_store_flags(parser)


def nocturne_namespace(env: Mapping[str, str]) -> str | None:
    """The namespace a Nocturne client's ``NAMESPACE`` variable asks for (``""`` is Nocturne's
    default namespace, noon's ``default``), or None when it is unset."""
    raw = env.get("NAMESPACE")
    if raw is None:
        return None
    raw = raw.strip()
    if not raw:
        return "default"
    if not NAMESPACE.match(raw):
        raise ConfigError(
            f"NAMESPACE={raw[:80]!r} (Nocturne's setting) is not a namespace noon can use: set "
            "NOON_NAMESPACE (or --namespace) to 1 to 64 letters, digits, '.', '_' or '-'"
        )
    return raw


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if not args.namespace and not os.environ.get("NOON_NAMESPACE", "").strip():
        legacy = nocturne_namespace(os.environ)
        if legacy is not None:
            log.info("namespace %r from NAMESPACE (Nocturne's; noon's is NOON_NAMESPACE)", legacy)
            settings = replace(settings, namespace=legacy)
    serve: Callable[[Any], Awaitable[None]] = serve_stdio
    if args.http:
        # The HTTP stack (uvicorn, starlette) is imported only to serve HTTP: a stdio session,
        # started for every agent session, answers sooner without it.
        from noon.mcp.http_app import serve_http
        from noon.mcp.http_limits import HttpLimits

        limits = HttpLimits.from_env(os.environ)
        host, port = parse_host_port(args.http, "--http", "127.0.0.1:8765")
        token = settings.token
        if token is None and not is_loopback(host):
            raise ConfigError(
                f"--http {host}: serving beyond loopback needs a bearer token; "
                "pass --token or set NOON_TOKEN"
            )
        serve = partial(serve_http, host=host, port=port, token=token, limits=limits)
    sized_for_answers()
    store = Store(settings)
    store.vectorizer.start()
    server = create_server(store, settings, TOOL_SETS[args.tools])
    try:
        anyio.run(serve, server)
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
    return 0


async def serve_stdio(server: Any) -> None:
    from noon.mcp.stdio_pipes import stdio_streams

    log.info("noon MCP server on stdio")
    async with stdio_streams() as (read, write):
        await server.run(read, write, initialization_options(server))
