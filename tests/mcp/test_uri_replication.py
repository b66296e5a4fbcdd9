"""Two machines (two node ids, two directories) edited concurrently, shards exchanged by copying
files: identical graphs, conflicts shown and settled, nothing lost to concurrent moves/deletes.
And several writer processes sharing one node id."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from noon.store.access import GraphService, service
from noon.store.store import Store
from tests.harness.uri import Session, make_server, open_store

NS = "default"


class Machine(Session):
    def __init__(self, client: Client, store: Store, directory: Path) -> None:
        super().__init__(client)
        self.store = store
        self.dir = directory

    @property
    def svc(self) -> GraphService:
        return service(self.store)


def exchange(a: Machine, b: Machine) -> None:
    """Gossip by hand: each machine gets a copy of the other's own shard."""
    for src, dst in ((a, b), (b, a)):
        if src.store.own.exists():
            shutil.copyfile(src.store.own, dst.dir / src.store.own.name)


def dump(m: Machine) -> dict[str, Any]:
    """Everything a reader can observe of the graph, in a canonical form."""

    def fn(svc: GraphService) -> dict[str, Any]:
        g = svc.graph
        nodes = {}
        for n in g.memory_nodes(NS):
            el = g.content(NS, n)
            assert el is not None
            nodes[n] = {
                "uris": [str(u) for u, _ in g.uris(NS, n)],
                "winner": el.winner.id,
                "heads": sorted(el.heads or {}),
                "keywords": g.keywords_of(NS, n),
                "children": [(p.name, p.child, p.priority) for p in g.children(NS, n)],
            }
        return {
            "nodes": nodes,
            "boot": sorted(g.boot_nodes(NS)),
            "orphans": g.orphans(NS),
            "conflicts": [k for k, _ in g.conflicts(NS)],
            "domains": g.domains(NS),
        }

    return m.svc.read(fn)


def two_machines(
    fn: Callable[[Machine, Machine], Awaitable[None]],
) -> Callable[[Path], Awaitable[None]]:
    async def test(tmp_path: Path) -> None:
        async with AsyncExitStack() as stack:
            machines = []
            for node in ("a", "b"):
                d = tmp_path / node
                store, settings = open_store(d, node)
                client = await stack.enter_async_context(Client(make_server(store, settings)))
                machines.append(Machine(client, store, d))
            await fn(*machines)

    test.__name__ = fn.__name__
    return test


@two_machines
async def test_concurrent_work_converges_to_identical_graphs(a: Machine, b: Machine) -> None:
    await a.create("core://", "agent", "I am the agent.")
    await b.create("core://", "user", "The user likes tea.")
    await b.create("project://", "noon", "A memory system.")
    exchange(a, b)
    await a.create("core://agent", "style", "Terse answers.")
    await b.call("update_memory", uri="core://agent", append="I run on two machines.")
    await b.call("manage_triggers", uri="core://user", add=["tea"])
    await a.call("add_alias", new_uri="project://noon/user", target_uri="core://user")
    await a.call("manage_boot", add=["core://agent"])
    exchange(a, b)
    da, db = dump(a), dump(b)
    assert da == db
    assert len(da["nodes"]) == 4 and not da["conflicts"] and not da["orphans"]
    for m in (a, b):
        body = await m.read("core://agent")
        assert "I run on two machines." in body and "core://agent/style" in body
        assert "The user likes tea." in await m.read("project://noon/user")
        _, found = await m.call("search_memory", query="tea")
        assert [r["uri"] for r in found["results"]] == ["core://user"]
        assert "# Loaded: 1/1" in await m.read("system://boot")


@two_machines
async def test_concurrent_edits_show_as_conflict_and_a_later_edit_settles(
    a: Machine, b: Machine
) -> None:
    await a.create("core://", "plan", "Ship on Friday.")
    exchange(a, b)
    await a.call("update_memory", uri="core://plan", old_string="Friday", new_string="Monday")
    await b.call("update_memory", uri="core://plan", old_string="Friday", new_string="Sunday")
    exchange(a, b)
    assert dump(a) == dump(b)
    for m in (a, b):
        body = await m.read("core://plan")
        assert "CONCURRENT VERSIONS" in body
        assert "Ship on Monday." in body and "Ship on Sunday." in body
        _, data = await m.call("read_memory", uri="core://plan")
        assert data["conflicted"] is True and len(data["heads"]) == 2
        assert "core://plan (concurrent content versions)" in await m.read("system://conflicts")
    # B merges both versions by hand; the write names both heads and settles the conflict.
    await b.call(
        "update_memory",
        uri="core://plan",
        old_string="Ship on",
        new_string="Ship on Monday or Sunday, not",
    )
    exchange(a, b)
    for m in (a, b):
        body = await m.read("core://plan")
        assert "CONCURRENT VERSIONS" not in body and "Monday or Sunday" in body
        assert "(None" in await m.read("system://conflicts")
    assert dump(a) == dump(b)


