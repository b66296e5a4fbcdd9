"""Every call a tool or view suggests is run as written, through a real ``noon serve`` process,
and does what it says: a deleted memory comes back where it was with its priority and
disclosure; orphans and edits that lost to a delete show the URI they had."""

from __future__ import annotations

import ast
import re
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from noon.core.elements import content_key
from noon.core.ops import Draft
from tests.harness.mesh import ROOT, subprocess_env
from tests.harness.uri import Session, make_server, open_store

pytestmark = pytest.mark.integration

CALL = re.compile(
    r"\b(move_memory|update_memory|delete_memory|manage_boot|read_memory)\(([^()]*)\)"
)


def calls_in(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a text suggests, with their arguments as Python literals."""
    found: list[tuple[str, dict[str, Any]]] = []
    for m in CALL.finditer(text):
        parsed = ast.parse(f"f({m.group(2)})", mode="eval").body
        assert isinstance(parsed, ast.Call)
        found.append((m.group(1), {str(k.arg): ast.literal_eval(k.value) for k in parsed.keywords}))
    return found


async def run_each(s: Session, text: str) -> list[str]:
    """Run every call ``text`` suggests; each must succeed as written."""
    suggested = calls_in(text)
    assert suggested, f"no call suggested in: {text}"
    return [(await s.call(tool, **args))[0] for tool, args in suggested]


@asynccontextmanager
async def served(d: Path, node: str) -> AsyncIterator[Session]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "noon", "serve", "--tools", "uri", "--dir", str(d), "--node-id", node],
        env=subprocess_env(),
        cwd=str(ROOT),
    )
    async with Client(params) as client:
        yield Session(client)


async def test_the_restore_hint_of_a_delete_works_and_keeps_priority_and_disclosure(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, "n1") as s:
        await s.create("core://", "project", "The plan.", priority=4, disclosure="When planning")
        await s.create("core://project", "step", "Step one.", priority=2, disclosure="When doing")
        said, _ = await s.call("delete_memory", uri="core://project", recursive=True)
        assert "core://project" in said and "new_uri=..." not in said
        assert calls_in(said) == [
            ("move_memory", {"uri": calls_in(said)[0][1]["uri"], "new_uri": "core://project"})
        ]
        await run_each(s, said)
        _, back = await s.call("read_memory", uri="core://project")
        assert back["priority"] == 4 and back["disclosure"] == "When planning"
        assert "The plan." in await s.read("core://project")


class Machine(Session):
    def __init__(self, client: Client, d: Path, node: str, store: Any) -> None:
        super().__init__(client)
        self.dir, self.node, self.store = d, node, store


def exchange(a: Machine, b: Machine) -> None:
    for src, dst in ((a, b), (b, a)):
        if src.store.own.exists():
            shutil.copyfile(src.store.own, dst.dir / src.store.own.name)


@asynccontextmanager
async def two(tmp_path: Path) -> AsyncIterator[tuple[Machine, Machine]]:
    async with AsyncExitStack() as stack:
        machines = []
        for node in ("a", "b"):
            d = tmp_path / node
            store, settings = open_store(d, node)
            client = await stack.enter_async_context(Client(make_server(store, settings)))
            machines.append(Machine(client, d, node, store))
        yield machines[0], machines[1]


async def test_an_orphan_shows_the_uri_it_had_and_its_hint_places_it_again(
    tmp_path: Path,
) -> None:
    async with two(tmp_path) as (a, b):
        await a.create("core://", "p", "parent")
        exchange(a, b)
        await a.call("delete_memory", uri="core://p")
        made = await b.create("core://p", "late", "written meanwhile", 3, "When late")
        exchange(a, b)
    async with served(a.dir, "a") as s:
        orphans = await s.read("system://orphans")
        assert f"- system://node/{made['memory_id']} (was core://p/late)" in orphans
        said = await run_each(s, orphans)
        assert "Success" in said[0]
        _, back = await s.call("read_memory", uri="core://late")
        assert back["priority"] == 3 and back["disclosure"] == "When late"
        assert "(None" in await s.read("system://orphans")


async def test_an_edit_that_lost_to_a_delete_shows_the_uri_it_had(tmp_path: Path) -> None:
    async with two(tmp_path) as (a, b):
        made = await a.create("core://", "doomed", "old text", 4, "When dooming")
        exchange(a, b)
        await a.call("update_memory", uri="core://doomed", old_string="old", new_string="newer")
        await b.call("delete_memory", uri="core://doomed")
        exchange(a, b)
    node = f"system://node/{made['memory_id']}"
    async with served(a.dir, "a") as s:
        conflicts = await s.read("system://conflicts")
        assert f"- {node} (was core://doomed)" in conflicts
        body = await s.read(node)
        await run_each(s, body)
        _, back = await s.call("read_memory", uri="core://doomed")
        assert back["priority"] == 4 and back["disclosure"] == "When dooming"
        assert "newer text" in await s.read("core://doomed")


async def test_a_memory_deleted_on_this_machine_while_placed_says_so_truly(
    tmp_path: Path,
) -> None:
    """One machine: a memory whose text is gone but whose placement is not (what a rollback
    of its creation leaves) names no other machine, and boot names it by its URI."""
    store, settings = open_store(tmp_path, "n1")
    async with Client(make_server(store, settings)) as client:
        s = Session(client)
        made = await s.create("core://", "note", "text", 2, "When noting")
        await s.call("manage_boot", add=["core://note"])
    store.write(lambda g: [Draft(content_key("default", made["memory_id"]), None)], client="t")
    async with served(tmp_path, "n1") as s:
        body = await s.read("core://note")
        assert "another machine" not in body
        assert "but it is still placed at core://note" in body
        boot = await s.read("system://boot")
        assert "- core://note: deleted" in boot and made["memory_id"] not in boot
