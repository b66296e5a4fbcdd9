"""The page server's review routes, in-process on a loopback port: approving, approving all,
rolling back and undoing a rollback, a memory's history and a version restored, conflicts
side by side and settled, orphans placed again or deleted, and what a rollback says of the
memories placed under what it takes back."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from noon.core.elements import review_key
from noon.graph import plan
from noon.store.access import service
from tests.harness.web import AGENT, NS, agent_create, agent_edit, open_store, page_server, seed

U = {"uri": "core://user"}


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
