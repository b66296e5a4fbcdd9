"""The JSON API of the page (docs/web.md lists every route). Handlers only read and check their
parameters and call, in a worker thread, one :class:`~noon.web.data.WebData` method or one use
case of :mod:`noon.app` on its store (settling conflicts), shaped into JSON."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import orjson
from aiohttp import web

from noon.app import conflicts as app_conflicts
from noon.app.actor import WEB, Actor
from noon.web import views
from noon.web.data import WebData
from noon.web.inputs import (
    MAX_TEXT_CHARS,
    MAX_URI,
    BadInput,
    Body,
    json_body,
    namespace,
    query_int,
    query_str,
)
from noon.web.undo_preview import MAX_STEPS_PAGE, STEPS_PAGE

DATA: web.AppKey[WebData] = web.AppKey("data", WebData)
POOL: web.AppKey[Executor] = web.AppKey("pool", Executor)
PAGE = 200
"""Children, orphans, entities or changes in one answer at most."""

routes = web.RouteTableDef()


async def call(request: web.Request, fn: Callable[..., Any], *args: Any) -> web.Response:
    """Run a blocking data method in the pool and encode its result there too: the event loop
    only sends bytes, so one large answer never stalls the other requests."""
    loop = asyncio.get_running_loop()
    body = await loop.run_in_executor(request.app[POOL], functools.partial(_encoded, fn, *args))
    return web.Response(body=body, content_type="application/json")


def _encoded(fn: Callable[..., Any], *args: Any) -> bytes:
    return orjson.dumps(fn(*args))


def _data(request: web.Request) -> WebData:
    return request.app[DATA]


def _ns(request: web.Request, body: Body | None = None) -> str:
    default = _data(request).settings.namespace
    raw = body.data.get("ns") if body is not None else request.query.get("ns")
    return namespace(raw, default)


def _page(request: web.Request) -> tuple[int, int]:
    return query_int(request, "offset", 0, 0, 10**9), query_int(request, "limit", 50, 1, PAGE)


async def _body(request: web.Request, *fields: str) -> Body:
    return Body(await json_body(request), set(fields))


# -- reads ---------------------------------------------------------------------------------


@routes.get("/api/info")
async def info(request: web.Request) -> web.Response:
    return await call(request, _data(request).info)


@routes.get("/api/domains")
async def domains(request: web.Request) -> web.Response:
    return await call(request, _data(request).domains, _ns(request))


@routes.get("/api/children")
async def children(request: web.Request) -> web.Response:
    offset, limit = _page(request)
    uri = query_str(request, "uri")
    name_filter = query_str(request, "filter", default="", limit=200)
    data = _data(request)
    return await call(request, data.children, _ns(request), uri, offset, limit, name_filter)


@routes.get("/api/memory")
async def memory(request: web.Request) -> web.Response:
    return await call(request, _data(request).memory, _ns(request), query_str(request, "uri"))


@routes.get("/api/search")
async def search(request: web.Request) -> web.Response:
    q = query_str(request, "q", limit=1000)
    domain = request.query.get("domain") or None
    if domain is not None and len(domain) > 32:
        raise BadInput("Query parameter 'domain' is longer than 32 characters.")
    limit = query_int(request, "limit", 20, 1, 100)
    return await call(request, _data(request).search, _ns(request), q, domain, limit)


@routes.get("/api/boot")
async def boot_list(request: web.Request) -> web.Response:
    return await call(request, _data(request).boot_list, _ns(request))


@routes.get("/api/changes")
async def changes(request: web.Request) -> web.Response:
    view = query_str(request, "view", default="pending", limit=16)
    group = query_str(request, "group", default="change", limit=16)
    before = request.query.get("before") or None
    if before is not None and len(before) > 200:
        raise BadInput("Query parameter 'before' is too long.")
    limit = query_int(request, "limit", 50, 1, PAGE)
    return await call(request, _data(request).changes, _ns(request), view, group, before, limit)


@routes.get("/api/change")
async def change(request: web.Request) -> web.Response:
    ids = request.query.getall("id", [])
    if not ids or len(ids) > 1000 or any(len(i) > 100 for i in ids):
        raise BadInput("Give 1 to 1000 'id' parameters (change ids like laptop:42).")
    offset = query_int(request, "offset", 0, 0, 10**9)
    limit = query_int(request, "limit", STEPS_PAGE, 1, MAX_STEPS_PAGE)
    return await call(request, _data(request).change, _ns(request), ids, offset, limit)


@routes.get("/api/history")
async def history(request: web.Request) -> web.Response:
    offset, limit = _page(request)
    uri = query_str(request, "uri")
    return await call(request, _data(request).history, _ns(request), uri, offset, limit)


@routes.get("/api/conflicts")
async def conflicts(request: web.Request) -> web.Response:
    """Every element with concurrent versions (:func:`noon.app.conflicts.listing`): ``[{kind:
    content, node, uri, deleted_while_placed, heads, winner, versions: [{version, text, winner,
    diff (from the shown text), time, client, machine}]} | {kind: placement, parent_uri, name,
    heads, winner, versions: [{version, child, priority, winner, ...}]}]``."""
    svc, ns = _data(request).svc, _ns(request)
    return await call(request, lambda: views.conflicts(app_conflicts.listing(svc, ns)))


@routes.get("/api/orphans")
async def orphans(request: web.Request) -> web.Response:
    offset, limit = _page(request)
    return await call(request, _data(request).orphans, _ns(request), offset, limit)


@routes.get("/api/kg/entities")
async def entities(request: web.Request) -> web.Response:
    offset, limit = _page(request)
    q = request.query.get("q") or None
    if q is not None and len(q) > 1000:
        raise BadInput("Query parameter 'q' is longer than 1000 characters.")
    return await call(request, _data(request).entities, _ns(request), q, offset, limit)


@routes.get("/api/kg/entity")
async def entity(request: web.Request) -> web.Response:
    name = query_str(request, "name")
    return await call(request, _data(request).entity, _ns(request), name)


@routes.get("/api/mesh")
async def mesh(request: web.Request) -> web.Response:
    return await call(request, _data(request).mesh)


# -- writes --------------------------------------------------------------------------------


Build = Callable[[WebData, str, Body], Callable[[], Any]]
FIELDS: dict[str, frozenset[str]] = {}
"""Each POST route's body fields (beside ``ns``): what it accepts, anything else is refused."""


