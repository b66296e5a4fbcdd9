"""One exchange, in process: the exchanger against a fake peer through the client's transport
seam (no daemon, no socket). What is pulled, pushed and refused, and why."""

from __future__ import annotations

import asyncio

from tests.harness.fake_peer import FakePeer, local_node, seqs, write_texts_of


def test_an_exchange_pulls_the_peers_shard_and_pushes_the_own(dirs):
    a, b = dirs
    write_texts_of(a, "a", "one", "two")
    write_texts_of(b, "b", "three")
    peer = FakePeer("b", b)
    local = local_node(a, "a", peer, page_bytes=1024)
    asyncio.run(local.exchanger.exchange(local.member))
    assert seqs(a / "b.jsonl") == [1]
    assert seqs(b / "a.jsonl") == [1, 2]
    assert local.member.state == "alive" and local.member.heads == {"b": 1, "a": 2}
    assert local.sample("noond_exchanges_total", result="ok") == 1
    # Identical histories and members now: the next exchange is one digest request.
    peer.requests.clear()
    asyncio.run(local.exchanger.exchange(local.member))
    assert [r.path for r in peer.requests] == ["/shards/digest"]


def test_a_fork_at_the_cursor_is_recorded_and_nothing_merged(dirs):
    a, b = dirs
    write_texts_of(a, "c", "mine")
    write_texts_of(b, "c", "theirs", "more")
    peer = FakePeer("b", b)
    local = local_node(a, "a", peer)
    before = (a / "c.jsonl").read_bytes()
    asyncio.run(local.exchanger.exchange(local.member))
    assert ("b", "c") in local.forks
    assert (a / "c.jsonl").read_bytes() == before


def test_an_unreachable_peer_counts_against_its_liveness_only(dirs):
    a, b = dirs
    peer = FakePeer("b", b, down=True)
    local = local_node(a, "a", peer)
    for _ in range(3):
        asyncio.run(local.exchanger.exchange(local.member))
    assert local.member.state == "suspect"
    assert local.sample("noond_exchanges_total", result="unreachable") == 3


def test_outgoing_connections_leave_from_the_source_ip_asked_for():
    """NOOND_SOURCE_IP (the fault suite tells daemons apart by it, and partitions by it)."""
    from noond.client import HttpTransport

    seen: list[str] = []

    async def run() -> None:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.append(writer.get_extra_info("peername")[0])
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport = HttpTransport(ssl_context=None, timeout=5, source_ip="127.0.0.9")
        try:
            reply = await transport.request(
                "GET", f"127.0.0.1:{port}", "/health", params={}, headers={}, body=None, limit=100
            )
        finally:
            await transport.close()
            server.close()
        assert reply.status == 200

    asyncio.run(run())
    assert seen == ["127.0.0.9"]
