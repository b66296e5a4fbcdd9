"""A member that lies: an mTLS server with a valid certificate (so it is admitted) that answers
``/info`` honestly and every other route with whatever the test scripts (by default: an empty,
honest-looking peer that serves its own signing certificate). Runs on its own event
loop thread; counts what it was asked.

A script is an async function of the request returning a response, or None to fall back to
:meth:`HostilePeer.default` (an empty, honest-looking peer)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web

from noon import certs
from noon.core import chain
from noon.core.collection import member_of
from noon.core.ops import encode
from tests.harness import signed
from tests.harness.mesh import Pki, free_port

Script = Callable[[web.Request], Awaitable[web.StreamResponse | None]]


def ops_body(node: str, first: int, count: int, *, text: str = "forged") -> bytes:
    """``count`` valid ops of ``node`` from seq ``first``."""
    return b"".join(
        encode(
            node=node,
            seq=seq,
            hlc=(1_700_000_000_000 << 16) + seq,
            el=("content", "default", f"{node}.{seq}"),
            val={"text": f"{text} {seq}"},
        )
        + b"\n"
        for seq in range(first, first + count)
    )


class SignedFeed:
    """An endless shard of ``node``, genuinely signed with its key: a certified member can
    serve this much of its own shard. ``lines(first, count)`` are lone ops from seq
    ``first``."""

    def __init__(self, pki: Pki, node: str, *, text: str = "endless") -> None:
        self.node = node
        self.text = text
        self.sign = signed.key_of(pki.signing(member_of(node))[0])
        self.signed: list[bytes] = []
        self.link = chain.genesis(node)

    def lines(self, first: int, count: int) -> list[bytes]:
        while len(self.signed) < first + count - 1:
            seq = len(self.signed) + 1
            line = [ops_body(self.node, seq, 1, text=self.text).rstrip(b"\n")]
            self.link = chain.sign_batch(self.link, line, seq, self.sign)
            self.signed.append(line[0])
        return self.signed[first - 1 : first - 1 + count]

    def body(self, first: int, count: int) -> bytes:
        return signed.body(self.lines(first, count))


def page(body: bytes, *, last: int, more: bool, head: int) -> web.Response:
    return web.Response(
        body=body,
        content_type="application/x-ndjson",
        headers={
            "X-Noon-Last": str(last),
            "X-Noon-More": "1" if more else "0",
            "X-Noon-Head": str(head),
            "X-Noon-Checked": "0",
            "X-Noon-Ops": str(body.count(b"\n")),
        },
    )


def listing(*summaries: tuple[str, int, int]) -> web.Response:
    return web.json_response(
        {"shards": [{"node": n, "seq": s, "digest": f"{d:016x}"} for n, s, d in summaries]},
        dumps=lambda o: orjson.dumps(o).decode(),
    )


class HostilePeer:
    def __init__(
        self,
        pki: Pki,
        node: str = "rogue",
        script: Script | None = None,
        protocol: int = 1,
        capabilities: tuple[str, ...] = (),
    ) -> None:
        self.node = node
        self.capabilities = list(capabilities)
        self.pki = pki
        self.script = script
        self.protocol = protocol
        self.port = free_port()
        self.asked: Counter[str] = Counter()
        """Requests by ``METHOD path``."""
        self.asked_by: Counter[tuple[str, str]] = Counter()
        """Requests by (caller's node id, ``METHOD path``)."""
        self.ctx = certs.server_ssl_context(*pki.node(node))
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def seed(self) -> str:
        return f"{self.node}@{self.address}"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.stopping = asyncio.Event()
        app = web.Application()
        app.router.add_get("/info", self.info)
        app.router.add_route("*", "/{tail:.*}", self.other)
        self.runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", self.port, ssl_context=self.ctx)
        self.loop.run_until_complete(site.start())
        self.ready.set()
        self.loop.run_forever()

    async def info(self, request: web.Request) -> web.Response:
        self.asked["GET /info"] += 1
        return web.json_response(
            {
                "node": self.node,
                "address": self.address,
                "protocol": self.protocol,
                "capabilities": self.capabilities,
            }
        )

    async def other(self, request: web.Request) -> web.StreamResponse:
        what = f"{request.method} {request.path}"
        self.asked[what] += 1
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        self.asked_by[(certs.peer_node_id(ssl_object) or "?", what)] += 1
        if self.script is not None:
            answer = await self.script(request)
            if answer is not None:
                return answer
        return await self.default(request)

    async def default(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/shards/digest":
            return web.json_response({"root": "x", "shards": 0, "members": "x"})
        if request.path == "/shards":
            return listing()
        if request.path == "/membership":
            return web.json_response({"peers": [{"node": self.node, "address": self.address}]})
        if request.path.startswith("/signers/"):
            wanted = request.path.removeprefix("/signers/")
            if wanted != self.node:
                return web.json_response({"error": "unknown", "code": "not_found"}, status=404)
            pem = self.pki.signing(self.node)[1].read_text()
            return web.json_response({"node": self.node, "certs": [pem]})
        if request.method == "POST":
            return web.json_response({"appended": 0, "skipped": 0, "head": 0})
        return page(b"", last=int(request.query.get("after", "0")), more=False, head=0)

    async def stall(self) -> None:
        """Wait until the test ends (a peer that never answers)."""
        await self.stopping.wait()

    def close(self) -> None:
        async def stop() -> None:
            self.stopping.set()
            await self.runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
