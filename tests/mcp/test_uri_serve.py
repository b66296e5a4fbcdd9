"""The URI tools served by real ``noon serve`` processes: stdio (both protocol eras), Streamable
HTTP, several processes on one node id writing at once, and notifications for subscribers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.harness.mcp import Recorder, http_server
from tests.harness.mesh import ROOT, subprocess_env
from tests.harness.uri import Session, make_server, open_store

pytestmark = pytest.mark.integration


def stdio(d: Path, node: str = "n1") -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "noon", "serve", "--tools", "uri", "--dir", str(d), "--node-id", node],
        env=subprocess_env(NOON_FSYNC="1"),
        cwd=str(ROOT),
    )


async def workflow(s: Session) -> None:
    tools = {t.name for t in (await s.client.list_tools()).tools}
    assert "read_memory" in tools and "create_entities" not in tools
    assert "system://boot" in (s.client.instructions or "")
    made = await s.create("core://", "agent", "I am the agent; I like tea.", priority=0)
    await s.create("core://agent", "style", "Terse.")
    _, data = await s.call(
        "update_memory",
        uri="core://agent",
        old_string="tea",
        new_string="green tea",
        expected_version=made["version"],
    )
    await s.call("manage_boot", add=["core://agent"])
    await s.call("manage_triggers", uri="core://agent/style", add=["Terse"])
    await s.call("move_memory", uri="core://agent/style", new_uri="core://style")
    body = await s.read("system://boot")
    assert "I am the agent; I like green tea." in body and data["version"] in body
    _, found = await s.call("search_memory", query="green tea")
    assert found["results"][0]["uri"] == "core://agent"
    for view in (
        "system://index/core",
        "system://recent",
        "system://glossary",
        "system://diagnostic/core",
        "system://conflicts",
        "system://orphans",
        "system://history/core://agent",
    ):
        await s.read(view)
    assert "Terse." in await s.read("core://style")


async def test_stdio_legacy_era(tmp_path: Path) -> None:
    async with Client(stdio(tmp_path), mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        await workflow(Session(client))


async def test_stdio_2026_era(tmp_path: Path) -> None:
    async with Client(stdio(tmp_path)) as client:
        assert client.protocol_version == "2026-07-28"
        await workflow(Session(client))


async def test_streamable_http(tmp_path: Path) -> None:
    args = ["--dir", str(tmp_path), "--node-id", "n1", "--tools", "uri"]
    with http_server(args) as url:
        async with Client(streamable_http_client(url), mode="legacy") as client:
            await workflow(Session(client))


async def test_several_serve_processes_on_one_node_write_at_once(tmp_path: Path) -> None:
    async with Client(stdio(tmp_path)) as first:
        await Session(first).create("core://", "shared", "log:")
    workers, count = 3, 8

    async def worker(w: int) -> None:
        async with Client(stdio(tmp_path)) as client:
            s = Session(client)
            for i in range(count):
                await s.create("core://shared", f"w{w}-{i}", f"entry {w} {i}")
                await s.call("update_memory", uri="core://shared", append=f"line {w} {i}")

    async with anyio.create_task_group() as tg:
        for w in range(workers):
            tg.start_soon(worker, w)
    async with Client(stdio(tmp_path)) as client:
        s = Session(client)
        text, data = await s.call("read_memory", uri="core://shared")
        assert len(data["children"]) == workers * count and not data["conflicted"]
        for w in range(workers):
            for i in range(count):
                assert f"line {w} {i}\n" in text + "\n"


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")  # legacy era on purpose
async def test_subscribers_hear_of_writes_from_another_process(tmp_path: Path) -> None:
    store, settings = open_store(tmp_path, "n1")
    rec = Recorder()
    async with Client(make_server(store, settings), mode="legacy", message_handler=rec) as c:
        await c.subscribe_resource("system://recent")
        async with Client(stdio(tmp_path)) as other:
            await Session(other).create("core://", "elsewhere", "written by another process")
        await rec.wait(lambda: "system://recent" in rec.updated())
        got: Any = await c.read_resource("system://recent")
        assert "core://elsewhere" in got.contents[0].text
