"""An idle daemon does not rescan its store every round: collection runs again only when a
shard file or the gate's inputs (members' reported frontiers, membership) changed, and then it
still collects what became collectable."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from noon.config import Settings
from noon.core.ops import Draft
from noon.store import collect
from noon.store.store import Store
from noond.collection import Collector
from noond.membership import Member
from noond.metrics import Metrics
from tests.harness.stores import plan_of


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    real = collect.collect_dir

    def counting(directory: Path, **kw: Any) -> Any:
        seen.append(kw)
        return real(directory, **kw)

    monkeypatch.setattr(collect, "collect_dir", counting)
    return seen


KEY = ("content", "default", "x")


def deleted_x(data: Path) -> Store:
    """``a``'s store: ``x`` written and deleted (collectable once b has seen it), then ``y``."""
    store = Store(Settings(dir=data, node_id="a", fsync=False))
    store.write(plan_of([Draft(KEY, {"text": "hello"})]))
    store.write(plan_of([Draft(KEY, None)]))
    store.write(plan_of([Draft(("content", "default", "y"), {"text": "after"})]))
    return store


def test_collection_reruns_only_when_files_or_gate_change(
    tmp_path: Path, calls: list[dict[str, Any]]
) -> None:
    data = tmp_path / "data"
    store = deleted_x(data)
    # On this timer a collection takes no time, so BUSY_SHARE never holds one back.
    collector = Collector(data, "a", tmp_path / "state.json", 1e9, Metrics(), timer=lambda: 0.0)
    b = Member("b", "127.0.0.1:1", heads={}, reported_at=time.time())

    first = collector.run([b], set())
    assert len(calls) == 1 and first.kept, "b never reported the shard: the tombstone stays"
    assert collector.run([b], set()) is first
    assert len(calls) == 1, "nothing changed: no rescan"

    b.heads, b.reported_at = {"a": 3}, time.time()  # b now holds everything a wrote
    done = collector.run([b], set())
    assert len(calls) == 2 and done.collected == 1
    assert not any(
        el == KEY for el in Store(Settings(dir=data, node_id="z", fsync=False)).fold.elements
    )

    collector.run([b], set())  # the rewrite changed the shard: one more scan, then quiet
    collector.run([b], set())
    assert len(calls) == 3

    store.write(lambda fold: [Draft(("content", "default", "z"), {"text": "new"})])
    collector.run([b], set())
    assert len(calls) == 4, "an append changes the shard's identity"


def test_a_collection_waits_out_nine_times_what_the_last_one_took(
    tmp_path: Path, calls: list[dict[str, Any]]
) -> None:
    """While a member catches up its report changes every round; the store is read in full
    at most once per ten times a collection lasts (noond.collection.BUSY_SHARE), and what
    became collectable meanwhile is collected once that time is up."""
    data = tmp_path / "data"
    deleted_x(data).close()
    clock = [100.0]

    def timer() -> float:
        clock[0] += 1.0  # each reading one second later: a collection lasts one second
        return clock[0]

    collector = Collector(data, "a", tmp_path / "state.json", 1e9, Metrics(), timer=timer)
    b = Member("b", "127.0.0.1:1", heads={}, reported_at=time.time())
    first = collector.run([b], set())
    assert len(calls) == 1 and first.kept
    b.heads, b.reported_at = {"a": 3}, time.time()  # collectable now, but too soon
    for _ in range(4):
        assert collector.run([b], set()) is first
    assert len(calls) == 1
    clock[0] += 9.0
    done = collector.run([b], set())
    assert len(calls) == 2 and done.collected == 1
