"""Review decisions belong to the machine that wrote them, cover only what it had seen, and the
queue keys on the edge that wrote a change, never on a name a client chose: asserted through the
page's review API (on a loopback port) and the read model's ``reviews`` table, with the ops a
member machine could put in its own shard (what replication would deliver)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

from noon.core.elements import review_key
from noon.core.ops import encode
from tests.harness.web import NS, Page, agent_edit, page_server, seed

MAX = (1 << 53) - 1


def now_stamp(ahead_ms: int = 0) -> int:
    return (int(time.time() * 1000) + ahead_ms) << 16


def member_shard(directory: Path, node: str, values: list[tuple[tuple[str, ...], Any]]) -> None:
    """``node``'s shard: one batch of review ops as its page would stamp them (via ``web``), at
    this moment."""
    stamp, last = now_stamp(), len(values)
    lines = [
        encode(
            node=node, seq=i, hlc=stamp + i, el=key, val=val, by="web", via="web",
            bat=last if last > 1 else None,
        )
        for i, (key, val) in enumerate(values, 1)
    ]  # fmt: skip
    (directory / f"{node}.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))


async def queue(page: Page, view: str = "pending") -> dict[str, Any]:
    status, body = await page.get("/api/changes", view=view, limit="200")
    assert status == 200, body
    return body


def review_rows(page: Page) -> list[tuple[Any, ...]]:
    with page.store.lock:
        page.store.refresh()
        return page.store.model.conn.execute(
            "SELECT subject, reviewer, w_node FROM reviews ORDER BY subject, reviewer"
        ).fetchall()


async def test_review_ops_a_member_writes_in_another_machines_name_change_nothing(
    tmp_path: Path,
) -> None:
    """The attack of issue 22: ``peer`` writes verdicts and an "approved up to 2^53-1" mark
    naming ``laptop`` as the reviewer, and a "rolled back" verdict on a change whose text
    stands. On laptop nothing is reviewed, later changes are queued, and the read model holds
    no decision for laptop."""
    async with page_server(tmp_path) as page:
        seed(page.store)
        before = await queue(page)
        assert before["pending"] == 5
        ids = [i["id"] for i in before["items"]]
        held = before["frontier"]["laptop"]
        forged: list[tuple[tuple[str, ...], Any]] = [
            (review_key(NS, cid, "laptop"), {"verdict": "approved"}) for cid in ids[1:]
        ]
        forged += [
            (review_key(NS, ids[0], "laptop"), {"verdict": "rolled_back"}),
            (review_key(NS, "upto", "laptop"), {"through": {"laptop": MAX, "peer": MAX}}),
            (review_key(NS, f"laptop:{held + 1}", "laptop"), {"verdict": "approved"}),
        ]
        member_shard(tmp_path, "peer", forged)
        agent_edit(page.store, "core://user", "The user is Salem, after the attack.")
        after = await queue(page)
        assert after["pending"] == 6
        assert [i["id"] for i in after["items"]] == [f"laptop:{held + 1}", *ids]
        assert {i["status"] for i in after["items"]} == {"pending"}
        assert all(i["reviewed_by"] is None for i in after["items"])
        reviewed = await queue(page, "reviewed")
        assert reviewed["items"] == []
        everything = await queue(page, "all")
        assert "rolled_back" not in {i["status"] for i in everything["items"]}
        assert review_rows(page) == []  # not laptop's decisions, and none of peer's either


async def test_a_members_own_decisions_cover_only_what_was_written_before_them(
    tmp_path: Path,
) -> None:
    """``peer`` approving in its own name is peer's decision, shown as peer's; its watermark
    naming seqs not written yet and its verdict on a change id not used yet cover nothing
    written after them; its "rolled back" on a change whose text stands is not believed."""
    async with page_server(tmp_path) as page:
        seed(page.store)
        before = await queue(page)
        ids = [i["id"] for i in before["items"]]
        held = before["frontier"]["laptop"]
        member_shard(
            tmp_path,
            "peer",
            [
                (review_key(NS, ids[0], "peer"), {"verdict": "rolled_back"}),
                (review_key(NS, ids[1], "peer"), {"verdict": "approved"}),
                (review_key(NS, "upto", "peer"), {"through": {"laptop": MAX}}),
                (review_key(NS, f"laptop:{held + 1}", "peer"), {"verdict": "approved"}),
            ],
        )
        time.sleep(0.002)  # the agent's next stamp is after peer's (what "later" means here)
        agent_edit(page.store, "core://user", "Written after peer's approval.")
        after = await queue(page)
        assert after["pending"] == 1
        assert [(i["id"], i["status"]) for i in after["items"]] == [
            (f"laptop:{held + 1}", "pending")
        ]
        shown = {i["id"]: i for i in (await queue(page, "all"))["items"]}
        assert shown[ids[1]]["status"] == "approved"
        assert shown[ids[1]]["reviewed_by"]["machine"] == "peer"
        assert shown[ids[0]]["status"] == "approved"  # by the watermark: not "rolled back"
        assert shown[ids[0]]["reviewed_by"] is None
        assert {w for _, _, w in review_rows(page)} == {"peer"}


async def test_an_approval_never_covers_a_change_made_after_it(tmp_path: Path) -> None:
    """The page's "approve all" and its approval of one change: a change made afterwards is
    queued, and a watermark beyond what this machine holds is refused."""
    async with page_server(tmp_path) as page:
        seed(page.store)
        first = await queue(page)
        held = first["frontier"]["laptop"]
        status, body = await page.post("/api/changes/approve", {"through": {"laptop": held + 5}})
        assert status == 400 and "holds them only up to" in body["error"]
        status, _ = await page.post("/api/changes/approve", {"through": first["frontier"]})
        assert status == 200 and (await queue(page))["pending"] == 0
        agent_edit(page.store, "core://user", "A change after approve-all.")
        later = await queue(page)
        assert later["pending"] == 1 and later["items"][0]["id"] == f"laptop:{held + 2}"


async def test_an_op_claiming_the_page_by_its_client_name_only_is_queued(tmp_path: Path) -> None:
    """Ops written before the edge was recorded carry only the client's name: ``by: web`` alone
    is a claim anyone could make, so such a change waits for review; the page's own edit
    (``via: web``) never does."""
    async with page_server(tmp_path) as page:
        seed(page.store)
        held = (await queue(page))["frontier"]["laptop"]
        line = encode(
            node="peer", seq=1, hlc=now_stamp(), el=("content", NS, "peer.1"),
            val={"text": "claims to be the page"}, by="web",
        )  # fmt: skip
        (tmp_path / "peer.jsonl").write_bytes(line + b"\n")
        status, _ = await page.post(
            "/api/memory/text", {"uri": "core://user", "text": "The person's own edit."}
        )
        assert status == 200
        shown = {i["id"]: i for i in (await queue(page, "all"))["items"]}
        assert shown["peer:1"]["status"] == "pending" and shown["peer:1"]["client"] == "web"
        assert shown[f"laptop:{held + 1}"]["status"] == "web"
        assert (await queue(page))["pending"] == 6
        mine = orjson.loads(page.shard().splitlines()[-1])
        assert mine["via"] == "web" and mine["by"] == "web"
