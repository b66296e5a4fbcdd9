"""The op log op by op, as ``noon log`` and ``noon history`` print it (:mod:`noon.app.history`):
every op held about one memory (named by a URI, by its id, or by the URI it had before it was
deleted) or one entity, newest first; a namespace's newest ops, by machine and by client."""

from __future__ import annotations

from pathlib import Path

import pytest

from noon.app import history, memories
from noon.app.actor import Actor
from noon.core.elements import CONTENT, EDGE
from noon.core.ops import Op, OpId
from noon.errors import NotFound
from noon.graph.plan import MemoryNotFound
from noon.kg import plan as kg_plan
from noon.store.access import GraphService, kg_mutate, service
from tests.harness.stores import open_store

NS = "default"
WHEN = "When drinks come up"


def who(client: str) -> Actor:
    return Actor(NS, client, "mcp")


def about(svc: GraphService, uri: str, limit: int = 100) -> list[Op]:
    return svc.read(lambda s: history.ops_about(s.graph, NS, uri, limit))


def ids(ops: list[Op]) -> list[OpId]:
    return [op.id for op in ops]


def is_about(op: Op, node: str) -> bool:
    """The memory's text, or a placement of it (a tombstone names no child)."""
    return op.el == (CONTENT, NS, node) or (
        op.el[0] == EDGE and (op.val is None or op.val.get("child") == node)
    )


def test_every_op_about_a_memory_newest_first_by_uri_by_id_and_once_deleted(
    tmp_path: Path,
) -> None:
    svc = service(open_store(tmp_path, "laptop"))
    tea = memories.create(svc, who("claude-code"), "core://", "tea", "Green tea.", 0, WHEN)
    memories.create(svc, who("codex"), "core://", "coffee", "Black coffee.", 0, WHEN)
    memories.replace_text(svc, who("cursor"), "core://tea", "Green tea, no sugar.", None)

    ops = about(svc, "core://tea")
    assert ids(ops) == ids(about(svc, f"system://node/{tea.node}"))
    assert [op.order for op in ops] == sorted((op.order for op in ops), reverse=True)
    assert all(is_about(op, tea.node) for op in ops), ops
    assert ops[0].by == "cursor" and {op.by for op in ops} == {"cursor", "claude-code"}
    assert ids(about(svc, "core://tea", limit=1)) == ids(ops[:1])
    assert ids(about(svc, "core://tea", limit=0)) == ids(ops[:1])  # at least one

    memories.delete(svc, who("codex"), "core://tea", False)
    after = about(svc, "core://tea")  # the URI names nothing now: the memory it named last
    deleted = len(after) - len(ops)
    assert deleted >= 1 and ids(after[deleted:]) == ids(ops)
    assert all(op.val is None and op.by == "codex" for op in after[:deleted])


def test_every_op_about_an_entity_and_what_was_never_written(tmp_path: Path) -> None:
    store = open_store(tmp_path, "laptop")
    svc = service(store)
    alice = {"name": "Alice", "entityType": "person", "observations": ["likes tea"]}
    kg_mutate(store, NS, kg_plan.create_entities, [alice], "opencode")
    more = [{"entityName": "Alice", "contents": ["lives in Oslo"]}]
    kg_mutate(store, NS, kg_plan.add_observations, more, "codex")

    ops = about(svc, "kg://Alice")
    assert ops[0].by == "codex" and {op.by for op in ops} == {"opencode", "codex"}
    assert all(op.el[2] == "Alice" for op in ops), ops
    with pytest.raises(NotFound, match="no entity named 'Bob' was ever written here"):
        about(svc, "kg://Bob")
    with pytest.raises(MemoryNotFound) as never:
        about(svc, "core://nowhere")
    assert isinstance(never.value, NotFound)


def test_the_newest_ops_of_a_namespace_by_machine_and_by_client(tmp_path: Path) -> None:
    laptop = service(open_store(tmp_path, "laptop"))
    desktop = service(open_store(tmp_path, "desktop"))
    memories.create(laptop, who("claude-code"), "core://", "tea", "Green tea.", 0, WHEN)
    memories.create(desktop, who("cursor"), "core://", "coffee", "Black coffee.", 0, WHEN)

    def newest(limit: int, node: str | None = None, client: str | None = None) -> list[OpId]:
        return ids(laptop.read(lambda s: history.newest_ops(s.graph, NS, limit, node, client)))

    everything = laptop.read(lambda s: history.newest_ops(s.graph, NS, 100))
    assert {op.node for op in everything} == {"laptop", "desktop"}
    assert everything[0].node == "desktop"  # written last
    assert newest(100, node="desktop") == [op.id for op in everything if op.node == "desktop"]
    mine = [op.id for op in everything if op.by == "claude-code"]
    assert mine and newest(100, client="claude-code") == mine
    assert newest(1) == ids(everything[:1]) == newest(0)
