"""Talking to the local ``noond`` (and its members) from the commands and the page: over mutual
TLS with this node's own certificate, the way peers do, so no extra credential exists for
operators.

Plain ``urllib`` (blocking, one request at a time): the CLI asks a handful of questions and
exits, it needs no event loop.
"""

from __future__ import annotations

import http.client
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noon import certs, daemon_link
from noon.config import Settings
from noon.daemon_link.bodies import MAX_BODY, M
from noon.daemon_link.message import BodyError, Fields, parse
from noon.errors import Unavailable


class Unreachable(Unavailable):
    """No daemon answered (refused, timed out, TLS failed, missing certificate)."""


class NoCertificate(Unreachable):
    """This node's certificate, key or CA is missing or unusable: nothing could be asked."""


class BadAnswer(Unreachable):
    """A daemon answered, but not with the message its route promises (the message says
    which field): nothing it said is used."""


def tls_enabled() -> bool:
    """Whether noond speaks mutual TLS here (``NOOND_TLS``, on by default)."""
    return daemon_link.tls_enabled(os.environ)


def local_url(settings: Settings) -> str:
    """The base URL of the daemon serving ``settings.dir``: where it published it listens, or
    else where ``NOOND_LISTEN`` says (see :mod:`noon.daemon_link`)."""
    return daemon_link.local_url(settings.dir, os.environ)


def tls_files(settings: Settings) -> tuple[Path, Path, Path]:
    """This node's certificate, key and CA, where noond finds them."""
    return daemon_link.tls_files(settings.dir, settings.node_id, os.environ)


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    """The decoded JSON object, or the raw text when the answer is not one."""
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
        raw = resp.read(MAX_BODY + 1)
        date_header = resp.getheader("Date")
    except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
        raise Unreachable(f"{base_url}: {exc}") from exc
    finally:
        conn.close()
    try:
        body: Any = parse(raw, limit=MAX_BODY, what=f"{base_url}{path}")
    except BodyError:
        body = raw[:MAX_BODY].decode("utf-8", "replace")
    return Answer(resp.status, body, daemon_link.http_date(date_header), peer)


def get(base_url: str, path: str, kind: type[M], settings: Settings, timeout: float = 5.0) -> M:
    """The ``kind`` message of a 200 answer. Raises :class:`Unreachable` when no daemon
    answered or it refused, :class:`BadAnswer` when its answer is not that message."""
    answer = fetch(base_url, path, settings, timeout)
    if answer.status != 200:
        raise Unreachable(f"{base_url}{path} answered {answer.status}: {str(answer.body)[:200]}")
    if not isinstance(answer.body, dict):
        raise BadAnswer(
            f"{base_url}{path}: the answer is not a JSON object of at most {MAX_BODY} bytes "
            f"nested at most 1024 deep: {str(answer.body)[:100]!r}"
        )
    try:
        return kind.read(Fields(answer.body, f"{base_url}{path}"))
    except BodyError as exc:
        raise BadAnswer(str(exc)) from None
