"""What a client may cost a daemon: idle and half-open connections, floods from one source or
many, a gzip bomb, odd parameters, false fork claims in a read. Each case checks what was
refused, what was stored, what was counted and logged, and that an honest member kept being
served within bounds meanwhile."""

from __future__ import annotations

import gzip
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.hostile_peer import ops_body
from tests.harness.mesh import Node, Pki, wait_until
from tests.harness.signed import body, signed

pytestmark = pytest.mark.integration

PER_SOURCE = 8
TOTAL = 24
HONEST = ("bob", "carl")
"""The members whose pushes are honest: the target knows their signing certificates."""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[Node]:
    n = Node("target", tmp_path_factory.mktemp("hostile"), pki)
    pki.know_signers(n.dir, *HONEST)
    n.start(
        NOOND_MAX_CONNECTIONS=str(TOTAL),
        NOOND_MAX_CONNECTIONS_PER_SOURCE=str(PER_SOURCE),
        NOOND_HANDSHAKE_TIMEOUT="1",
        NOOND_REVOKED="mallory",
    )
    yield n
    n.stop()


def open_fds(n: Node) -> int:
    assert n.proc is not None
    return len(os.listdir(f"/proc/{n.proc.pid}/fd"))


def closed_by_server(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def raw_connections(n: Node, source: str, count: int) -> list[socket.socket]:
    out = []
    for _ in range(count):
        out.append(socket.create_connection((n.host, n.port), 5, source_address=(source, 0)))
    return out


def op(node: str, seq: int) -> bytes:
    return ops_body(node, seq, 1)


def first_op_signed(pki: Pki, node: str) -> bytes:
    """``node``'s first op as its author signs it (what an honest member pushes)."""
    return body(signed(pki, node, op(node, 1).splitlines()))


def log_lines(n: Node, text: str) -> int:
    return sum(1 for line in n.log.read_text().splitlines() if text in line)


def test_idle_connections_from_one_source_are_bounded_and_time_out(node: Node):
    baseline = open_fds(node)
    flood = raw_connections(node, "127.0.0.3", 5 * PER_SOURCE)
    try:
        t0 = time.monotonic()
        # Beyond the per-source budget: closed at once, before any byte was read.
        wait_until(
            lambda: sum(closed_by_server(s) for s in flood) >= 4 * PER_SOURCE,
            what="connections beyond the per-source budget to be refused",
        )
        # An honest member is served meanwhile.
        assert node.get("/health", as_node="alice")[0] == 200
        assert open_fds(node) <= baseline + PER_SOURCE + 8
        # The rest never start a handshake: dropped after the handshake timeout.
        wait_until(
            lambda: all(closed_by_server(s) for s in flood), what="idle handshakes to time out"
        )
        assert time.monotonic() - t0 < 10
    finally:
        for s in flood:
            s.close()
    assert node.metric("noond_rejected_total", 'reason="connections_per_source"') >= 4 * PER_SOURCE
    assert node.metric("noond_rejected_total", 'reason="tls_handshake"') >= PER_SOURCE
    # Logged, at a bounded rate (a burst per minute and message, then a count).
    refused = log_lines(node, "connection from 127.0.0.3 refused")
    assert 1 <= refused <= 25


def test_a_flood_from_many_sources_stops_at_the_total_and_the_node_keeps_working(
    node: Node, pki: Pki
):
    flood = []
    try:
        for i in range(4, 4 + 2 * TOTAL // PER_SOURCE + 2):
            flood += raw_connections(node, f"127.0.0.{i}", PER_SOURCE)
        wait_until(
            lambda: node.metric("noond_rejected_total", 'reason="connections"') >= 1,
            what="the total budget to be reached",
        )
        open_now = sum(not closed_by_server(s) for s in flood)
        assert open_now <= TOTAL
        # Its own files still open: a push is stored while the flood holds its connections.
        wait_until(
            lambda: (
                node.request(
                    "POST", "/shards/bob/ops?after=0", first_op_signed(pki, "bob"), as_node="bob"
                )[0]
                == 200
            ),
            what="an honest push to get through once the idle connections time out",
        )
    finally:
        for s in flood:
            s.close()
    assert (node.dir / "bob.jsonl").exists()


def test_a_gzip_bomb_is_refused_unread_and_nothing_is_stored(node: Node):
    bomb = gzip.compress(b"\n" * (256 << 20), compresslevel=9)
    assert len(bomb) < 1 << 20
    t0 = time.monotonic()
    status, _, raw = node.request(
        "POST",
        "/shards/gus/ops?after=0",
        bomb,
        as_node="gus",
        headers={"Content-Encoding": "gzip"},
    )
    assert status == 415 and json.loads(raw)["code"] == "unsupported_encoding"
    assert time.monotonic() - t0 < 5
    assert not (node.dir / "gus.jsonl").exists()
    assert node.get("/health", as_node="alice")[0] == 200
    assert node.metric("noond_rejected_total", 'reason="unsupported_encoding"') >= 1


@pytest.mark.parametrize("value", ["²", "１", "٣", "1_0", " 1", "+1"])
def test_digits_other_than_ascii_are_a_bad_request_not_an_error(node: Node, value: str):
    from urllib.parse import quote

    status, _, raw = node.request("GET", f"/shards/alice/ops?after={quote(value)}", as_node="a")
    assert status == 400, raw
    assert json.loads(raw)["code"] == "bad_request"
    assert "Traceback" not in node.log.read_text()


def test_a_read_with_a_false_digest_raises_no_fork_alarm(node: Node, pki: Pki):
    push = first_op_signed(pki, "carl")
    assert node.request("POST", "/shards/carl/ops?after=0", push, as_node="carl")[0] == 200
    status, _, raw = node.request(
        "GET", "/shards/carl/ops?after=1&check=00000000000000ff", as_node="alice"
    )
    assert status == 409 and json.loads(raw)["code"] == "fork"
    assert node.status().forks == ()
    assert node.metric("noond_forks_detected_total") == 0
    assert "FORK DETECTED" not in node.log.read_text()
    # The author's own word about its own shard is a fork (as a push of it would be).
    status, _, raw = node.request(
        "GET", "/shards/carl/ops?after=1&check=00000000000000ff", as_node="carl"
    )
    assert status == 409
    assert [f.peer for f in node.status().forks] == ["carl"]


def test_revocation_covers_the_import_shard(node: Node, tmp_path: Path):
    (node.dir / "mallory-import.jsonl").write_bytes(op("mallory-import", 1))
    (node.dir / "trent-import.jsonl").write_bytes(op("trent-import", 1))
    listed = [s["node"] for s in node.get("/shards", as_node="alice")[1]["shards"]]
    assert "mallory-import" not in listed and "trent-import" in listed
    assert node.request("GET", "/shards/mallory-import/ops", as_node="alice")[0] == 404
    status, _, _ = node.request(
        "POST", "/shards/mallory-import/ops?after=1", op("mallory-import", 2), as_node="mallory"
    )
    assert status == 403