@two_machines
async def test_a_conflict_is_settled_by_quoting_the_losing_version(a: Machine, b: Machine) -> None:
    """Issue 15: only the winner's text used to match, so the agent that read the losing version
    could not edit it. The quote now matches in any head; the edit continues that version."""
    await a.create("core://", "plan", "Ship on Friday. Tests first.")
    exchange(a, b)
    await a.call("update_memory", uri="core://plan", old_string="Friday", new_string="Monday")
    await b.call("update_memory", uri="core://plan", old_string="Friday", new_string="Sunday")
    exchange(a, b)
    _, data = await a.call("read_memory", uri="core://plan")
    winner = data["version"]
    loser = next(h for h in data["heads"] if h != winner)
    losing_word = "Monday" if loser.startswith("a:") else "Sunday"
    text, _ = await a.call(
        "update_memory",
        uri="core://plan",
        old_string=f"Ship on {losing_word}.",
        new_string=f"Ship on {losing_word}, agreed.",
    )
    assert f"concurrent version {loser}" in text and "settles the conflict" in text
    exchange(a, b)
    for m in (a, b):
        body, data = await m.call("read_memory", uri="core://plan")
        assert data["conflicted"] is False
        assert f"Ship on {losing_word}, agreed. Tests first." in body
        assert "(None" in await m.read("system://conflicts")
    # a quote in no version still fails, with the current text's hint
    err = await a.fail(
        "update_memory", uri="core://plan", old_string="Ship on Tuesday.", new_string="x"
    )
    assert "not found" in err and "line 1" in err


@two_machines
async def test_concurrent_move_and_delete_lose_nothing(a: Machine, b: Machine) -> None:
    await a.create("core://", "p", "parent")
    await a.create("core://p", "x", "precious text")
    await a.create("core://", "q", "other parent")
    exchange(a, b)
    await a.call("move_memory", uri="core://p/x", new_uri="core://q/x")
    await b.call("delete_memory", uri="core://p/x")
    exchange(a, b)
    assert dump(a) == dump(b)
    for m in (a, b):
        body = await m.read("core://q/x")
        assert "precious text" in body and "DELETED" in body
        assert "deleted while placed elsewhere" in await m.read("system://conflicts")
    await a.call("update_memory", uri="core://q/x", append="kept")
    exchange(a, b)
    for m in (a, b):
        body = await m.read("core://q/x")
        assert "DELETED" not in body and "precious text\nkept" in body
    assert dump(a) == dump(b)


@two_machines
async def test_child_created_under_a_concurrently_deleted_parent_is_an_orphan(
    a: Machine, b: Machine
) -> None:
    await a.create("core://", "p", "parent")
    exchange(a, b)
    await a.call("delete_memory", uri="core://p")
    made = await b.create("core://p", "late", "written while p was being deleted")
    exchange(a, b)
    assert dump(a) == dump(b)
    for m in (a, b):
        orphans = await m.read("system://orphans")
        assert f"system://node/{made['memory_id']}" in orphans
        body = await m.read(f"system://node/{made['memory_id']}")
        assert "written while p was being deleted" in body and "ORPHAN" in body
        assert "Orphans: 1 unreachable" in await m.read("system://diagnostic/core")
    await a.call(
        "move_memory",
        uri=f"system://node/{made['memory_id']}",
        new_uri="core://rescued",
        disclosure="When looking for lost notes",
    )
    exchange(a, b)
    for m in (a, b):
        assert "written while p was being deleted" in await m.read("core://rescued")
        assert "(None" in await m.read("system://orphans")


@two_machines
async def test_concurrent_moves_forming_a_cycle_leave_both_reachable_as_orphans(
    a: Machine, b: Machine
) -> None:
    x = await a.create("core://", "x", "node x")
    y = await a.create("core://", "y", "node y")
    exchange(a, b)
    await a.call("move_memory", uri="core://x", new_uri="core://y/x")
    await b.call("move_memory", uri="core://y", new_uri="core://x/y")
    exchange(a, b)
    assert dump(a) == dump(b)
    for m in (a, b):
        orphans = await m.read("system://orphans")
        assert x["memory_id"] in orphans and y["memory_id"] in orphans
    await b.call(
        "move_memory",
        uri=f"system://node/{x['memory_id']}",
        new_uri="core://x",
        disclosure="When testing",
    )
    exchange(a, b)
    for m in (a, b):
        assert "node y" in await m.read("core://x/y")
        assert "(None" in await m.read("system://orphans")
    assert dump(a) == dump(b)


@two_machines
async def test_one_name_created_on_two_machines_keeps_both(a: Machine, b: Machine) -> None:
    na = await a.create("core://", "dup", "from a")
    nb = await b.create("core://", "dup", "from b")
    exchange(a, b)
    assert dump(a) == dump(b)
    idx = await a.read("system://index/core")
    assert na["memory_id"] in idx and nb["memory_id"] in idx
    for m in (a, b):
        assert "placement core://dup (concurrent placements)" in await m.read("system://conflicts")
    _, data = await a.call("read_memory", uri="core://dup")
    other = nb if data["memory_id"] == na["memory_id"] else na
    loser_uri = next(u for u in idx.split() if u.startswith("core://dup~"))
    _, moved = await a.call("move_memory", uri=loser_uri, new_uri="core://dup2")
    assert moved["memory_id"] == other["memory_id"]
    exchange(a, b)
    for m in (a, b):
        assert "(None" in await m.read("system://conflicts")
        assert {
            (await m.call("read_memory", uri=u))[1]["memory_id"]
            for u in ("core://dup", "core://dup2")
        } == {na["memory_id"], nb["memory_id"]}


