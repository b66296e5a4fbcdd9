"""The page in one breath, without a browser (the fast lane's smoke test; the browser tests are
the integration lane): it logs in, every asset the shell and its script modules load is served
as shipped, every read route answers, and the scripts call only routes that exist, with the
method and the body fields each route takes, as docs/web.md lists them."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from aiohttp.web import RouteDef

from noon.core.elements import entity_key
from noon.core.ops import Draft
from noon.web.app import STATIC
from noon.web.routes import FIELDS
from noon.web.routes import routes as table
from tests.harness.mesh import ROOT
from tests.harness.web import AGENT, NS, page_server, seed

SCRIPTS = STATIC / "js"
LOGIN_FIELDS = frozenset({"token"})
"""``POST /api/login`` is registered beside the other routes, not through their table."""

READS: dict[str, dict[str, str]] = {
    "/api/info": {},
    "/api/domains": {},
    "/api/children": {"uri": "core://"},
    "/api/memory": {"uri": "core://agent"},
    "/api/search": {"q": "tea"},
    "/api/boot": {},
    "/api/changes": {"view": "all"},
    "/api/change": {"id": "{first change}"},
    "/api/history": {"uri": "core://user"},
    "/api/conflicts": {},
    "/api/orphans": {},
    "/api/kg/entities": {},
    "/api/kg/entity": {"name": "Ada"},
    "/api/mesh": {},
}
"""Every JSON read route with parameters it answers for on the seeded store (``{first change}``:
the id of the first change ``/api/changes`` lists)."""


def _object_at(text: str, start: int) -> str:
    """The object literal opening at ``text[start]`` (``{``), up to its closing brace; strings
    and nested brackets are skipped over."""
    depth, at, quote = 0, start, ""
    while at < len(text):
        c = text[at]
        if quote:
            if c == "\\":
                at += 1
            elif c == quote:
                quote = ""
        elif c in "\"'`":
            quote = c
        elif c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
            if depth == 0:
                return text[start : at + 1]
        at += 1
    raise AssertionError(f"unclosed object literal at {start}")


def _keys(literal: str) -> set[str]:
    """The top-level keys of an object literal (shorthand ``{uri}`` included; spreads are
    checked where they are built, so they are left out)."""
    inner, parts, depth, quote, part = literal[1:-1], [], 0, "", ""
    for c in inner:
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'`":
            quote = c
        elif c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(part)
            part = ""
            continue
        part += c
    parts.append(part)
    names = (p.split(":")[0].strip() for p in parts if p.strip())
    return {n.strip("\"'") for n in names if not n.startswith("...")}


CALL = re.compile(r"\b(get|post|fetch)\(\s*\"(/[^\"?]*)\"\s*(,\s*\{)?")


def calls(script: str) -> list[tuple[str, str, set[str] | None]]:
    """Every call of a route a script makes with a literal path: ``(method, path, keys of the
    body or the query it passes, or None)``. ``fetch`` with a literal path is a GET here."""
    out = []
    for m in CALL.finditer(script):
        method = "POST" if m.group(1) == "post" else "GET"
        keys = _keys(_object_at(script, m.end() - 1)) if m.group(3) else None
        out.append((method, m.group(2), keys))
    return out


def assets(page: str, script: bool) -> set[str]:
    """The static paths a shell (``script`` False: its ``src`` and ``href``) or a script module
    (its ``import``s, relative to ``/static/js/``) loads."""
    if not script:
        return set(re.findall(r"(?:src|href)=\"(/static/[^\"]+)\"", page))
    found = re.findall(r"(?:\bfrom|\bimport)\s*\(?\s*\"\./([^\"]+)\"", page)
    return {f"/static/js/{name}" for name in found}


def test_the_parsers_see_what_a_script_calls() -> None:
    """The readers above on a script written for them (so the checks below mean something)."""
    script = (
        'import { h } from "./dom.js";\nconst x = await get("/api/memory", { uri, limit: 5 });\n'
        'await post("/api/memory/move", {\n  uri: m.uri, new_uri: f("a,b"), ...rest,\n});\n'
        'fetch("/api/events", { headers: headers() });\nget(path);\n'
    )
    assert calls(script) == [
        ("GET", "/api/memory", {"uri", "limit"}),
        ("POST", "/api/memory/move", {"uri", "new_uri"}),
        ("GET", "/api/events", {"headers"}),
    ]
    assert assets(script, True) == {"/static/js/dom.js"}
    shell = '<link rel="stylesheet" href="/static/a.css"><script src="/static/js/app.js"></script>'
    assert assets(shell, False) == {"/static/a.css", "/static/js/app.js"}


async def test_the_page_logs_in_and_loads_every_asset_and_read_route(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:  # logs in: GET /, then POST /api/login
        seed(page.store)
        page.store.write(lambda f: [Draft(entity_key(NS, "Ada"), {"type": "person"})], client=AGENT)
        shell = await page.client.get("/")
        assert shell.status == 200 and shell.content_type == "text/html"
        wanted, loaded = assets(await shell.text(), False), set[str]()
        while wanted - loaded:
            path = sorted(wanted - loaded)[0]
            r = await page.client.get(path)
            body = await r.read()
            assert r.status == 200, path
            assert body == (STATIC / path.removeprefix("/static/")).read_bytes(), path
            kind = "text/css" if path.endswith(".css") else "text/javascript"
            assert r.content_type in (kind, "application/javascript"), (path, r.content_type)
            loaded.add(path)
            if path.endswith(".js"):
                wanted |= assets(body.decode(), True)
        shipped = {f"/static/{p.relative_to(STATIC)}" for p in STATIC.rglob("*") if p.is_file()}
        assert loaded == shipped - {"/static/index.html"}, "an asset nothing loads, or one missing"
        first = (await page.get("/api/changes", view="all"))[1]["items"][0]["id"]
        for path, params in READS.items():
            asked = {k: first if v == "{first change}" else v for k, v in params.items()}
            status, body = await page.get(path, **asked)
            assert status == 200, (path, body)
        async with page.client.get("/api/events", headers=page.auth) as events:
            assert events.status == 200 and events.content_type == "text/event-stream"
            first = await asyncio.wait_for(events.content.readuntil(b"\n\n"), 60)
            assert first.startswith(b"retry:")


def _routes() -> dict[tuple[str, str], frozenset[str] | None]:
    """The page server's JSON routes, ``(method, path)``, with a POST's body fields: the
    route table, and the two :func:`noon.web.app.create_app` adds beside it."""
    out: dict[tuple[str, str], frozenset[str] | None] = {
        ("POST", "/api/login"): LOGIN_FIELDS,
        ("GET", "/api/events"): None,
    }
    for route in table:
        assert isinstance(route, RouteDef)
        out[(route.method, route.path)] = FIELDS[route.path] if route.method == "POST" else None
    return out


def test_every_read_route_is_loaded_by_the_smoke_test() -> None:
    gets = {path for method, path in _routes() if method == "GET"}
    assert gets == set(READS) | {"/api/events"}


def test_the_scripts_call_only_routes_that_exist_with_fields_they_take() -> None:
    routes = _routes()
    used: set[tuple[str, str]] = set()
    for script in sorted(SCRIPTS.glob("*.js")):
        for method, path, keys in calls(script.read_text()):
            where = f"{script.name}: {method} {path}"
            assert (method, path) in routes, f"{where} is no route of the page server"
            fields = routes[(method, path)]
            if method == "POST" and keys is not None and fields is not None:
                assert keys <= fields, f"{where} sends {sorted(keys - fields)}, not taken"
            used.add((method, path))
    assert used == set(routes), f"routes the page never calls: {sorted(set(routes) - used)}"


def test_docs_list_every_route_of_the_page_server() -> None:
    table: Any = re.findall(r"^\| `(GET|POST) (/api/[a-z/]+)", _docs(), re.M)
    also = re.findall(r", `(GET|POST) (/api/[a-z/]+)", _docs())
    assert set(table) | set(also) == set(_routes())


def _docs() -> str:
    return (ROOT / "docs" / "web.md").read_text()
