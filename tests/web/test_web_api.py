"""The page server's API, route by route, in-process on a loopback port: what each route
answers, bad input refused with a clear message and nothing written, stale pages told (409)
instead of overwritten. The review routes are in test_web_review_api.py, the guards (Host,
Origin, CSRF, token, hostile requests) in test_web_guards.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestServer

from noon.web.routes import DATA
from tests.harness.web import AGENT, NS, agent_edit, open_store, page_server, seed

U = {"uri": "core://user"}


async def test_reads_browse_the_graph(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        nodes = seed(page.store)
        status, info = await page.get("/api/info")
        assert status == 200 and info["node"] == "laptop" and info["namespaces"] == [NS]
        _, domains = await page.get("/api/domains")
        assert domains == [{"domain": "core", "children": 2}, {"domain": "project", "children": 1}]
        _, kids = await page.get("/api/children", uri="core://", limit="1")
        assert kids["total"] == 2 and len(kids["items"]) == 1
        first = kids["items"][0]
        assert first["uri"] == "core://agent" and first["priority"] == 0 and first["children"] == 1
        _, rest = await page.get("/api/children", uri="core://", offset="1", limit="50")
        assert [i["uri"] for i in rest["items"]] == ["core://user"]
        _, m = await page.get("/api/memory", uri="core://agent")
        assert m["node"] == nodes["agent"] and m["placement"]["priority"] == 0
        assert m["glossary"] == [
            {"start": 16, "end": 21, "keyword": "Salem", "targets": ["core://user"]}
        ]
        assert [c["uri"] for c in m["breadcrumbs"]] == ["core://", "core://agent"]
        _, hits = await page.get("/api/search", q="tea")
        assert [h["uri"] for h in hits] == ["core://user"] and "tea" in hits[0]["snippet"]
        _, by_id = await page.get("/api/memory", uri=f"system://node/{nodes['user']}")
        assert by_id["uri"] == "core://user" and by_id["keywords"] == ["Salem"]


async def test_bad_reads_are_refused_with_a_message(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        cases: list[tuple[str, dict[str, str], int, str]] = [
            ("/api/memory", {}, 400, "Missing query parameter 'uri'"),
            ("/api/memory", {"uri": "core://nowhere"}, 404, "not found"),
            ("/api/memory", {"uri": "not a uri"}, 400, "not a memory URI"),
            ("/api/memory", {"uri": "core://x", "ns": "bad ns!"}, 400, "Bad namespace"),
            ("/api/memory", {"uri": "system://node/ffff"}, 404, "No memory with id"),
            ("/api/children", {"uri": "core://nowhere"}, 404, "not found"),
            ("/api/children", {"uri": "core://", "limit": "0"}, 400, "between 1 and 200"),
            ("/api/children", {"uri": "core://", "offset": "-1"}, 400, "whole number"),
            ("/api/search", {}, 400, "Missing query parameter 'q'"),
            ("/api/search", {"q": "x" * 1001}, 400, "longer than 1000"),
            ("/api/search", {"q": "tea", "domain": "nope"}, 400, "Unknown domain"),
            ("/api/changes", {"view": "mine"}, 400, "view is pending"),
            ("/api/changes", {"before": "garbage"}, 400, "Bad cursor"),
            ("/api/changes", {"before": "9" * 30 + ":laptop:1"}, 400, "Bad cursor"),
            ("/api/changes", {"before": "1²:laptop:1"}, 400, "Bad cursor"),
            ("/api/change", {"id": "laptop:" + "9" * 30}, 404, "No change"),
            ("/api/change", {"id": "laptop:²"}, 404, "No change"),
            ("/api/change", {}, 400, "Give 1 to 1000 'id'"),
            ("/api/change", {"id": "laptop:999"}, 404, "No change"),
            ("/api/history", {"uri": "core://nowhere"}, 404, "not found"),
            ("/api/orphans", {"limit": "1000"}, 400, "between 1 and 200"),
            ("/api/kg/entity", {"name": "Nobody"}, 404, "No entity"),
            ("/api/nothing-here", {}, 404, "Not Found"),
        ]
        for path, params, code, message in cases:
            status, body = await page.get(path, **params)
            assert status == code and message in body["error"], (path, params, body)


async def test_edits_go_through_the_planners_as_the_page(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        nodes = seed(page.store)
        _, m = await page.get("/api/memory", **U)
        status, p = await page.post("/api/preview", {**U, "text": "The user is Salem."})
        assert status == 200 and p["diff"]["removed"] == 1 and p["diff"]["added"] == 1
        status, saved = await page.post(
            "/api/memory/text",
            {**U, "text": "The user is Salem.", "expected_version": m["version"]},
        )
        assert status == 200 and saved["text"] == "The user is Salem."
        assert saved["modified"]["client"] == "web"
        status, placed = await page.post(
            "/api/memory/placement", {**U, "priority": 7, "disclosure": "When greeting"}
        )
        assert placed["placement"]["priority"] == 7
        status, made = await page.post(
            "/api/memory/create",
            {"parent": "core://user", "title": "food", "text": "Likes tea.", "priority": 2}
            | {"disclosure": "When cooking"},
        )
        assert status == 200 and made["uri"] == "core://user/food"
        status, aliased = await page.post(
            "/api/memory/alias", {"uri": "core://user/food", "new_uri": "project://food"}
        )
        assert status == 200 and aliased["aliases"] == [{"uri": "core://user/food", "priority": 2}]
        status, moved = await page.post(
            "/api/memory/move", {"uri": "core://user/food", "new_uri": "core://agent/food"}
        )
        assert status == 200 and moved["uri"] == "core://agent/food"
        status, kw = await page.post("/api/memory/keywords", {**U, "add": ["tea"]})
        assert kw["keywords"] == ["Salem", "tea"]
        status, boot = await page.post("/api/boot", {"add": ["core://user"]})
        assert [b["uri"] for b in boot] == ["core://user"]
        status, gone = await page.post("/api/memory/delete", {"uri": "project://food"})
        assert gone == {"deleted": 0, "node": moved["node"]}  # another URI remains
        _, everything = await page.get("/api/changes", view="all", limit="50")
        mine = [i for i in everything["items"] if i["status"] == "web"]
        assert len(mine) == 8 and {i["client"] for i in mine} == {"web"}
        _, queue = await page.get("/api/changes")
        assert all(i["client"] == AGENT for i in queue["items"]) and queue["pending"] == 5
        assert nodes["user"] == saved["node"]


async def test_bad_writes_are_refused_and_write_nothing(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        _, m = await page.get("/api/memory", **U)
        before = page.shard()
        cases: list[tuple[str, Any, int, str]] = [
            ("/api/memory/text", [1, 2], 400, "must be a JSON object"),
            ("/api/memory/text", {"uri": "core://user"}, 400, "Missing field 'text'"),
            ("/api/memory/text", {**U, "text": "   "}, 400, "is empty"),
            ("/api/memory/text", {**U, "text": 5}, 400, "must be a string"),
            ("/api/memory/text", {**U, "text": "x", "oops": 1}, 400, "Unknown field(s) 'oops'"),
            ("/api/memory/text", {**U, "text": "x" * (1 << 20 + 1)}, 400, "longer than"),
            ("/api/memory/text", {**U, "text": m["text"]}, 400, "Nothing changed"),
            (
                "/api/memory/text",
                {**U, "text": "x", "expected_version": "laptop:1"},
                409,
                "changed",
            ),
            ("/api/memory/text", {"uri": "core://none", "text": "x"}, 404, "not found"),
            ("/api/memory/text", {**U, "text": "x", "ns": "../etc"}, 400, "Bad namespace"),
            ("/api/memory/placement", U, 400, "Give a priority, a disclosure or both"),
            ("/api/memory/placement", {**U, "priority": 5000}, 400, "from 0 to 1000"),
            ("/api/memory/placement", {**U, "priority": True}, 400, "whole number"),
            ("/api/memory/placement", {**U, "disclosure": " "}, 400, "disclosure is required"),
            ("/api/memory/placement", {**U, "priority": 1}, 400, "Nothing changed"),
            ("/api/memory/placement", {**U, "priority": 3, "expected_placement": "x:1"}, 409, ""),
            ("/api/memory/create", {"parent": "core://", "text": "t", "priority": 1}, 400, "disc"),
            (
                "/api/memory/create",
                {"parent": "core://", "title": "a b", "text": "t", "priority": 1}
                | {"disclosure": "d"},
                400,
                "Invalid title",
            ),
            (
                "/api/memory/create",
                {"parent": "core://", "title": "user", "text": "t", "priority": 1}
                | {"disclosure": "d"},
                400,
                "already exists",
            ),
            (
                "/api/memory/create",
                {"parent": "system://", "text": "t", "priority": 1, "disclosure": "d"},
                400,
                "reserved",
            ),
            ("/api/memory/alias", {**U, "new_uri": "core://agent"}, 400, "already exists"),
            ("/api/memory/alias", {**U, "new_uri": "core://user/me"}, 400, "cycle"),
            (
                "/api/memory/move",
                {"uri": "core://agent", "new_uri": "core://agent/style/x"},
                400,
                "cycle",
            ),
            ("/api/memory/move", {**U, "new_uri": "core://"}, 400, "give it a name"),
            ("/api/memory/delete", {"uri": "core://agent"}, 400, "would become unreachable"),
            ("/api/memory/delete", {"uri": "core://"}, 400, "root of a domain"),
            ("/api/memory/delete", {**U, "recursive": "yes"}, 400, "true or false"),
            ("/api/memory/keywords", U, 400, "Give keywords"),
            ("/api/memory/keywords", {**U, "add": ["x"], "remove": ["x"]}, 400, "same keywords"),
            ("/api/memory/keywords", {**U, "add": ["Salem"]}, 400, "Nothing changed"),
            ("/api/memory/keywords", {**U, "add": [""]}, 400, "empty"),
            ("/api/memory/restore", {**U, "version": "laptop:99"}, 404, "not held"),
            ("/api/memory/restore", {**U, "version": m["version"]}, 400, "already reads as"),
            ("/api/boot", {}, 400, "Give memories"),
            ("/api/boot", {"add": ["core://none"]}, 404, "not found"),
            ("/api/boot", {"remove": ["core://user"]}, 400, "Nothing changed"),
            ("/api/conflicts/resolve", {"node": m["node"], "keep": "a:1"}, 400, "expected_heads"),
            (
                "/api/conflicts/resolve",
                {"node": m["node"], "expected_heads": [m["version"]]},
                400,
                "either keep",
            ),
            (
                "/api/conflicts/resolve",
                {"node": m["node"], "keep": "x:1", "expected_heads": ["x:1"]},
                409,
                "changed",
            ),
            (
                "/api/orphans/place",
                {"node": m["node"], "new_uri": "core://x", "priority": 1, "disclosure": " "},
                400,
                "empty",
            ),
            (
                "/api/orphans/place",
                {"node": "f" * 24, "new_uri": "core://x", "priority": 1, "disclosure": "d"},
                404,
                "No memory with id",
            ),
            ("/api/orphans/delete", {"node": "f" * 24}, 404, "No memory with id"),
            ("/api/changes/approve", {}, 400, "Give the change ids"),
            ("/api/changes/approve", {"ids": ["nope:1"]}, 404, "No change"),
            ("/api/changes/approve", {"through": {"laptop": 10**6}}, 400, "holds them only"),
            ("/api/changes/approve", {"through": {"laptop": "x"}}, 400, "map node ids"),
            ("/api/changes/unreview", {"id": "laptop:2"}, 400, "no verdict"),
            ("/api/changes/rollback", {"ids": []}, 400, "Give the change ids"),
            ("/api/changes/rollback", {"ids": ["laptop:2"], "basis": "0" * 16}, 409, "edited"),
            ("/api/preview", {"uri": "core://none", "text": "x"}, 404, "not found"),
            ("/api/login", {"token": "x"}, 401, "Wrong token."),
        ]
        for path, body, code, message in cases:
            status, answer = await page.post(path, body)
            error = answer.get("error", "") if isinstance(answer, dict) else answer
            assert status == code and message in error, (path, body, status, answer)
        r = await page.client.post("/api/memory/text", data=b"{not json", headers=page.auth)
        assert r.status == 400 and "application/json" in (await r.json())["error"]
        r = await page.client.post(
            "/api/memory/text",
            data=b"{not json",
            headers={**page.auth, "Content-Type": "application/json"},
        )
        assert r.status == 400 and "not valid JSON" in (await r.json())["error"]
        assert page.shard() == before


async def test_a_stale_page_is_told_not_overwritten(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        _, m = await page.get("/api/memory", **U)
        agent_edit(page.store, "core://user", "An agent wrote this meanwhile.")
        status, body = await page.post(
            "/api/memory/text", {**U, "text": "My edit.", "expected_version": m["version"]}
        )
        assert status == 409 and "changed since" in body["error"]
        assert body["current"]["version"] != m["version"]
        _, now = await page.get("/api/memory", **U)
        assert now["text"] == "An agent wrote this meanwhile."
        for path, extra in (
            ("/api/memory/move", {"new_uri": "core://u2"}),
            ("/api/memory/delete", {}),
            ("/api/memory/restore", {"version": m["version"]}),
        ):
            status, body = await page.post(path, {**U, **extra, "expected_version": m["version"]})
            assert status == 409, (path, body)
        status, _ = await page.post(
            "/api/memory/text", {**U, "text": "My edit.", "expected_version": now["version"]}
        )
        assert status == 200


async def test_mesh_answers_without_a_daemon(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        status, mesh = await page.get("/api/mesh")
        assert status == 200 and mesh["node"] == "laptop" and not mesh["daemon"]["reachable"]
        assert mesh["shards"][0]["shard"] == "laptop" and mesh["conflicts_total"] == 0
        assert mesh["daemon"]["needed"] is False and "only machine" in mesh["daemon"]["note"]


async def test_live_events_report_changes_from_other_processes(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        nodes = seed(page.store)
        other = open_store(tmp_path, "laptop")  # another process's store on the same shard
        server = page.client.server
        assert isinstance(server, TestServer)
        server.app[DATA].poll()  # what the seeding wrote is old news
        r = await page.client.get("/api/events", headers=page.auth)
        assert r.status == 200 and r.headers["Content-Type"] == "text/event-stream"
        assert (await r.content.readuntil(b"\n\n")).startswith(b"retry:")
        agent_edit(other, "core://user", "Changed by another session.")
        other.close()
        event = await asyncio.wait_for(r.content.readuntil(b"\n\n"), 10)
        assert event.startswith(b"data: ")
        got = json.loads(event[6:])
        assert got["namespaces"][NS]["nodes"] == [nodes["user"]]
        r.close()
