"""Op streams (PROTOCOL.md §5.1) between real noond processes over mutual TLS on 127.0.0.1: lone
writes travel on an open stream instead of one POST each; a member killed mid-stream loses
nothing and gets a new stream when it is back; a stream stalled by a hostile member, on
either end, is closed within a bounded time while honest members keep being served."""

from __future__ import annotations

import base64
import os
import signal
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from bench.noond_mesh import read_model_holds, read_model_state
from noon.store.serve import Summaries
from tests.harness.hostile_peer import HostilePeer
from tests.harness.mesh import Node, Pki, converged, wait_until

pytestmark = pytest.mark.integration

POSTS = 'noond_http_requests_total{code="200",method="POST",route="/shards/{node}/ops"}'
STREAM_BYTES = 'noond_server_received_bytes_total{route="/shards/{node}/stream"}'


def held(node: Node, shard: str) -> int:
    return Summaries(node.dir).get(shard).seq


def scrape(node: Node, series: str) -> float:
    name, _, labels = series.partition("{")
    return node.metric(name, labels.rstrip("}"))


def write_and_wait(writer: Node, readers: list[Node], label: str, timeout: float = 30) -> None:
    writer.write((label, f"text of {label}"))
    seq = held(writer, writer.name)
    wait_until(
        lambda: all(held(r, writer.name) >= seq for r in readers),
        timeout=timeout,
        what=f"{label} ({writer.name}:{seq}) to reach {[r.name for r in readers]}",
    )


def stream_up(writer: Node, reader: Node, label: str, timeout: float = 60) -> int:
    """Write until ``writer`` has a stream open to ``reader``; the number of writes it took.
    An exchange, or its first push after it learnt the reader's head, opens one, but after a
    stream failed it pushes by POST for ``RETRY_AFTER`` seconds before it tries again, and on
    an idle machine many writes fit in that pause: so this writes for up to ``timeout``
    seconds."""
    deadline = time.monotonic() + timeout
    writes = 0
    while reader.metric("noond_streams", 'direction="in"') < 1:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{writer.name} opened no stream to {reader.name} in {writes} writes"
            )
        write_and_wait(writer, [reader], f"{label}{writes}")
        writes += 1
    return writes


def test_lone_writes_travel_on_one_open_stream(spawn: list[Node], tmp_path: Path, pki: Pki):
    a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
    spawn += [a, b]
    # Rounds every 30 s: within the test, only pushes move a's writes.
    # A generous timeout: a late pong on a loaded machine would close the stream (rightly)
    # and send a write by POST, which this test counts.
    a.start([b], NOOND_INTERVAL="30", NOOND_TIMEOUT="10")
    b.start([a], NOOND_INTERVAL="30", NOOND_TIMEOUT="10")
    wait_until(lambda: a.peers().peers, what="a to admit b")
    opening = stream_up(a, b, "opening")
    posts, streamed = scrape(b, POSTS), scrape(b, STREAM_BYTES)
    for i in range(10):
        write_and_wait(a, [b], f"lone{i}")
    assert scrape(b, POSTS) == posts, "a lone write went by POST although the stream was open"
    assert scrape(b, STREAM_BYTES) > streamed
    assert b.metric("noond_streams", 'direction="in"') == 1  # the same stream carried all ten
    assert a.metric("noond_streams_closed_total", 'direction="out",reason="failed"') == 0
    assert converged([a, b], expect=opening + 10)


def test_a_stream_is_open_before_the_first_write_after_an_exchange(
    spawn: list[Node], tmp_path: Path, pki: Pki
):
    """A stream's opening (a TLS connection, the upgrade, the receiver's checks) is never on a
    write's path: once an exchange made b's head of a's shard known, a opens its stream to b
    with nothing to send, and the first write after both started travels on it."""
    a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
    spawn += [a, b]
    a.write(("before", "written before either daemon started"))  # so b comes to hold a's shard
    a.start([b], NOOND_INTERVAL="30", NOOND_TIMEOUT="10")
    b.start([a], NOOND_INTERVAL="30", NOOND_TIMEOUT="10")
    wait_until(
        lambda: (
            a.metric("noond_streams", 'direction="out"') == 1
            and b.metric("noond_streams", 'direction="in"') == 1
        ),
        timeout=60,
        what="a to open its stream to b after their first exchange, with no write since",
    )
    assert held(b, "a") == 1
    posts, streamed = scrape(b, POSTS), scrape(b, STREAM_BYTES)
    write_and_wait(a, [b], "first")
    assert scrape(b, POSTS) == posts, "the first write went by POST"
    assert scrape(b, STREAM_BYTES) > streamed
    assert b.metric("noond_streams", 'direction="in"') == 1  # the stream opened ahead carried it
    assert a.metric("noond_streams_closed_total", 'direction="out",reason="failed"') == 0
    assert converged([a, b], expect=2)


