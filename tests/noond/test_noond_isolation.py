"""A misbehaving member (garbage ops, a stalled server, an endless body, a gossip flood, false
claims about our own shard) is isolated: the honest nodes keep converging and nothing it sent
is stored."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from aiohttp import web

from tests.harness.hostile_peer import HostilePeer, listing, page
from tests.harness.mesh import Node, Pki, converged, wait_until

pytestmark = pytest.mark.integration


def not_behind(node: Node) -> bool:
    return node.status().behind is False


def rogue(pki: Pki, mode: str) -> HostilePeer:
    """A member answering everything but ``/info`` according to ``mode``."""
    peer: HostilePeer

    async def script(request: web.Request) -> web.StreamResponse | None:
        if mode == "stalled":
            await peer.stall()
            raise web.HTTPServiceUnavailable()
        if request.path == "/shards/digest" and mode == "malformed":
            # Nested past the parser's bound, then a field of the wrong type: each answer is
            # refused whole, naming why (noon/daemon_link/bodies.py).
            if peer.asked["GET /shards/digest"] % 2:
                return web.Response(body=b'{"root":' + b"[" * 4000 + b"]" * 4000 + b"}")
            return web.json_response({"root": "x", "shards": "2", "members": "x"})
        if request.path == "/shards/digest":
            return web.json_response({"root": "different", "shards": 2, "members": "x"})
        if request.path == "/membership":
            peers = [{"node": f"ghost{i}", "address": f"127.0.0.1:{1 + i}"} for i in range(5000)]
            return web.json_response({"peers": peers})
        if request.path == "/shards":
            # Claims more of a's own shard than a holds, too.
            return listing(("rogue", 50, 0xFF), ("a", 999, 0xFF))
        if request.path.endswith("/ops") and request.method == "GET":
            if mode == "flood":
                resp = web.StreamResponse(headers={"X-Noon-Last": "1", "X-Noon-Head": "1"})
                await resp.prepare(request)
                for _ in range(64):
                    await resp.write(b"x" * (1 << 16))
                return resp
            return page(
                b'{"v":1,"node":"rogue","seq":1}\nnot json at all\n', last=2, more=False, head=50
            )
        return web.json_response({"error": "no", "code": "bad_request"}, status=400)

    peer = HostilePeer(pki, script=script, protocol=3 if mode == "future" else 1)
    return peer


@pytest.mark.parametrize("mode", ["garbage", "stalled", "flood", "malformed"])
def test_a_misbehaving_member_harms_no_one(spawn, tmp_path: Path, pki, mode):
    rogue_peer = rogue(pki, mode)
    try:
        a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
        spawn += [a, b]
        a.start([b, rogue_peer.seed], NOOND_MAX_BODY="1048576")
        b.start([a, rogue_peer.seed], NOOND_MAX_BODY="1048576")
        wait_until(
            lambda: "rogue" in {p.node for p in a.peers().peers},
            what="rogue to be admitted (it has a valid certificate)",
        )
        for i in range(3):
            a.write((f"a{i}", "from a"))
            b.write((f"b{i}", "from b"))
        wait_until(lambda: converged([a, b], expect=6), timeout=20, what="a and b to converge")
        if mode == "stalled":
            wait_until(lambda: a.metric("noond_exchanges_total", 'result="unreachable"') >= 1)
        else:
            wait_until(lambda: a.metric("noond_exchanges_total", 'result="invalid"') >= 1)
        if mode == "malformed":
            said = "/shards/digest (status 200): "
            wait_until(
                lambda: (
                    f"{said}not JSON (depth limit exceeded" in a.log.read_text()
                    and "/shards/digest: 'shards' must be an integer" in a.log.read_text()
                ),
                what="both refusals of the rogue's digest to be logged",
            )
        for node in (a, b):
            assert not (node.dir / "rogue.jsonl").exists()
            # The rogue claims more of our own shard than we have: each round a pull from it is
            # tried (setting "behind" while it runs) and refused; between them we are not behind.
            wait_until(
                partial(not_behind, node),
                timeout=10,
                what="the rogue's claim to be refused",
            )
            assert node.status().candidates <= 1024
        # a's own shard was never touched by the rogue's claim to hold more of it.
        assert sorted(a.state()) == sorted(b.state())
        a.write(("after", "still writable"))
        wait_until(lambda: converged([a, b], expect=7))
    finally:
        rogue_peer.close()


def test_a_peer_on_another_protocol_revision_gets_a_clear_error_not_a_stall(spawn, tmp_path, pki):
    rogue_peer = rogue(pki, "future")
    try:
        a = Node("a", tmp_path, pki)
        spawn.append(a)
        a.start([rogue_peer.seed])
        wait_until(
            lambda: a.metric("noond_exchanges_total", 'result="incompatible"') >= 1,
            what="the revision mismatch to be reported",
        )
        assert "speaks protocol revisions 3..3; this node speaks 1..2" in a.log.read_text()
        assert "rogue" not in {p.node for p in a.peers().peers}
    finally:
        rogue_peer.close()
