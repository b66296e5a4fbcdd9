"""TLS contexts for mutual TLS, and the identity a verified peer proves."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any, Protocol

from noon.certs._files import check_node_files
from noon.certs._types import ROLE_NODE, PeerIdentityError, is_valid_node_id, role_of


def _base_context(protocol: int, cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    check_node_files(cert, key, ca)
    ctx = ssl.SSLContext(protocol)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_cert_chain(certfile=str(cert), keyfile=str(key))
    ctx.load_verify_locations(cafile=str(ca))
    return ctx


def server_ssl_context(cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    """TLS 1.2+ server context presenting `cert` and requiring a client cert signed by `ca`.

    Only the CA in `ca` is trusted (never the system store). The peer's identity is
    `peer_node_id(ssl_object)`; revocation by node id is the caller's job.
    """
    return _base_context(ssl.PROTOCOL_TLS_SERVER, cert, key, ca)


def client_ssl_context(cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    """TLS 1.2+ client context presenting `cert` and verifying the server against `ca` only.

    Hostname checking is OFF: peers are dialled by address and the identity that matters is the
    certificate's CN. Callers MUST check it after the handshake with
    `require_peer(ssl_object, expected_node_id)` (or compare `peer_node_id` themselves).
    """
    ctx = _base_context(ssl.PROTOCOL_TLS_CLIENT, cert, key, ca)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_REQUIRED  # re-assert: check_hostname=False must not weaken it
    return ctx


class _HasPeerCert(Protocol):
    def getpeercert(self) -> Any: ...


def peer_identity(ssl_object: _HasPeerCert | None) -> tuple[str, str] | None:
    """(subject CN, role) of the verified TLS peer, or None: no verified certificate, zero or
    several CNs, a CN that is not a valid node id (so the result is always path-safe), or an
    organizational unit that names no known role."""
    if ssl_object is None:
        return None
    try:
        peer = ssl_object.getpeercert()
    except (ValueError, ssl.SSLError):  # handshake not done / connection closed
        return None
    if not peer:
        return None
    subject = [pair for rdn in peer.get("subject", ()) for pair in rdn]
    cns = [value for attr, value in subject if attr == "commonName"]
    role = role_of([value for attr, value in subject if attr == "organizationalUnitName"])
    if len(cns) != 1 or not isinstance(cns[0], str) or role is None:
        return None
    return (cns[0], role) if is_valid_node_id(cns[0]) else None


def peer_node_id(ssl_object: _HasPeerCert | None) -> str | None:
    """The node id (subject CN) of the verified TLS peer when it is a node (a full member),
    else None (see :func:`peer_identity`; a monitoring identity is never a node).

    Works with `ssl.SSLSocket` and `ssl.SSLObject` (aiohttp: `transport.get_extra_info(
    "ssl_object")`).
    """
    identity = peer_identity(ssl_object)
    return identity[0] if identity is not None and identity[1] == ROLE_NODE else None


def require_peer(ssl_object: _HasPeerCert | None, expected_node_id: str) -> str:
    """Return the peer's node id if it equals `expected_node_id`, else raise PeerIdentityError."""
    got = peer_node_id(ssl_object)
    if got is None or got != expected_node_id:
        raise PeerIdentityError(
            f"TLS peer identity mismatch: expected node {expected_node_id!r}, "
            f"certificate proves {got!r}"
        )
    return got