def test_lone_writes_are_stored_and_answered_while_the_fold_worker_is_frozen(
    spawn: list[Node], tmp_path: Path, pki: Pki
):
    """noond folds what it stores in a worker process (noond/fold.py); a frame never waits for
    it. With b's worker stopped by SIGSTOP, a's lone writes still reach b on the stream and are
    answered, none folded meanwhile; once the worker runs again the read model catches up."""
    a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
    spawn += [a, b]
    a.start([b], NOOND_INTERVAL="30", NOOND_TIMEOUT="10")
    b.start([a], NOOND_INTERVAL="30", NOOND_TIMEOUT="10")
    wait_until(lambda: a.peers().peers, what="a to admit b")
    opening = stream_up(a, b, "opening")
    wait_until(
        lambda: read_model_holds(b.dir, {"a.jsonl": (b.dir / "a.jsonl").stat().st_size}),
        timeout=60,
        what="b's worker to fold the opening writes",
    )
    (worker,) = b.children()
    folded = read_model_state(b.dir)
    os.kill(worker, signal.SIGSTOP)
    try:
        posts, answered = scrape(b, POSTS), a.metric("noond_pushes_total", 'result="ok"')
        for i in range(5):
            write_and_wait(a, [b], f"frozen{i}")
        assert a.metric("noond_pushes_total", 'result="ok"') == answered + 5
        assert scrape(b, POSTS) == posts, "a write went by POST: the stream was not answered"
        assert Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
        assert read_model_state(b.dir) == folded  # nothing bypassed the stopped worker
    finally:
        os.kill(worker, signal.SIGCONT)
    size = (b.dir / "a.jsonl").stat().st_size
    wait_until(
        lambda: read_model_holds(b.dir, {"a.jsonl": size}),
        timeout=60,
        what="the fold to catch up once its worker runs again",
    )
    assert converged([a, b], expect=opening + 5)


def test_a_member_killed_mid_stream_loses_nothing_and_gets_a_new_stream(
    spawn: list[Node], tmp_path: Path, pki: Pki
):
    a, b, c = (Node(n, tmp_path, pki) for n in "abc")
    spawn += [a, b, c]
    for node, peers in ((a, [b, c]), (b, [a, c]), (c, [a, b])):
        node.start(peers, wait=False, NOOND_INTERVAL="5", NOOND_TIMEOUT="10")
    for node in (a, b, c):
        node.wait_healthy()
    opening = stream_up(a, b, "before")
    b.kill()  # SIGKILL: the stream breaks with nothing said
    for i in range(5):  # c keeps being served while b is gone
        write_and_wait(a, [c], f"while{i}", timeout=30)
    b.start([a, c], NOOND_INTERVAL="5", NOOND_TIMEOUT="10")
    wait_until(lambda: held(b, "a") == held(a, "a"), timeout=60, what="b to catch up")
    wait_until(
        lambda: a.metric("noond_streams_closed_total", 'direction="out",reason="failed"') >= 1,
        what="a to drop its broken stream",
    )
    reopening = stream_up(a, b, "after")
    posts = scrape(b, POSTS)
    write_and_wait(a, [b, c], "on the new stream")
    assert scrape(b, POSTS) == posts
    total = opening + 5 + reopening + 1
    wait_until(lambda: converged([a, b, c], expect=total), timeout=60, what="convergence")


