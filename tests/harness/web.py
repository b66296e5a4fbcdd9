"""The page server in-process on loopback (for API tests), a seeded store, and a ``noon web``
subprocess (for the browser tests)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from bench.mesh import free_port, subprocess_env
from bench.web import web_server
from noon.config import Settings
from noon.graph import plan
from noon.graph.model import Graph
from noon.graph.uri import parse
from noon.store.access import service
from noon.store.store import Store
from noon.web.app import create_app
from noon.web.data import WebData
from noon.web.security import Guard, allowed_hosts

NS = "default"
AGENT = "claude-code"


def open_store(directory: Path, node: str = "laptop") -> Store:
    return Store(Settings.from_env({}, dir=directory, node_id=node, fsync=False))


def agent_create(
    store: Store, parent: str, title: str, text: str, priority: int = 1, disclosure: str = "d"
) -> str:
    """A memory written as an agent would (client ``claude-code``); returns its node id."""

    def fn(g: Graph) -> tuple[list[Any], str]:
        drafts, node, _ = plan.create(g, NS, parse(parent), title, text, priority, disclosure)
        return drafts, node

    return service(store).write(fn, AGENT, "mcp")[1]


def agent_edit(store: Store, uri: str, text: str) -> None:
    def fn(g: Graph) -> tuple[list[Any], None]:
        node = plan.locate(g, NS, uri)[0]
        return [plan.set_text(NS, node, text)], None

    service(store).write(fn, AGENT, "mcp")


def seed(store: Store) -> dict[str, str]:
    """A small graph: core://agent (with a child), core://user bound to the keyword Salem."""
    nodes = {
        "agent": agent_create(store, "core://", "agent", "I am the agent. Salem is the user.", 0),
        "user": agent_create(store, "core://", "user", "The user is Salem. Salem likes tea."),
        "style": agent_create(store, "core://agent", "style", "Answer tersely."),
        "noon": agent_create(store, "project://", "noon", "noon is replicated memory."),
    }

    def kw(g: Graph) -> tuple[list[Any], None]:
        return plan.triggers(g, NS, nodes["user"], ["Salem"], [])[0], None

    service(store).write(kw, AGENT, "mcp")
    return nodes


class Page:
    """A client of the page server that behaves like the page's script: it loads ``/`` (for
    the CSRF cookie and token) and sends the token with every POST."""

    def __init__(self, client: TestClient[Any, Any], store: Store, port: int) -> None:
        self.client = client
        self.store = store
        self.port = port
        self.csrf = ""

    async def load(self) -> None:
        r = await self.client.get("/")
        html = await r.text()
        found = re.search(r'name="noon-csrf" content="([^"]+)"', html)
        assert found, html[:300]
        self.csrf = found.group(1)

    async def get(self, path: str, **params: Any) -> tuple[int, Any]:
        r = await self.client.get(path, params=params)
        return r.status, await r.json()

    async def post(self, path: str, body: Any, **headers: str) -> tuple[int, Any]:
        r = await self.client.post(path, json=body, headers={"X-Noon-CSRF": self.csrf, **headers})
        return r.status, await _json(r)

    def shard(self) -> bytes:
        return self.store.own.read_bytes() if self.store.own.exists() else b""


async def _json(r: ClientResponse) -> Any:
    try:
        return await r.json(content_type=None)
    except ValueError:
        return await r.text()


@asynccontextmanager
async def page_server(
    directory: Path, *, token: str | None = None, node: str = "laptop"
) -> AsyncIterator[Page]:
    """The page's app on a loopback port, with a store on ``directory``."""
    store = open_store(directory, node)
    settings = Settings.from_env({}, dir=directory, node_id=node, fsync=False)
    port = free_port()
    data = WebData(store, settings, daemon_url=f"https://127.0.0.1:{free_port()}")
    guard = Guard(allowed_hosts("127.0.0.1", port), token, port)
    app = create_app(data, guard, workers=2)
    async with TestClient(TestServer(app, host="127.0.0.1", port=port)) as client:
        page = Page(client, store, port)
        await page.load()
        yield page
    store.close()


@contextmanager
def web_process(
    directory: Path, node: str = "laptop", *args: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    """``noon web`` on ``directory`` (a free loopback port); yields its base URL."""
    with web_server(directory, node, *args, env=env or subprocess_env(NOON_FSYNC="false")) as (
        url,
        _,
    ):
        yield url
