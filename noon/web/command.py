"""``noon web``: the page where the person sees, reviews and undoes what their agents remember.

Served on loopback by default, and always behind a token: ``--token`` or ``NOON_TOKEN``, or one
made up at each start and printed in the page's address (``http://127.0.0.1:7708/#token=...``,
opened once: the page trades it for its session). Loopback is no boundary between the accounts
of one machine; docs/web.md describes the security model.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import sys

from noon.config import ConfigError, parse_host_port, settings_from
from noon.net import is_loopback

DEFAULT_LISTEN = "127.0.0.1:7708"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Serve the page where you browse, edit, review and undo what your agents remember "
        "(changes from every machine appear live). Open the address it prints: it carries "
        "the token the page needs."
    )
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default=DEFAULT_LISTEN,
        help=f"address to serve on (default {DEFAULT_LISTEN}; port 0 picks one)",
    )
    parser.add_argument(
        "--token",
        help="token the page asks for (default NOON_TOKEN, else a new one each start, printed "
        "in the address); other accounts can read a command line, so prefer NOON_TOKEN",
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


def run(args: argparse.Namespace) -> int:
    # The server's modules load here, not with the parser: `noon` builds every subcommand's
    # parser on each run, and aiohttp's web stack has no business in `noon serve`'s start.
    import asyncio

    from noon.store.store import Store
    from noon.web.app import create_app
    from noon.web.data import WebData
    from noon.web.listener import WebLimits, serve
    from noon.web.security import Guard, allowed_hosts

    settings = settings_from(args)
    host, port = parse_host_port(args.listen, "--listen", DEFAULT_LISTEN)
    given = args.token or os.environ.get("NOON_TOKEN", "").strip() or None
    if given is None and not is_loopback(host):
        raise ConfigError(
            f"--listen {host}: serving the page beyond loopback needs a token you chose; pass "
            "--token or set NOON_TOKEN"
        )
    if args.token:
        print(
            "noon: warning: a token on the command line is visible to every account of this "
            "machine (ps); prefer NOON_TOKEN",
            file=sys.stderr,
            flush=True,
        )
    token = given or secrets.token_urlsafe(32)
    limits = WebLimits.from_env(os.environ)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    store = Store(settings)
    store.vectorizer.start()
    try:
        data = WebData(store, settings, args.daemon_url)
        guard = Guard(allowed_hosts(host, bound, args.allow_host), token)
        app = create_app(data, guard, body_timeout=limits.body_timeout)
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        if given is None:
            where = f"http://{shown}:{bound}/#token={token}"
            hint = " (a new token each start; the page drops it from the address)"
        else:
            where = f"http://{shown}:{bound}/"
            hint = " (log in with your token, or add #token=... to this address)"

        def ready() -> None:
            # The line tests and scripts wait for; stderr, like every log.
            print(f"noon: serving the page on {where}{hint}", file=sys.stderr, flush=True)

        asyncio.run(serve(app, sock, limits, ready))
    finally:
        store.close()
    return 0
