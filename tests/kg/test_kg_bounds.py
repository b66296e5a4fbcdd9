"""Malformed and oversized arguments of the knowledge-graph and URI tools, through a real
in-memory MCP client: a NUL anywhere is matched as any other character (never an internal
error), every tool answers every malformed string cleanly, and a call listing more than one
call may hold is refused at once, writes nothing, and leaves honest calls served."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from noon.kg import plan
from noon.mcp.server import create_server
from noon.store.access import kg_read
from tests.harness.mcp import make_settings, make_store, tool_text

NUL_ENTITY = {"name": "nul\x00name", "entityType": "t\x00", "observations": ["o\x00k"]}
ALICE = {"name": "Alice", "entityType": "person", "observations": ["likes tea"]}


async def test_a_nul_in_a_query_matches_like_any_character(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    server = create_server(store, make_settings(tmp_path), {"kg"})
    async with Client(server, mode="legacy") as c:
        await c.call_tool("create_entities", {"entities": [NUL_ENTITY, ALICE]})
        for query, found in [
            ("l\x00n", [NUL_ENTITY]),  # three characters: the trigram index cannot hold it
            ("\x00", [NUL_ENTITY]),
            ("O\x00K", [NUL_ENTITY]),  # case folded as the official server does
            ("tea\x00", []),
            ("likes tea", [ALICE]),
        ]:
            started = time.monotonic()
            r = await c.call_tool("search_nodes", {"query": query})
            assert time.monotonic() - started < 10
            assert not r.is_error, r.content
            assert r.structured_content == {"entities": found, "relations": []}, query
        r = await c.call_tool("open_nodes", {"names": ["nul\x00name"]})
        assert r.structured_content == {"entities": [NUL_ENTITY], "relations": []}


def _fill(schema: dict[str, Any], bad: str) -> Any:
    """Arguments shaped as ``schema`` asks with every string ``bad``."""
    kind = schema.get("type")
    if kind == "string":
        return bad
    if kind == "integer":
        return 0
    if kind == "boolean":
        return False
    if kind == "array":
        return [_fill(schema.get("items", {"type": "string"}), bad)]
    if kind == "object":
        return {k: _fill(v, bad) for k, v in schema.get("properties", {}).items()}
    return bad


MALFORMED = [
    "a\x00b",
    "\x00",
    "kg://\x00",
    "core://\x00",
    "core://a/\x00x",
    "",
    "\x1b]52;c;aGk=\x07",
    "x" * 5000,
    "core://" + "a/" * 3000,
    "a\u2028b\ufeff",
    "kg://a%00",
]


async def test_every_tool_answers_every_malformed_string_cleanly(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    server = create_server(store, make_settings(tmp_path), {"kg", "uri"})
    async with Client(server, mode="legacy") as c:
        await c.call_tool(
            "create_memory",
            {
                "parent_uri": "core://",
                "content": "kept",
                "priority": 1,
                "title": "kept",
                "disclosure": "d",
            },
        )
        tools = (await c.list_tools()).tools
        assert {"search_nodes", "read_memory", "create_entities"} <= {t.name for t in tools}
        for tool in tools:
            for bad in MALFORMED:
                r = await c.call_tool(tool.name, _fill(tool.input_schema, bad))
                text = tool_text(r) if r.content else ""
                assert "Internal error" not in text, (tool.name, bad, text)
        # The session still serves an honest write and read after all of it.
        r = await c.call_tool(
            "create_memory",
            {
                "parent_uri": "core://",
                "content": "after",
                "priority": 1,
                "title": "after",
                "disclosure": "d",
            },
        )
        assert not r.is_error, r.content
        r = await c.call_tool("read_memory", {"uri": "core://after"})
        assert not r.is_error and "after" in tool_text(r)


async def test_a_call_listing_too_many_items_is_refused_at_once(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    server = create_server(store, make_settings(tmp_path), {"kg"})
    huge = [{"name": f"e{i}", "entityType": "t", "observations": ["o"]} for i in range(20_000)]
    answers: dict[str, Any] = {}
    async with Client(server, mode="legacy") as c:

        async def hostile() -> None:
            started = time.monotonic()
            answers["huge"] = await c.call_tool("create_entities", {"entities": huge})
            answers["took"] = time.monotonic() - started

        async def honest() -> None:
            answers["honest"] = await c.call_tool("create_entities", {"entities": [ALICE]})

        async with anyio.create_task_group() as tg:
            tg.start_soon(hostile)
            tg.start_soon(honest)
        r = answers["huge"]
        assert r.is_error
        assert r.content[0].text == (
            f"create_entities lists 40000 items (entries and the observations or names they "
            f"list); one call takes at most {plan.MAX_CALL_ITEMS}. Nothing was written: split "
            "it into smaller calls, or import a whole graph with `noon import`."
        )
        assert answers["took"] < 10  # refused before the store is read (it took 18 s)
        assert answers["honest"].structured_content == {"entities": [ALICE]}
        at_bound = huge[: plan.MAX_CALL_ITEMS // 2]  # 5,000 entities with one observation each
        r = await c.call_tool("create_entities", {"entities": at_bound})
        assert not r.is_error and len(r.structured_content["entities"]) == len(at_bound)
    graph = kg_read(store, "default", lambda view: view.graph())
    assert [e["name"] for e in graph["entities"]] == ["Alice"] + [e["name"] for e in at_bound]
