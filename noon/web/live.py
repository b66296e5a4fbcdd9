"""Live updates: a change made by any session on any machine reaches every open page.

One task polls :meth:`WebData.poll` (which folds in what the shards gained: writes of other
processes on this machine, and what ``noond`` replicated) every :data:`POLL_SECONDS` while a
page listens, and fans the summary out as server-sent events (``GET /api/events``). At most
:data:`MAX_LIVE` pages listen at once; a page too slow to take its events gets one ``reset``
instead of a growing queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import Executor
from typing import Any

import orjson
from aiohttp import web

from noon.store.store import StoreError
from noon.web.data import WebData

log = logging.getLogger("noon.web")

POLL_SECONDS = 0.25
MAX_LIVE = 32
QUEUE = 16
PING_SECONDS = 15.0


class Live:
    def __init__(self, data: WebData, pool: Executor, limit: int = MAX_LIVE) -> None:
        self.data = data
        self.pool = pool
        self.limit = limit
        self.queues: set[asyncio.Queue[dict[str, Any]]] = set()
        self.closing = asyncio.Event()

    def publish(self, event: dict[str, Any]) -> None:
        for q in list(self.queues):
            if q.full():
                while not q.empty():
                    q.get_nowait()
                q.put_nowait({"reset": True})
            else:
                q.put_nowait(event)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.closing.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.closing.wait(), POLL_SECONDS)
            if not self.queues or self.closing.is_set():
                continue
            try:
                event = await loop.run_in_executor(self.pool, self.data.poll)
            except StoreError as exc:
                log.warning("live refresh failed: %s", exc)
                event = {"error": str(exc)}
            if event:
                self.publish(event)

    async def handler(self, request: web.Request) -> web.StreamResponse:
        if len(self.queues) >= self.limit:
            return web.json_response(
                {"error": f"Too many live pages open ({self.limit}); close one and reload."},
                status=503,
            )
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )
        await response.prepare(request)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE)
        self.queues.add(queue)
        try:
            await response.write(b"retry: 2000\nevent: hello\ndata: {}\n\n")
            while not self.closing.is_set():
                getter = asyncio.ensure_future(queue.get())
                closer = asyncio.ensure_future(self.closing.wait())
                done, _ = await asyncio.wait(
                    {getter, closer}, timeout=PING_SECONDS, return_when=asyncio.FIRST_COMPLETED
                )
                closer.cancel()
                if getter in done:
                    await response.write(b"data: " + orjson.dumps(getter.result()) + b"\n\n")
                else:
                    getter.cancel()
                    if not self.closing.is_set():
                        await response.write(b": ping\n\n")
        except ConnectionResetError:
            pass  # the page went away
        finally:
            self.queues.discard(queue)
        return response
