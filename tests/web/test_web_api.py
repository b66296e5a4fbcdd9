"""The page server's API, route by route, in-process on a loopback port: what each route
answers, bad input refused with a clear message and nothing written, stale pages told (409)
instead of overwritten, and the security checks (Host, Origin, CSRF, token)."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from noon.core.elements import review_key
from noon.graph import plan
from noon.store.access import service
from noon.web.routes import DATA
from tests.harness.web import AGENT, NS, agent_create, agent_edit, open_store, page_server, seed

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


async def test_review_approve_rollback_and_undo_the_rollback(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        nodes = seed(page.store)
        _, queue = await page.get("/api/changes")
        assert queue["pending"] == 5
        kw = queue["items"][0]
        assert kw["what"] == ["bound keyword 'Salem' to core://user"]
        status, _ = await page.post("/api/changes/approve", {"ids": [kw["id"]]})
        _, queue = await page.get("/api/changes")
        assert queue["pending"] == 4 and kw["id"] not in [i["id"] for i in queue["items"]]
        assert (review_key(NS, kw["id"], "laptop")) in page.store.fold.elements
        status, _ = await page.post("/api/changes/unreview", {"id": kw["id"]})
        assert status == 200 and (await page.get("/api/changes"))[1]["pending"] == 5
        # An agent moves, retitles and re-keys a memory in one call; the page undoes it all.
        from noon.graph import plan
        from noon.graph.uri import parse
        from noon.store.access import service

        def agent_call(g: Any) -> tuple[list[Any], None]:
            node, _, pl = plan.locate(g, NS, "core://user")
            drafts = plan.move(g, NS, node, pl, parse("project://user"), 9, "moved")
            drafts.append(plan.set_text(NS, node, "Rewritten by the agent."))
            drafts += plan.triggers(g, NS, node, ["agentword"], ["Salem"])[0]
            drafts += plan.boot(g, NS, [node], [])
            return drafts, None

        service(page.store).write(agent_call, AGENT)
        _, queue = await page.get("/api/changes")
        change = queue["items"][0]
        assert change["ops"] == 6 and change["subject"]["label"] == "project://user"
        _, detail = await page.get("/api/change", id=change["id"])
        kinds = sorted(s["kind"] for s in detail["steps"])
        assert kinds == ["boot", "content", "edge", "edge", "keyword", "keyword"]
        text_step = next(s for s in detail["steps"] if s["kind"] == "content")
        assert text_step["diff"]["lines"] == [
            ["-", "The user is Salem. Salem likes tea."],
            ["+", "Rewritten by the agent."],
        ]
        assert detail["undo"]["possible"] and detail["undo"]["writes"] == 6
        status, done = await page.post(
            "/api/changes/rollback", {"ids": [change["id"]], "basis": detail["undo"]["basis"]}
        )
        assert status == 200 and done["written"] == 6
        _, m = await page.get("/api/memory", **U)
        assert m["text"] == "The user is Salem. Salem likes tea." and m["keywords"] == ["Salem"]
        assert m["placement"]["priority"] == 1 and not m["boot"] and m["aliases"] == []
        assert m["node"] == nodes["user"]
        _, reviewed = await page.get("/api/changes", view="reviewed")
        item = next(i for i in reviewed["items"] if i["id"] == change["id"])
        assert item["status"] == "rolled_back" and item["reviewed_by"]["batch"] == done["batch"]
        # The rollback is a change too: undo it, and the agent's version is back (and queued).
        _, undo_detail = await page.get("/api/change", id=done["batch"])
        status, _ = await page.post("/api/changes/rollback", {"ids": [done["batch"]]})
        assert status == 200
        _, m = await page.get("/api/memory", uri="project://user")
        assert m["text"] == "Rewritten by the agent." and m["boot"]
        _, queue = await page.get("/api/changes")
        assert change["id"] in [i["id"] for i in queue["items"]]
        assert undo_detail["undo"]["writes"] == 7  # six elements and the review mark


async def test_approve_all_and_grouping_by_memory(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        agent_edit(page.store, "core://user", "v2")
        agent_edit(page.store, "core://user", "v3")
        _, grouped = await page.get("/api/changes", group="memory")
        user = next(i for i in grouped["items"] if i["subject"]["label"] == "core://user")
        assert user["changes"] == 4 and len(user["ids"]) == 4
        _, detail = await page.get("/api/change", id=user["ids"])
        text = next(s for s in detail["steps"] if s["kind"] == "content")
        assert text["before"] is None and text["after"] == {"chars": 2}  # created by the group
        _, first = await page.get("/api/changes", limit="2")
        assert len(first["items"]) == 2 and first["next"]
        _, second = await page.get("/api/changes", limit="50", before=first["next"])
        ids = [i["id"] for i in first["items"] + second["items"]]
        assert len(ids) == len(set(ids)) == 7
        status, _ = await page.post("/api/changes/approve", {"through": first["frontier"]})
        _, queue = await page.get("/api/changes")
        assert status == 200 and queue["pending"] == 0 and queue["items"] == []
        agent_edit(page.store, "core://user", "v4")  # after the approval: queued
        assert (await page.get("/api/changes"))[1]["pending"] == 1


async def test_history_and_restore_a_version(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        agent_edit(page.store, "core://user", "Second.")
        await page.post("/api/memory/placement", {**U, "priority": 4})
        agent_edit(page.store, "core://user", "Third.")
        _, hist = await page.get("/api/history", **U)
        assert hist["total"] == 5  # create, keyword, edit, placement, edit
        texts = [i for i in hist["items"] if i["version"]]
        assert [i["steps"][0]["diff"]["lines"][-1][1] for i in texts][:2] == ["Third.", "Second."]
        second = texts[1]["version"]["version"]
        status, r = await page.post(
            "/api/memory/restore", {**U, "version": second, "expected_version": hist["version"]}
        )
        assert status == 200 and r["memory"]["text"] == "Second."
        assert r["memory"]["placement"]["priority"] == 4  # the later edit did not change it


async def test_conflicts_side_by_side_and_settled(tmp_path: Path) -> None:
    other = tmp_path / "desktop"
    async with page_server(tmp_path / "laptop") as page:
        seed(page.store)
        other.mkdir()
        shutil.copyfile(page.store.own, other / "laptop.jsonl")
        desk = open_store(other, "desktop")
        agent_edit(desk, "core://user", "Desktop's version.")
        agent_edit(page.store, "core://user", "Laptop's version.")
        shutil.copyfile(desk.own, page.store.dir / desk.own.name)
        desk.close()
        _, found = await page.get("/api/conflicts")
        assert len(found) == 1 and found[0]["kind"] == "content"
        c = found[0]
        texts = sorted(v["text"] for v in c["versions"])
        assert texts == ["Desktop's version.", "Laptop's version."]
        status, body = await page.post(
            "/api/conflicts/resolve",
            {"node": c["node"], "text": "Merged.", "expected_heads": c["heads"][:1]},
        )
        assert status == 409 and body["current"]["heads"] == sorted(c["heads"])
        status, body = await page.post(
            "/api/conflicts/resolve",
            {"node": c["node"], "keep": c["versions"][1]["version"], "expected_heads": c["heads"]},
        )
        assert status == 200 and body == {"resolved": True}
        assert (await page.get("/api/conflicts"))[1] == []


async def test_orphans_placed_again_or_deleted_and_kg_browsed(tmp_path: Path) -> None:
    from noon.core.elements import content_key, entity_key, obs_key, rel_key
    from noon.core.ops import Draft

    async with page_server(tmp_path) as page:
        seed(page.store)
        page.store.write(
            lambda f: [
                Draft(content_key(NS, "a" * 24), {"text": "Lost and found."}),
                Draft(content_key(NS, "b" * 24), {"text": "Also lost."}),
                Draft(entity_key(NS, "Ada"), {"type": "person"}),
                Draft(entity_key(NS, "Bob"), {"type": "person"}),
                Draft(obs_key(NS, "Ada", "likes tea", 0), {}),
                Draft(rel_key(NS, "Ada", "Bob", "knows", 0), {}),
            ],
            client=AGENT,
        )
        _, orphans = await page.get("/api/orphans")
        assert orphans["total"] == 2
        status, placed = await page.post(
            "/api/orphans/place",
            {"node": "a" * 24, "new_uri": "core://found", "priority": 1, "disclosure": "d"},
        )
        assert status == 200 and placed["uri"] == "core://found"
        status, gone = await page.post("/api/orphans/delete", {"node": "b" * 24})
        assert status == 200 and gone["deleted"] == 1
        assert (await page.get("/api/orphans"))[1]["total"] == 0
        _, ents = await page.get("/api/kg/entities")
        assert [e["name"] for e in ents["items"]] == ["Ada", "Bob"]
        _, found = await page.get("/api/kg/entities", q="TEA")
        assert [e["name"] for e in found["items"]] == ["Ada"]
        _, ada = await page.get("/api/kg/entity", name="Ada")
        assert ada["observations"] == ["likes tea"] and ada["relations"][0]["to"] == "Bob"
        assert ada["changes"][0]["client"] == AGENT


async def test_mesh_answers_without_a_daemon(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        status, mesh = await page.get("/api/mesh")
        assert status == 200 and mesh["node"] == "laptop" and not mesh["daemon"]["reachable"]
        assert mesh["shards"][0]["shard"] == "laptop" and mesh["conflicts_total"] == 0
        assert mesh["daemon"]["needed"] is False and "only machine" in mesh["daemon"]["note"]


async def test_machines_page_counts_the_conflicts_the_conflicts_page_lists(tmp_path: Path) -> None:
    """An edit that lost to a delete on another machine is a conflict on both pages."""
    desk_dir = tmp_path / "desk"
    async with page_server(tmp_path / "laptop") as page:
        node = agent_create(page.store, "core://", "note", "first")
        desk = open_store(desk_dir, "desk")
        shutil.copyfile(page.store.own, desk_dir / page.store.own.name)
        service(desk).write(
            lambda g: (plan.delete(g, NS, node, "core://note", None, True)[0], 0), AGENT
        )
        agent_edit(page.store, "core://note", "edited on the laptop")
        shutil.copyfile(desk.own, tmp_path / "laptop" / desk.own.name)
        desk.close()
        _, listed = await page.get("/api/conflicts")
        _, mesh = await page.get("/api/mesh")
        assert len(listed) == 1 and mesh["conflicts_total"] == 1


async def test_rebinding_host_cross_origin_and_a_missing_session_are_refused(
    tmp_path: Path,
) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        before = page.shard()
        c = page.client
        r = await c.get("/api/info", headers={"Host": f"attacker.example:{page.port}"})
        assert r.status == 421 and "DNS rebinding" in (await r.json())["error"]
        r = await c.get("/", headers={"Host": "127.0.0.1:1"})
        assert r.status == 421
        body = {**U, "text": "pwned"}
        status, answer = await page.post("/api/memory/text", body, Origin="http://attacker.example")
        assert status == 403 and "Cross-origin" in answer["error"]
        status, answer = await page.post(
            "/api/memory/text", body, **{"Sec-Fetch-Site": "cross-site"}
        )
        assert status == 403
        r = await c.post("/api/memory/text", json=body)
        assert r.status == 401 and "open the address noon web printed" in (await r.json())["error"]
        r = await c.post("/api/memory/text", json=body, headers={"X-Noon-Session": "guess"})
        assert r.status == 401
        assert page.shard() == before
        status, _ = await page.post(
            "/api/memory/text", body, Origin=f"http://127.0.0.1:{page.port}"
        )
        assert status == 200
        r = await c.get("/")
        for header in ("Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options"):
            assert header in r.headers
        assert "Set-Cookie" not in r.headers  # no credential is a cookie


async def test_the_token_is_required_on_loopback_and_traded_for_the_session(
    tmp_path: Path,
) -> None:
    async with page_server(tmp_path, token="s3cret-token") as page:
        seed(page.store)
        c = page.client
        r = await c.get("/api/info")
        assert r.status == 401 and "token" in (await r.json())["error"]
        r = await c.get("/")
        assert r.status == 200 and "noon" in await r.text()  # the shell holds no data
        r = await c.get("/static/app.css")
        assert r.status == 200  # assets hold no data
        r = await c.get("/api/info", headers={"Authorization": "Bearer wrong"})
        assert r.status == 401
        r = await c.get("/api/info", headers={"Authorization": "Bearer s3cret-token"})
        assert r.status == 200
        r = await c.post(
            "/api/memory/text",
            json={**U, "text": "by a program"},
            headers={"Authorization": "Bearer s3cret-token"},
        )
        assert r.status == 200
        status, answer = await page.post("/api/login", {"token": "wrong"})
        assert status == 401 and answer == {"error": "Wrong token."}
        r = await c.post("/api/login", json={"token": "s3cret-token"})
        session = (await r.json())["session"]
        assert r.status == 200 and session == page.session and "Set-Cookie" not in r.headers
        r = await c.get("/api/info", headers={"X-Noon-Session": session})
        assert r.status == 200
        assert session != "s3cret-token" and len(session) >= 40


async def test_hostile_requests_are_refused_and_honest_ones_served(tmp_path: Path) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        before = page.shard()
        junk = b'{"uri": "core://user", "text": "' + b"x" * (9 << 20) + b'"}'
        headers = {**page.auth, "Content-Type": "application/json"}

        async def hostile() -> int:
            r = await page.client.post("/api/memory/text", data=junk, headers=headers)
            return r.status

        async def honest() -> int:
            status, m = await page.get("/api/memory", **U)
            assert m["text"].startswith("The user is Salem")
            return status

        started = time.monotonic()
        results = await asyncio.gather(
            *[hostile() for _ in range(8)], *[honest() for _ in range(8)]
        )
        took = time.monotonic() - started
        assert results[:8] == [413] * 8 and results[8:] == [200] * 8
        assert took < 20, took
        assert page.shard() == before


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


@pytest.mark.parametrize("count", [33])
async def test_live_connections_are_bounded(tmp_path: Path, count: int) -> None:
    async with page_server(tmp_path) as page:
        opened = []
        for _ in range(count - 1):
            r = await page.client.get("/api/events", headers=page.auth)
            assert r.status == 200
            await r.content.readuntil(b"\n\n")
            opened.append(r)
        r = await page.client.get("/api/events", headers=page.auth)
        assert r.status == 503 and "Too many live pages" in (await r.json())["error"]
        for o in opened:
            o.close()


async def test_rolling_back_a_create_says_what_becomes_of_memories_placed_under_it(
    tmp_path: Path,
) -> None:
    async with page_server(tmp_path) as page:
        seed(page.store)
        _, queue = await page.get("/api/changes", view="all", limit="50")
        agent = next(i for i in queue["items"] if i["subject"]["label"] == "core://agent")
        _, detail = await page.get("/api/change", id=agent["id"])
        text = next(s for s in detail["steps"] if s["kind"] == "content")
        assert "1 memory(ies) placed under it since stay, listed as orphans" in text["restore"]
        status, _ = await page.post("/api/changes/rollback", {"ids": [agent["id"]]})
        assert status == 200
        _, orphans = await page.get("/api/orphans")
        assert [o["snippet"] for o in orphans["items"]] == ["Answer tersely."]


async def test_a_peers_watermark_naming_thousands_of_authors_costs_only_the_authors_held(
    tmp_path: Path,
) -> None:
    """Approve-all marks replicate from every machine; one naming 10,000 authors (the most a
    review value may) covers what it names of the authors held here, and the queue answers as
    fast as ever to the honest page."""
    from noon.core.ops import encode

    async with page_server(tmp_path) as page:
        seed(page.store)
        _, queue = await page.get("/api/changes")
        assert queue["pending"] == 5
        held = queue["frontier"]["laptop"]
        marks = {f"ghost{i:05}": 10**6 for i in range(9_999)} | {"laptop": held - 1}
        line = encode(
            node="peer", seq=1, hlc=(int(time.time() * 1000) + 1000) << 16,
            el=review_key(NS, "upto", "peer"), val={"through": marks}, by="web", via="web",
        )  # fmt: skip
        (tmp_path / "peer.jsonl").write_bytes(line + b"\n")
        started = time.monotonic()
        _, queue = await page.get("/api/changes", view="all", limit="200")
        _, pending = await page.get("/api/changes")
        took = time.monotonic() - started
        assert pending["pending"] == 1 and [i["ops"] for i in pending["items"]] == [1]
        assert [i["status"] for i in queue["items"]].count("pending") == 1
        assert took < 5, took


async def test_rolling_back_one_machines_creation_keeps_the_other_machines_memory(
    tmp_path: Path,
) -> None:
    """Two machines create core://notes while apart; on the page, rolling back this machine's
    creation says the other's version was written concurrently and keeps it at the URI."""
    desktop = open_store(tmp_path / "desktop", "desktop")
    theirs = agent_create(desktop, "core://", "notes", "from the desktop")
    async with page_server(tmp_path / "laptop") as page:
        agent_create(page.store, "core://", "notes", "from the laptop")
        shutil.copy(desktop.own, page.store.dir / desktop.own.name)
        _, queue = await page.get("/api/changes", view="all", limit="50")
        mine = next(
            i
            for i in queue["items"]
            if i["subject"]["label"].startswith("core://notes") and i["machine"] == "laptop"
        )
        _, detail = await page.get("/api/change", id=mine["id"])
        edge = next(s for s in detail["steps"] if s["kind"] == "edge")
        assert [c["machine"] for c in edge["concurrent"]] == ["desktop"] and edge["later"] == []
        assert f"back to the version {AGENT} on desktop wrote concurrently" in edge["restore"]
        assert not detail["undo"]["overwrites_later"]
        status, _ = await page.post(
            "/api/changes/rollback", {"ids": [mine["id"]], "basis": detail["undo"]["basis"]}
        )
        assert status == 200
        _, memory = await page.get("/api/memory", uri="core://notes")
        assert memory["node"] == theirs and memory["text"] == "from the desktop"
        _, orphans = await page.get("/api/orphans")
        assert orphans["items"] == []