def _post(path: str, *fields: str) -> Callable[[Build], Build]:
    """Register a POST handler: ``build`` checks the body (``ns`` and ``fields``, nothing else)
    and returns the data call to run."""

    FIELDS[path] = frozenset(fields)

    def register(build: Build) -> Build:
        async def handler(request: web.Request) -> web.Response:
            body = await _body(request, *fields)
            return await call(request, build(_data(request), _ns(request, body), body))

        routes.post(path)(handler)
        return build

    return register


@_post("/api/preview", "uri", "text")
def _preview(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    uri, text = b.need("uri"), b.text("text", limit=MAX_TEXT_CHARS) or ""
    return lambda: d.preview_text(ns, uri, text)


@_post("/api/memory/text", "uri", "text", "expected_version")
def _save_text(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    uri, text = b.need("uri"), b.need("text", limit=MAX_TEXT_CHARS)
    expected = b.text("expected_version", required=False, limit=200)
    return lambda: d.save_text(ns, uri, text, expected)


@_post(
    "/api/memory/placement",
    "uri",
    "priority",
    "disclosure",
    "expected_version",
    "expected_placement",
)
def _placement(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    uri = b.need("uri")
    prio = b.number("priority", 0, 1000, required=False)
    disc = b.text("disclosure", required=False)
    if prio is None and disc is None:
        raise BadInput("Give a priority, a disclosure or both.")
    expected = b.text("expected_version", required=False, limit=200)
    placed = b.text("expected_placement", required=False, limit=200)
    return lambda: d.set_placement(ns, uri, prio, disc, expected, placed)


@_post("/api/memory/create", "parent", "title", "text", "priority", "disclosure")
def _create(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    parent, text = b.need("parent"), b.need("text", limit=MAX_TEXT_CHARS)
    title = b.text("title", required=False, limit=128) or None
    prio = b.number("priority", 0, 1000)
    assert prio is not None
    disc = b.need("disclosure")
    return lambda: d.create(ns, parent, title, text, prio, disc)


@_post("/api/memory/alias", "uri", "new_uri", "priority", "disclosure")
def _alias(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    uri, new_uri = b.need("uri"), b.need("new_uri")
    prio = b.number("priority", 0, 1000, required=False)
    disc = b.text("disclosure", required=False)
    return lambda: d.alias(ns, uri, new_uri, prio, disc)


@_post("/api/memory/move", "uri", "new_uri", "expected_version")
def _move(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    uri, new_uri = b.need("uri"), b.need("new_uri")
    expected = b.text("expected_version", required=False, limit=200)
    return lambda: d.move(ns, uri, new_uri, expected)


@_post("/api/memory/delete", "uri", "recursive", "expected_version")
def _delete(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    uri, recursive = b.need("uri"), b.flag("recursive")
    expected = b.text("expected_version", required=False, limit=200)
    return lambda: d.delete(ns, uri, recursive, expected)


@_post("/api/memory/keywords", "uri", "add", "remove")
def _keywords(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    uri, add, remove = b.need("uri"), b.texts("add", limit=100), b.texts("remove", limit=100)
    if not add and not remove:
        raise BadInput("Give keywords to add or to remove.")
    return lambda: d.keywords(ns, uri, add, remove)


@_post("/api/memory/restore", "uri", "version", "expected_version")
def _restore(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    uri, version = b.need("uri"), b.need("version", limit=200)
    expected = b.text("expected_version", required=False, limit=200)
    return lambda: d.restore_version(ns, uri, version, expected)


@_post("/api/boot", "add", "remove")
def _boot(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    add, remove = b.texts("add"), b.texts("remove")
    if not add and not remove:
        raise BadInput("Give memories to add to or remove from the boot list.")
    return lambda: d.boot(ns, add, remove)


@_post("/api/conflicts/resolve", "node", "keep", "text", "expected_heads")
def _resolve(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    node = b.need("node", limit=MAX_URI)
    keep = b.text("keep", required=False, limit=200)
    text = b.text("text", required=False, limit=MAX_TEXT_CHARS)
    if text is not None and not text.strip():
        raise BadInput("The merged text is empty.")
    heads = b.texts("expected_heads", limit=200, items=256)
    if not heads:
        raise BadInput("Give expected_heads: the versions the page showed.")
    who = Actor(ns, WEB, WEB)
    return lambda: {"resolved": app_conflicts.resolve(d.svc, who, node, keep, text, heads)}


@_post("/api/orphans/place", "node", "new_uri", "priority", "disclosure")
def _place(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    node, new_uri = b.need("node", limit=MAX_URI), b.need("new_uri")
    prio = b.number("priority", 0, 1000)
    assert prio is not None
    disc = b.need("disclosure")
    return lambda: d.place_orphan(ns, node, new_uri, prio, disc)


@_post("/api/orphans/delete", "node", "recursive")
def _delete_orphan(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    node, recursive = b.need("node", limit=MAX_URI), b.flag("recursive")
    return lambda: d.delete_orphan(ns, node, recursive)


@_post("/api/changes/approve", "ids", "through")
def _approve(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    ids, through = b.texts("ids", limit=100, items=1000), b.seqs("through")
    if not ids and not through:
        raise BadInput("Give the change ids to approve, or a frontier ('through').")
    return lambda: d.approve(ns, ids, through)


@_post("/api/changes/unreview", "id")
def _unreview(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    cid = b.need("id", limit=100)
    return lambda: d.unreview(ns, cid)


@_post("/api/changes/rollback", "ids", "basis")
def _rollback(d: WebData, ns: str, b: Body) -> Callable[[], Any]:
    ids = b.texts("ids", limit=100, items=1000)
    if not ids:
        raise BadInput("Give the change ids to roll back.")
    basis = b.text("basis", required=False, limit=64)
    return lambda: d.rollback(ns, ids, basis)
