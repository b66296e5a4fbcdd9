"""undo_change through a real ``noon serve`` process over stdio and a real MCP client: the agent
finds the change id where memory_history says, the undo puts back what the change wrote, every
hint it reads works as written (undoing the undo redoes), a refused call writes nothing, and the
undo is recorded as the MCP edge's and waits in the page's review queue like any agent change."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client, StdioServerParameters

from noon.config import Settings
from noon.store.store import Store
from noon.web.data import WebData
from tests.harness.mesh import ROOT, subprocess_env
from tests.harness.uri import Session

pytestmark = pytest.mark.integration

VERSION_CHANGE = re.compile(r"\(change ([^()\s]+)\)")
LISTED_CHANGE = re.compile(r"^- change (\S+) .*$", re.M)


def stdio(d: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "noon", "serve", "--tools", "uri", "--dir", str(d), "--node-id", "n1"],
        env=subprocess_env(NOON_FSYNC="1"),
        cwd=str(ROOT),
    )


def shard(d: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in (d / "n1.jsonl").read_bytes().splitlines()]


async def history(s: Session, uri: str) -> tuple[str, list[str], dict[str, str]]:
    """memory_history's text, the change ids it shows beside the versions (newest first), and
    its list of changes (id -> the line saying what it did); the structured content carries
    the same ids."""
    text, data = await s.call("memory_history", uri=uri)
    by_version = VERSION_CHANGE.findall(text)
    assert by_version == [row["change"] for row in data["versions"]]
    listed = {m.group(1): m.group(0) for m in LISTED_CHANGE.finditer(text)}
    assert list(listed) == [c["change"] for c in data["changes"]]
    assert data["changes_total"] == len(listed)
    return text, by_version, listed


async def test_an_agent_undoes_a_change_by_the_id_history_shows(tmp_path: Path) -> None:
    async with Client(stdio(tmp_path)) as client:
        s = Session(client)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        annotations = tools["undo_change"].annotations
        assert annotations is not None and annotations.destructive_hint is True
        assert "undo_change" in (tools["memory_history"].description or "")

        await s.create("core://", "note", "The deploy runs on Fridays.")
        await s.call("update_memory", uri="core://note", old_string="Fridays", new_string="Mondays")
        await s.call("move_memory", uri="core://note", new_uri="core://deploy")
        text, by_version, listed = await history(s, "core://deploy")
        assert "undo the change that wrote a version with undo_change" in text
        assert "undo one with undo_change" in text
        edit_change, create_change = by_version
        move_change = next(iter(listed))  # newest first: the move wrote no text version
        assert "placed memory at core://deploy" in listed[move_change]
        assert list(listed) == [move_change, edit_change, create_change]

        written_before = len(shard(tmp_path))
        reply, data = await s.call("undo_change", changes=[move_change])
        assert "The deploy runs on Mondays." in await s.read("core://note")
        assert (await s.fail("read_memory", uri="core://deploy")).startswith("Error:")
        assert data["changes"] == [move_change] and data["elements"] == 2
        undo = data["change"]
        assert f"written as change {undo}: undo_change it to redo" in reply
        new_ops = shard(tmp_path)[written_before:]
        assert {(op["via"], op["node"]) for op in new_ops} == {("mcp", "n1")}
        assert not any(op["el"][0] == "review" for op in new_ops), "an agent decides no review"

        await s.call("undo_change", changes=[edit_change])
        assert "The deploy runs on Fridays." in await s.read("core://note")
        # the hint, as written: undoing the undo redoes
        await s.call("undo_change", changes=[undo])
        assert "The deploy runs on Fridays." in await s.read("core://deploy")
        _, _, listed = await history(s, "core://deploy")
        assert undo in listed and move_change in listed

        # undoing a creation takes the memory away
        made = await s.create("core://", "scratch", "A passing thought.")
        _, (created,), _ = await history(s, "core://scratch")
        await s.call("undo_change", changes=[created])
        assert (await s.fail("read_memory", uri="core://scratch")).startswith("Error:")
        assert made["memory_id"]

        # refusals write nothing
        before = (tmp_path / "n1.jsonl").read_bytes()
        missing = await s.fail("undo_change", changes=["n1:999999"])
        assert missing.startswith("Error: No change 'n1:999999'")
        bad = await s.fail("undo_change", changes=[])
        assert "undo_change" in bad
        assert (tmp_path / "n1.jsonl").read_bytes() == before

    settings = Settings.from_env({}, dir=tmp_path, node_id="n1", fsync=False)
    store = Store(settings)
    try:
        queue = WebData(store, settings).changes("default", "pending", "change", None, 50)
        pending = {item["id"] for item in queue["items"]}
        assert {undo, move_change, edit_change, create_change, created} <= pending
        assert all(item["status"] == "pending" for item in queue["items"])
    finally:
        store.close()
