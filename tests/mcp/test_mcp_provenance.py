"""Provenance the MCP edge cannot fake: a real ``noon serve`` process and a real MCP client that
calls itself ``web`` (the page's name). Its writes are recorded as the MCP edge's (``via:
mcp``), keep the name it gave as information, and wait in the page's review queue like any
agent's."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from noon.config import Settings
from noon.store.store import Store
from noon.web.data import WebData
from tests.harness.mcp import http_server
from tests.harness.uri import Session

pytestmark = pytest.mark.integration


async def test_a_client_calling_itself_web_is_queued_for_review(tmp_path: Path) -> None:
    args = ["--dir", str(tmp_path), "--node-id", "n1", "--tools", "all"]
    posing = Implementation(name="web", version="1")
    with http_server(args) as url:
        async with Client(streamable_http_client(url), mode="legacy", client_info=posing) as c:
            s = Session(c)
            await s.create("core://", "note", "Written by a client posing as the page.")
            result = await c.call_tool(
                "create_entities",
                {"entities": [{"name": "Ann", "entityType": "person", "observations": []}]},
            )
            assert not result.is_error
    lines = [orjson.loads(x) for x in (tmp_path / "n1.jsonl").read_bytes().splitlines()]
    assert {(op["by"], op["via"]) for op in lines} == {("web", "mcp")}

    settings = Settings.from_env({}, dir=tmp_path, node_id="n1", fsync=False)
    store = Store(settings)
    try:
        data = WebData(store, settings)
        queue = data.changes("default", "pending", "change", None, 50)
        assert queue["pending"] == 2
        assert [(i["client"], i["status"]) for i in queue["items"]] == [("web", "pending")] * 2
    finally:
        store.close()
