"""The page server in-process on loopback (for API tests), a seeded store, and a ``noon web``
subprocess (for the browser tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from noon.config import Settings
from noon.graph import plan
from noon.graph.reader import live_text
from noon.graph.uri import parse
from noon.store.access import service
from noon.store.readmodel.graph import SqlGraph
from noon.store.store import Store
from noon.web.app import create_app
from noon.web.data import WebData
from noon.web.guesses import Guesses
from noon.web.security import SESSION_HEADER, Guard, allowed_hosts
from tests.harness.mesh import free_port, subprocess_env
from tests.harness.page import web_server

NS = "default"
AGENT = "claude-code"


def open_store(directory: Path, node: str = "laptop") -> Store:
    return Store(Settings.from_env({}, dir=directory, node_id=node, fsync=False))


def agent_create(
    store: Store, parent: str, title: str, text: str, priority: int = 1, disclosure: str = "d"
) -> str:
    """A memory written as an agent would (client ``claude-code``); returns its node id."""

    def fn(g: SqlGraph) -> tuple[list[Any], str]:
        drafts, node, _ = plan.create(g, NS, parse(parent), title, text, priority, disclosure)
        return drafts, node

    return service(store).write(fn, AGENT, "mcp")[1]


def agent_edit(store: Store, uri: str, text: str) -> None:
    def fn(g: SqlGraph) -> tuple[list[Any], None]:
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

    def kw(g: SqlGraph) -> tuple[list[Any], None]:
        return plan.triggers(g, NS, nodes["user"], ["Salem"], [])[0], None

    service(store).write(kw, AGENT, "mcp")
    return nodes


class Page:
    """A client of the page server that behaves like the page's script: it trades the token
    for the session (``POST /api/login``) and sends it in ``X-Noon-Session`` with every
    request."""

    def __init__(self, client: TestClient[Any, Any], store: Store, port: int, token: str) -> None:
        self.client = client
        self.store = store
        self.port = port
        self.token = token
        self.session = ""

    async def load(self) -> None:
        r = await self.client.get("/")
        assert r.status == 200 and "<!doctype html>" in await r.text()
        r = await self.client.post("/api/login", json={"token": self.token})
        assert r.status == 200, await r.text()
        self.session = (await r.json())["session"]

    @property
    def auth(self) -> dict[str, str]:
        return {SESSION_HEADER: self.session}

    async def get(self, path: str, **params: Any) -> tuple[int, Any]:
        r = await self.client.get(path, params=params, headers=self.auth)
        return r.status, await r.json()

    async def post(self, path: str, body: Any, **headers: str) -> tuple[int, Any]:
        r = await self.client.post(path, json=body, headers={**self.auth, **headers})
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
    directory: Path,
    *,
    token: str = "t0ken-of-the-tests",
    node: str = "laptop",
    guesses: Guesses | None = None,
    body_timeout: float = 30.0,
) -> AsyncIterator[Page]:
    """The page's app on a loopback port, with a store on ``directory``, and a page logged
    in."""
    store = open_store(directory, node)
    settings = Settings.from_env({}, dir=directory, node_id=node, fsync=False)
    port = free_port()
    data = WebData(store, settings, daemon_url=f"https://127.0.0.1:{free_port()}")
    guard = Guard(allowed_hosts("127.0.0.1", port), token, guesses=guesses or Guesses())
    app = create_app(data, guard, workers=2, body_timeout=body_timeout)
    async with TestClient(TestServer(app, host="127.0.0.1", port=port)) as client:
        page = Page(client, store, port, token)
        await page.load()
        yield page
    store.close()


@contextmanager
def web_process(
    directory: Path, node: str = "laptop", *args: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    """``noon web`` on ``directory`` (a free loopback port); yields the address it printed
    (``http://127.0.0.1:PORT/#token=...``, or without the fragment when given a token)."""
    with web_server(directory, node, *args, env=env or subprocess_env(NOON_FSYNC="false")) as (
        address,
        _,
    ):
        yield address


def text_of(directory: Path, node: str, uri: str) -> str | None:
    store = open_store(directory, node)
    try:
        found = service(store).read(lambda s: s.graph.resolve(NS, parse(uri)))
        if found is None:
            return None
        el = store.fold.elements.get(("content", NS, found[0]))
        return live_text(el) if el is not None else None
    finally:
        store.close()
