"""A misbehaving member (garbage ops, a stalled server, an endless body, a gossip flood, false
claims about our own shard) is isolated: the honest nodes keep converging and nothing it sent
is stored."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from aiohttp import web

from bench.mesh import Node, Pki, converged, free_port, wait_until
from noon import certs

pytestmark = pytest.mark.integration


class Rogue:
    """An mTLS server with a valid certificate for node ``rogue`` that answers /info honestly
    and everything else according to ``mode``."""

    def __init__(self, pki: Pki, mode: str) -> None:
        self.mode = mode
        self.port = free_port()
        self.ctx = certs.server_ssl_context(*pki.node("rogue"))
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    @property
    def seed(self) -> str:
        return f"rogue@127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.stopping = asyncio.Event()
        app = web.Application()
        app.router.add_get("/info", self.info)
        app.router.add_route("*", "/{tail:.*}", self.other)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", self.port, ssl_context=self.ctx)
        self.loop.run_until_complete(site.start())
        self.ready.set()
        self.loop.run_forever()

    async def info(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "node": "rogue",
                "address": f"127.0.0.1:{self.port}",
                "protocol": 2 if self.mode == "future" else 1,
                "capabilities": ["digest"],
            }
        )

    async def other(self, request: web.Request) -> web.StreamResponse:
        if self.mode == "stalled":
            await self.stopping.wait()  # stalls until the test ends
            raise web.HTTPServiceUnavailable()
        if request.path == "/shards/digest":
            return web.json_response({"root": "different", "shards": 2, "members": "x"})
        if request.path == "/membership":
            peers = [{"node": f"ghost{i}", "address": f"127.0.0.1:{1 + i}"} for i in range(5000)]
            return web.json_response({"peers": peers})
        if request.path == "/shards":
            digest = "00000000000000ff"
            return web.json_response(
                {
                    "shards": [
                        {"node": "rogue", "seq": 50, "digest": digest},
                        {"node": "a", "seq": 999, "digest": digest},  # claims more of a's own shard
                    ]
                }
            )
        if request.path.endswith("/ops") and request.method == "GET":
            if self.mode == "flood":
                resp = web.StreamResponse(headers={"X-Noon-Last": "1", "X-Noon-Head": "1"})
                await resp.prepare(request)
                for _ in range(64):
                    await resp.write(b"x" * (1 << 16))
                return resp
            return web.Response(
                body=b'{"v":1,"node":"rogue","seq":1}\nnot json at all\n',
                headers={"X-Noon-Last": "2", "X-Noon-More": "0", "X-Noon-Head": "50"},
            )
        return web.json_response({"error": "no", "code": "bad_request"}, status=400)

    def close(self) -> None:
        async def stop() -> None:
            self.stopping.set()
            await self.runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.mark.parametrize("mode", ["garbage", "stalled", "flood"])
def test_a_misbehaving_member_harms_no_one(spawn, tmp_path: Path, pki, mode):
    rogue = Rogue(pki, mode)
    try:
        a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
        spawn += [a, b]
        a.start([b, rogue.seed], NOOND_MAX_BODY="1048576")
        b.start([a, rogue.seed], NOOND_MAX_BODY="1048576")
        wait_until(
            lambda: "rogue" in {p["node"] for p in a.get("/peers")[1]["peers"]},
            what="rogue to be admitted (it has a valid certificate)",
        )
        for i in range(3):
            a.write((f"a{i}", "from a"))
            b.write((f"b{i}", "from b"))
        wait_until(lambda: converged([a, b], expect=6), timeout=20, what="a and b to converge")
        if mode != "stalled":
            wait_until(lambda: a.metric("noond_exchanges_total", 'result="invalid"') >= 1)
        else:
            wait_until(lambda: a.metric("noond_exchanges_total", 'result="unreachable"') >= 1)
        for node in (a, b):
            assert not (node.dir / "rogue.jsonl").exists()
            # The rogue claims more of our own shard than we have: each round a pull from it is
            # tried (setting "behind" while it runs) and refused; between them we are not behind.
            wait_until(
                lambda n=node: n.get("/status")[1]["behind"] is False,
                timeout=10,
                what="the rogue's claim to be refused",
            )
            assert node.get("/status")[1]["candidates"] <= 1024
        # a's own shard was never touched by the rogue's claim to hold more of it.
        assert sorted(a.state()) == sorted(b.state())
        a.write(("after", "still writable"))
        wait_until(lambda: converged([a, b], expect=7))
    finally:
        rogue.close()


def test_a_peer_on_another_protocol_revision_gets_a_clear_error_not_a_stall(spawn, tmp_path, pki):
    rogue = Rogue(pki, "future")
    try:
        a = Node("a", tmp_path, pki)
        spawn.append(a)
        a.start([rogue.seed])
        wait_until(
            lambda: a.metric("noond_exchanges_total", 'result="incompatible"') >= 1,
            what="the revision mismatch to be reported",
        )
        assert "speaks protocol revision 2; this node speaks 1" in a.log.read_text()
        assert "rogue" not in {p["node"] for p in a.get("/peers")[1]["peers"]}
    finally:
        rogue.close()
