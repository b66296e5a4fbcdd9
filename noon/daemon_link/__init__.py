"""Where noond keeps its files and where it listens, for noond itself and for the commands that
look at it (``noon status``, ``doctor``, ``peers``, ``compact``): one derivation of each path.

- The state file: ``NOOND_STATE``, else ``$NOON_DIR/.noon/noond.json``.
- The TLS files: ``NOOND_TLS_CERT``/``_KEY``/``_CA``, else ``$NOON_DIR/certs/<node>.crt``,
  ``<node>.key`` and ``ca.crt``.
- Where the running daemon answers: noond publishes its base URL in
  ``$NOON_DIR/.noon/noond.address`` when it starts and removes it when it stops, so a daemon
  started with ``--listen`` is found; without that file, ``NOOND_LISTEN`` says where to look.

Also the clock skew read from a peer's HTTP ``Date``, which both sides of a connection use.
"""

from __future__ import annotations

import email.utils
import json
import os
from collections.abc import Mapping
from pathlib import Path

from noon.store.shard import read_regular, write_file

DEFAULT_PORT = 7707
TLS_OFF = ("0", "false", "no", "off")


def state_path(directory: Path, env: Mapping[str, str]) -> Path:
    """noond's state file: verified members, revocations, departures, reports."""
    raw = env.get("NOOND_STATE", "").strip()
    return Path(raw).expanduser() if raw else directory / ".noon" / "noond.json"


def tls_files(directory: Path, node: str, env: Mapping[str, str]) -> tuple[Path, Path, Path]:
    """This node's certificate, key and CA, where noond finds them."""
    certs = directory / "certs"

    def pick(name: str, default: Path) -> Path:
        raw = env.get(name, "").strip()
        return Path(raw).expanduser() if raw else default

    return (
        pick("NOOND_TLS_CERT", certs / f"{node}.crt"),
        pick("NOOND_TLS_KEY", certs / f"{node}.key"),
        pick("NOOND_TLS_CA", certs / "ca.crt"),
    )


def tls_enabled(env: Mapping[str, str]) -> bool:
    """Whether noond speaks mutual TLS (``NOOND_TLS``, on by default)."""
    return env.get("NOOND_TLS", "on").strip().lower() not in TLS_OFF


def dial_host(listen_host: str) -> str:
    """The host to dial a daemon listening on ``listen_host`` from this machine: loopback for
    a wildcard bind, the bound address otherwise (v6 in brackets)."""
    if listen_host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if listen_host == "::":
        return "[::1]"
    return f"[{listen_host}]" if ":" in listen_host else listen_host


def address_path(directory: Path) -> Path:
    return directory / ".noon" / "noond.address"


def publish(directory: Path, url: str, node: str) -> None:
    """Say where this daemon answers (at start, once it listens)."""
    body = json.dumps({"url": url, "node": node, "pid": os.getpid()}).encode()
    write_file(address_path(directory), body, durable=False)


def withdraw(directory: Path) -> None:
    """At stop: the daemon no longer answers (only if the file is still this process's)."""
    if _published(directory).get("pid") == os.getpid():
        address_path(directory).unlink(missing_ok=True)


def _published(directory: Path) -> dict[str, object]:
    try:
        obj = json.loads(read_regular(address_path(directory), 4096))
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def _alive(pid: object) -> bool:
    if type(pid) is not int or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: it exists
    return True


def local_url(directory: Path, env: Mapping[str, str]) -> str:
    """The base URL of the daemon serving ``directory``: the one it published if it still
    runs, else from ``NOOND_LISTEN`` (a bare port, or ``host:port``) and ``NOOND_TLS``."""
    published = _published(directory)
    url = published.get("url")
    if isinstance(url, str) and _alive(published.get("pid")):
        return url
    listen = env.get("NOOND_LISTEN", "").strip() or str(DEFAULT_PORT)
    host, sep, port = listen.rpartition(":")
    if not sep:
        host, port = "", listen
    scheme = "https" if tls_enabled(env) else "http"
    return f"{scheme}://{dial_host(host.strip('[]'))}:{port}"


def http_date(header: str | None) -> float | None:
    """An HTTP ``Date`` header as Unix time (None when absent or unreadable)."""
    if not header:
        return None
    try:
        return email.utils.parsedate_to_datetime(header).timestamp()
    except (TypeError, ValueError):
        return None


def clock_skew(peer_date: float, sent: float, received: float) -> float:
    """The peer's clock minus ours, in seconds. ``Date`` has 1 s resolution and is truncated,
    so its middle (+0.5 s) is compared with the middle of the request."""
    return peer_date + 0.5 - (sent + received) / 2
