"""Real mutual-TLS handshakes on loopback with noon.certs' contexts: who each side sees, and
what is refused (another CA, no certificate, expired or not yet valid certificates).

Every socket here binds or connects to 127.0.0.1 only; every blocking call has a timeout.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from noon import certs
from noon.certs import (
    PeerIdentityError,
    cert_info,
    check_node_files,
    client_ssl_context,
    init_ca,
    issue_node_cert,
    peer_node_id,
    require_peer,
    server_ssl_context,
)

LOOPBACK = "127.0.0.1"
TIMEOUT = 10.0


def _server(n: certs.NodePaths) -> ssl.SSLContext:
    return server_ssl_context(n.cert, n.key, n.ca)


def _client(n: certs.NodePaths) -> ssl.SSLContext:
    return client_ssl_context(n.cert, n.key, n.ca)


# --------------------------------------------------------------------------- loopback handshake


@dataclass
class Outcome:
    server_peer: str | None = None
    client_peer: str | None = None
    server_error: BaseException | None = None
    client_error: BaseException | None = None
    client_got: bytes = b""

    @property
    def ok(self) -> bool:
        return self.server_error is None and self.client_error is None and bool(self.client_got)

    @property
    def client_saw_failure(self) -> bool:
        # With TLS 1.3 the client finishes its handshake before the server checks the client
        # certificate, so the rejection shows up on the first read (alert or EOF).
        return self.client_error is not None or self.client_got == b""


def handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> Outcome:
    """One TLS connection over 127.0.0.1: the server reports the peer id it saw, then closes."""
    out = Outcome()
    with socket.create_server((LOOPBACK, 0)) as listener:
        listener.settimeout(TIMEOUT)
        port = listener.getsockname()[1]

        def serve() -> None:
            try:
                conn, _ = listener.accept()
            except OSError as e:
                out.server_error = e
                return
            with conn:
                conn.settimeout(TIMEOUT)
                try:
                    with server_ctx.wrap_socket(conn, server_side=True) as tls:
                        out.server_peer = peer_node_id(tls)
                        tls.sendall(f"{out.server_peer}\n".encode())
                except OSError as e:  # ssl.SSLError is an OSError
                    out.server_error = e

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        try:
            with (
                socket.create_connection((LOOPBACK, port), timeout=TIMEOUT) as raw,
                client_ctx.wrap_socket(raw, server_hostname=None) as tls,
            ):
                out.client_peer = peer_node_id(tls)
                buf = b""
                while not buf.endswith(b"\n"):
                    chunk = tls.recv(256)
                    if not chunk:
                        break
                    buf += chunk
                out.client_got = buf
        except OSError as e:
            out.client_error = e
        t.join(TIMEOUT)
        assert not t.is_alive(), "server thread did not finish"
    return out


def _raw_client(trust: Path, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    """A client context built without noon.certs checks (to present bad certs on purpose)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_verify_locations(cafile=str(trust))
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


