"""``noon web``: the page where the person sees, reviews and undoes what their agents remember.

Served on loopback by default. Off loopback a token is required (``--token`` or
``NOON_TOKEN``), as for ``noon serve --http``; docs/web.md describes the security model.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

from noon.config import ConfigError
from noon.mcp.command import is_loopback, parse_host_port, settings_from

DEFAULT_LISTEN = "127.0.0.1:7708"
BACKLOG = 128


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Serve the page where you browse, edit, review and undo what your agents remember "
        "(changes from every machine appear live). Loopback only unless a token is set."
    )
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default=DEFAULT_LISTEN,
        help=f"address to serve on (default {DEFAULT_LISTEN}; port 0 picks one)",
    )
    parser.add_argument(
        "--token", help="token the page asks for (default NOON_TOKEN); required off loopback"
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another host name the page may be reached by (e.g. behind a proxy); repeatable",
    )
    parser.add_argument("--daemon-url", help="noond's URL for the mesh page (default: local)")
    parser.add_argument("--namespace", help="namespace shown first (default NOON_NAMESPACE)")
    parser.add_argument("--dir", help="memory directory (default NOON_DIR or ~/.noon)")
    parser.add_argument("--node-id", help="this machine's node id (default NOON_NODE_ID)")


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and already listening: a connection made as soon as the
    address is announced waits in the backlog until the page serves it, instead of being
    refused while the server starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


def run(args: argparse.Namespace) -> int:
    # The server's modules load here, not with the parser: `noon` builds every subcommand's
    # parser on each run, and aiohttp's web stack has no business in `noon serve`'s start.
    from aiohttp import web

    from noon.store.store import Store
    from noon.web.app import create_app
    from noon.web.data import WebData
    from noon.web.security import Guard, allowed_hosts

    settings = settings_from(args)
    try:
        host, port = parse_host_port(args.listen)
    except ConfigError:
        raise ConfigError(
            f"--listen wants HOST:PORT (e.g. {DEFAULT_LISTEN}), got {args.listen!r}"
        ) from None
    token = args.token or os.environ.get("NOON_TOKEN", "").strip() or None
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"--listen {host}: serving the page beyond loopback needs a token; pass --token or "
            "set NOON_TOKEN"
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    store = Store(settings)
    try:
        data = WebData(store, settings, args.daemon_url)
        guard = Guard(allowed_hosts(host, bound, args.allow_host), token, bound)
        app = create_app(data, guard)
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        login = " (log in with the token)" if token else ""
        # The line tests and scripts wait for; stderr, like every log.
        print(
            f"noon: serving the page on http://{shown}:{bound}/{login}", file=sys.stderr, flush=True
        )
        web.run_app(app, sock=sock, print=None, access_log=None)
    finally:
        store.close()
    return 0
