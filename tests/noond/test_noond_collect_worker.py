"""A large store is collected in a process of its own (noond/collect_worker.py): the same
removal and the same report as inside noond, and a failure there raised here with its errno."""

from __future__ import annotations

import errno
import shutil
import time
from pathlib import Path

import pytest

from noon.config import Settings
from noon.core.ops import Draft
from noon.store.collect import Gate
from noon.store.store import Store
from noond.collect_worker import APART_BYTES, collect
from tests.harness.stores import plan_of

pytestmark = pytest.mark.integration


def deleted_and_kept(data: Path) -> None:
    """Two deleted elements of ``a``: one every member saw deleted, one ``b`` never saw."""
    store = Store(Settings(dir=data, node_id="a", fsync=False))
    for name in ("gone", "kept"):
        key = ("content", "default", name)
        store.write(plan_of([Draft(key, {"text": "deleted text"})]))
        store.write(plan_of([Draft(key, None)]))
    store.write(plan_of([Draft(("content", "default", "y"), {"text": "after"})]))
    store.close()


def test_a_collection_apart_removes_and_reports_what_one_inside_does(tmp_path: Path) -> None:
    inside, apart = tmp_path / "inside", tmp_path / "apart"
    deleted_and_kept(inside)
    shutil.copytree(inside, apart)
    gate = Gate(
        reports={"b": {"a": 2}},  # b saw the first element's deletion, not the second's
        admitted=frozenset({"b"}),
        excluded=frozenset(),
        retired=None,
        away=frozenset(),
    )
    here = collect(inside, "a", gate, 0)
    t0 = time.monotonic()
    there = collect(apart, "a", gate, APART_BYTES)
    assert time.monotonic() - t0 < 120
    assert there == here
    assert here.collected == 1 and [k for k, _ in here.kept] == [("content", "default", "kept")]
    assert (apart / "a.jsonl").read_bytes() == (inside / "a.jsonl").read_bytes()


def test_a_failure_apart_keeps_its_errno(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_bytes(b"")
    gate = Gate({}, frozenset(), frozenset(), None, frozenset())
    with pytest.raises(OSError) as caught:
        collect(not_a_dir, "a", gate, APART_BYTES)
    assert caught.value.errno == errno.ENOTDIR