def _raw_server(trust: Path, cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_cert_chain(str(cert), str(key))
    ctx.load_verify_locations(cafile=str(trust))
    return ctx


def test_context_settings(node_a: certs.NodePaths) -> None:
    s, c = _server(node_a), _client(node_a)
    for ctx in (s, c):
        assert ctx.verify_mode == ssl.CERT_REQUIRED
        assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert not c.check_hostname


def _expired(ca: certs.CaPaths, node_id: str, out: Path) -> certs.NodePaths:
    now = dt.datetime.now(dt.UTC)
    return issue_node_cert(
        ca.dir,
        node_id,
        out,
        not_before=now - dt.timedelta(days=30),
        not_after=now - dt.timedelta(days=1),
    )


@pytest.mark.parametrize("tls_max", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_mutual_tls_handshake(
    node_a: certs.NodePaths, node_b: certs.NodePaths, tls_max: ssl.TLSVersion
) -> None:
    client_ctx = _client(node_b)
    client_ctx.maximum_version = tls_max
    out = handshake(_server(node_a), client_ctx)
    assert out.ok, out
    assert out.server_peer == "node-b"  # server sees the client's CN
    assert out.client_peer == "node-a"  # client sees the server's CN
    assert out.client_got == b"node-b\n"


async def test_mutual_tls_asyncio_ssl_object(
    node_a: certs.NodePaths, node_b: certs.NodePaths
) -> None:
    """Same as above through asyncio streams, i.e. `ssl.SSLObject` as aiohttp exposes it."""
    seen: list[str | None] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(peer_node_id(writer.get_extra_info("ssl_object")))
        writer.write(b"hi\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, LOOPBACK, 0, ssl=_server(node_a))
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(LOOPBACK, port, ssl=_client(node_b), server_hostname=""),
            TIMEOUT,
        )
        try:
            obj = writer.get_extra_info("ssl_object")
            assert peer_node_id(obj) == "node-a"
            assert require_peer(obj, "node-a") == "node-a"
            with pytest.raises(PeerIdentityError):
                require_peer(obj, "node-c")
            assert await asyncio.wait_for(reader.readline(), TIMEOUT) == b"hi\n"
        finally:
            writer.close()
            await asyncio.wait_for(writer.wait_closed(), TIMEOUT)
    assert seen == ["node-b"]


def test_client_rejects_server_from_other_ca(node_b: certs.NodePaths, tmp_path: Path) -> None:
    other = init_ca(tmp_path / "other", name="other CA")
    rogue = issue_node_cert(other.dir, "node-a", tmp_path / "rogue")  # same name, wrong CA
    out = handshake(_server(rogue), _client(node_b))
    assert isinstance(out.client_error, ssl.SSLCertVerificationError), out
    assert out.server_error is not None
    assert out.server_peer is None and out.client_peer is None


def test_server_rejects_client_from_other_ca(node_a: certs.NodePaths, tmp_path: Path) -> None:
    other = init_ca(tmp_path / "other", name="other CA")
    rogue = issue_node_cert(other.dir, "node-b", tmp_path / "rogue")
    # The rogue client trusts the real CA (so it accepts the server) but presents a foreign cert.
    out = handshake(_server(node_a), _raw_client(node_a.ca, rogue.cert, rogue.key))
    assert isinstance(out.server_error, ssl.SSLError), out
    assert "certificate verify failed" in str(out.server_error)
    assert out.server_peer is None and out.client_saw_failure


@pytest.mark.parametrize("tls_max", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_server_rejects_client_without_certificate(
    node_a: certs.NodePaths, tls_max: ssl.TLSVersion
) -> None:
    client_ctx = _raw_client(node_a.ca)
    client_ctx.maximum_version = tls_max
    out = handshake(_server(node_a), client_ctx)
    assert isinstance(out.server_error, ssl.SSLError), out
    assert "certificate" in str(out.server_error).lower()
    assert out.server_peer is None and out.client_saw_failure


def test_expired_certificates(ca: certs.CaPaths, tmp_path: Path) -> None:
    old = _expired(ca, "old", tmp_path / "old")
    info = cert_info(old.cert)
    assert info.expired and info.days_left < 0
    assert check_node_files(old.cert, old.key, old.ca) == "old"  # expiry is a handshake matter


def test_client_rejects_expired_server(
    ca: certs.CaPaths, node_b: certs.NodePaths, tmp_path: Path
) -> None:
    old = _expired(ca, "old", tmp_path / "old")
    out = handshake(_server(old), _client(node_b))
    assert isinstance(out.client_error, ssl.SSLCertVerificationError), out
    assert "expired" in str(out.client_error)
    assert out.server_peer is None


def test_server_rejects_expired_client(
    ca: certs.CaPaths, node_a: certs.NodePaths, tmp_path: Path
) -> None:
    old = _expired(ca, "old", tmp_path / "old")
    out = handshake(_server(node_a), _client(old))
    assert isinstance(out.server_error, ssl.SSLError), out
    assert "expired" in str(out.server_error)
    assert out.server_peer is None and out.client_saw_failure


def test_not_yet_valid_client_rejected(
    ca: certs.CaPaths, node_a: certs.NodePaths, tmp_path: Path
) -> None:
    now = dt.datetime.now(dt.UTC)
    future = issue_node_cert(
        ca.dir,
        "future",
        tmp_path / "f",
        not_before=now + dt.timedelta(days=1),
        not_after=now + dt.timedelta(days=30),
    )
    out = handshake(_server(node_a), _client(future))
    assert isinstance(out.server_error, ssl.SSLError), out
    assert "not yet valid" in str(out.server_error)