def _open_raw_stream(target: Node, as_node: str, shard: str) -> socket.socket:
    """A WebSocket upgrade of ``/shards/{shard}/stream`` written by hand, so that a test can
    then send whatever bytes a hostile member would."""
    sock = target.context(as_node).wrap_socket(
        socket.create_connection((target.host, target.port), timeout=60)
    )
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /shards/{shard}/stream?after=0 HTTP/1.1\r\nHost: {target.address}\r\n"
            f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, f"closed during the upgrade: {head!r}"
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def _frame_header(length: int) -> bytes:
    """A masked binary frame's header announcing ``length`` bytes (RFC 6455 §5.2)."""
    return b"\x82" + bytes([0x80 | 127]) + struct.pack(">Q", length) + b"\0\0\0\0"


def _until_closed(sock: socket.socket) -> float:
    """Seconds until the server closes the connection (reading whatever it sends)."""
    t0 = time.monotonic()
    while sock.recv(4096):
        pass
    return time.monotonic() - t0


def test_a_stream_stalled_by_a_hostile_member_is_closed_and_honest_members_are_served(
    spawn: list[Node], tmp_path: Path, pki: Pki
):
    a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
    spawn += [a, b]
    a.start([b], NOOND_TIMEOUT="2")
    b.start([a], NOOND_TIMEOUT="2")
    write_and_wait(b, [a], "first")
    # A member announces a frame of 3 MiB (under the cap), sends 100 bytes of it and stalls.
    stalled = _open_raw_stream(a, "evil", "evil")
    stalled.sendall(_frame_header(3 << 20) + b"x" * 100)
    # Another announces a frame beyond the cap: refused on its header, nothing read of it.
    huge = _open_raw_stream(a, "evil2", "evil2")
    huge.sendall(_frame_header(1 << 40))
    assert _until_closed(huge) < 30
    t0 = time.monotonic()
    for i in range(5):  # honest b's writes keep arriving while the stall lasts
        write_and_wait(b, [a], f"during{i}", timeout=20)
    closed_after = time.monotonic() - t0 + _until_closed(stalled)
    assert closed_after < 6 * 2 + 20  # the idle bound (3 × NOOND_TIMEOUT) and the close
    assert a.metric("noond_streams_closed_total", 'direction="in",reason="idle"') >= 1
    assert a.metric("noond_streams_closed_total", 'direction="in",reason="failed"') >= 1
    assert not (a.dir / "evil.jsonl").exists() and not (a.dir / "evil2.jsonl").exists()
    write_and_wait(b, [a], "after")
    assert converged([a, b], expect=7)


@pytest.fixture
def deaf(pki: Pki) -> Iterator[HostilePeer]:
    """A member that takes a's stream and never answers a frame."""

    async def script(request: web.Request) -> web.StreamResponse | None:
        if not request.path.endswith("/stream"):
            return None
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for _ in ws:  # reads every frame, answers none
            pass
        return ws

    peer = HostilePeer(pki, node="deaf", script=script, protocol=2, capabilities=("stream",))
    yield peer
    peer.close()


def test_a_member_that_never_answers_its_stream_holds_nothing_of_the_sender(
    spawn: list[Node], tmp_path: Path, pki: Pki, deaf: HostilePeer
):
    a, c = Node("a", tmp_path, pki), Node("c", tmp_path, pki)
    spawn += [a, c]
    a.start([c, deaf.seed], NOOND_TIMEOUT="2")
    c.start([a], NOOND_TIMEOUT="2")
    writes = 0
    for _ in range(5):  # the first push after deaf's head is known opens the stream
        writes += 1
        write_and_wait(a, [c], f"opening {writes}")
        if deaf.asked["GET /shards/a/stream"]:
            break
    assert deaf.asked["GET /shards/a/stream"] >= 1, "a opened no stream to deaf"
    t0 = time.monotonic()
    for i in range(5):  # c is served each time; deaf's silence costs a only its own push
        write_and_wait(a, [c], f"while deaf {i}", timeout=20)
    assert time.monotonic() - t0 < 5 * 20
    wait_until(
        lambda: a.metric("noond_streams_closed_total", 'direction="out",reason="failed"') >= 1,
        what="a to give up the unanswered stream",
    )
    assert converged([a, c], expect=writes + 5)