WRITER = textwrap.dedent("""
    import sys, anyio
    from pathlib import Path
    from noon.config import Settings
    from noon.store.store import Store
    from noon.mcp.spec import ToolContext
    from noon.mcp.families import uri_family

    directory, worker, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    settings = Settings.from_env({}, dir=directory, node_id="shared", fsync=True)
    store = Store(settings)
    tools = {t.name: t for t in uri_family().tools}

    async def nothing():
        return None

    async def main():
        ctx = ToolContext(store, settings, "default", f"worker{worker}", nothing)
        for i in range(count):
            r = await tools["create_memory"].handler({"parent_uri": "core://log",
                "title": f"w{worker}-{i}", "content": f"entry {worker} {i}", "priority": 1,
                "disclosure": "d"}, ctx)
            assert not r["isError"], r["content"][0]["text"]  # the wire form
            r = await tools["update_memory"].handler({"uri": "core://log",
                "append": f"line {worker} {i}"}, ctx)
            assert not r["isError"], r["content"][0]["text"]
    anyio.run(main)
""")


@pytest.mark.integration
async def test_several_writer_processes_on_one_node_lose_nothing(tmp_path: Path) -> None:
    store, settings = open_store(tmp_path, "shared")
    async with Client(make_server(store, settings)) as client:
        s = Session(client)
        await s.create("core://", "log", "log:")
        workers, count = 3, 10
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(tmp_path), str(w), str(count)],
                cwd=Path(__file__).parents[2],
            )
            for w in range(workers)
        ]
        for p in procs:
            assert p.wait(timeout=120) == 0
        body = await s.read("core://log")
        for w in range(workers):
            for i in range(count):
                assert f"line {w} {i}\n" in body + "\n"
                assert f"core://log/w{w}-{i}" in body
        _, data = await s.call("read_memory", uri="core://log")
        assert data["conflicted"] is False


@two_machines
async def test_an_edit_that_lost_to_a_concurrent_delete_is_listed_and_restorable(
    a: Machine, b: Machine
) -> None:
    made = await a.create("core://", "doomed", "old text")
    exchange(a, b)
    await a.call("update_memory", uri="core://doomed", old_string="old", new_string="newer")
    await b.call("delete_memory", uri="core://doomed")
    exchange(a, b)
    assert dump(a) == dump(b)
    node_uri = f"system://node/{made['memory_id']}"
    for m in (a, b):
        assert node_uri in await m.read("system://conflicts")
        assert "newer text" in await m.read(node_uri)
    await b.call("move_memory", uri=node_uri, new_uri="core://restored", disclosure="d")
    exchange(a, b)
    for m in (a, b):
        body = await m.read("core://restored")
        assert "newer text" in body and "DELETED" not in body and "CONCURRENT" not in body
        assert "(None" in await m.read("system://conflicts")


async def test_namespaces_are_isolated(tmp_path: Path) -> None:
    s1, st1 = open_store(tmp_path, "n1", namespace="work")
    s2, st2 = open_store(tmp_path, "n1", namespace="home")
    async with Client(make_server(s1, st1)) as c1, Client(make_server(s2, st2)) as c2:
        work, home = Session(c1), Session(c2)
        await work.create("core://", "secret", "work only")
        await home.create("core://", "secret", "home only")
        assert "work only" in await work.read("core://secret")
        assert "home only" in await home.read("core://secret")
        _, found = await home.call("search_memory", query="work")
        assert found["results"] == []


@two_machines
async def test_remote_ops_update_the_graph_incrementally_and_a_vanished_shard_takes_its_ops(
    a: Machine, b: Machine
) -> None:
    await a.create("core://", "mine", "a's memory")
    await a.read("core://mine")
    await b.create("core://", "theirs", "b's memory")
    exchange(a, b)
    assert "b's memory" in await a.read("core://theirs")
    await b.call("update_memory", uri="core://theirs", append="more")
    exchange(a, b)
    seen: list[set[Any]] = []
    a.store.listeners.append(lambda changes: seen.append(changes.keys))
    assert "more" in await a.read("core://theirs")
    assert [len(keys) for keys in seen] == [1]  # the one edited element, not the graph
    # A replica shard that disappears takes its ops out of the read model: the graph follows.
    (a.dir / "b.jsonl").unlink()
    assert "not found" in await a.fail("read_memory", uri="core://theirs")
    assert "a's memory" in await a.read("core://mine")
    _, found = await a.call("search_memory", query="memory")
    assert [r["uri"] for r in found["results"]] == ["core://mine"]
