"""Talking to the local ``noond`` (and its members) from the CLI: over mutual TLS with this
node's own certificate, the way peers do, so no extra credential exists for operators.

Plain ``urllib`` (blocking, one request at a time): the CLI asks a handful of questions and
exits, it needs no event loop.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noon import certs
from noon.config import Settings
from noon.errors import NoonError

MAX_ANSWER = 8 << 20
"""Largest answer read from a daemon (a /peers listing of a big mesh fits easily)."""


class Unreachable(NoonError):
    """No daemon answered (refused, timed out, TLS failed, missing certificate)."""


class NoCertificate(Unreachable):
    """This node's certificate, key or CA is missing or unusable: nothing could be asked."""


def tls_enabled() -> bool:
    """Whether noond speaks mutual TLS here (``NOOND_TLS``, on by default)."""
    return os.environ.get("NOOND_TLS", "on").strip().lower() not in ("0", "false", "no", "off")


def local_url() -> str:
    """The local daemon's base URL, from ``NOOND_LISTEN`` and ``NOOND_TLS``, dialled on
    loopback whatever address it binds."""
    listen = os.environ.get("NOOND_LISTEN", "").strip() or "7707"
    port = listen.rpartition(":")[2] if ":" in listen else listen
    return f"{'https' if tls_enabled() else 'http'}://127.0.0.1:{port}"


def tls_files(settings: Settings) -> tuple[Path, Path, Path]:
    """This node's certificate, key and CA, where noond finds them (``NOOND_TLS_*`` or
    ``$NOON_DIR/certs``)."""
    d = settings.dir / "certs"
    return (
        Path(os.environ.get("NOOND_TLS_CERT") or d / f"{settings.node_id}.crt"),
        Path(os.environ.get("NOOND_TLS_KEY") or d / f"{settings.node_id}.key"),
        Path(os.environ.get("NOOND_TLS_CA") or d / "ca.crt"),
    )


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    """Decoded JSON, or the raw text when the answer is not JSON."""
    date: float | None
    """The server's ``Date`` header as Unix time (1 s resolution), if it sent one."""
    peer: str | None
    """The node id the server's certificate proves (None over plaintext)."""


def fetch(base_url: str, path: str, settings: Settings, timeout: float = 5.0) -> Answer:
    """GET ``base_url + path``. Raises :class:`Unreachable` when nothing usable answered."""
    scheme, _, rest = base_url.partition("://")
    hostport = rest.rstrip("/")
    host, _, port = hostport.rpartition(":")
    conn: http.client.HTTPConnection
    try:
        if scheme == "https":
            context = certs.client_ssl_context(*tls_files(settings))
            conn = http.client.HTTPSConnection(
                host.strip("[]"), int(port), context=context, timeout=timeout
            )
        else:
            conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=timeout)
    except (certs.CertError, OSError, ssl.SSLError, ValueError) as exc:
        raise NoCertificate(f"cannot set up TLS with this node's certificate: {exc}") from exc
    try:
        conn.request("GET", path)
        sock = conn.sock
        peer = certs.peer_node_id(sock) if isinstance(sock, ssl.SSLSocket) else None
        resp = conn.getresponse()
        raw = resp.read(MAX_ANSWER)
        date_header = resp.getheader("Date")
    except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
        raise Unreachable(f"{base_url}: {exc}") from exc
    finally:
        conn.close()
    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = raw.decode("utf-8", "replace")
    date = None
    if date_header:
        try:
            date = email.utils.parsedate_to_datetime(date_header).timestamp()
        except (TypeError, ValueError):
            date = None
    return Answer(resp.status, body, date, peer)


def get_json(base_url: str, path: str, settings: Settings, timeout: float = 5.0) -> dict[str, Any]:
    """A JSON object from a 200 answer; anything else raises :class:`Unreachable`."""
    answer = fetch(base_url, path, settings, timeout)
    if answer.status != 200 or not isinstance(answer.body, dict):
        raise Unreachable(f"{base_url}{path} answered {answer.status}: {str(answer.body)[:200]}")
    return answer.body
