"""create_memory's duplicate hint is made while the new memory is fsync'd, on the read model as
the write found it: the same hints as one made after the fold, which holds the new memory."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from noon.config import Settings
from noon.store.readmodel import search
from noon.store.store import Store
from tests.harness.uri import Session, make_server

DUPLICATE = "Every morning the user drinks green tea, not coffee."


async def _hints(directory: Path, fsync: bool, memories: list[tuple[str, str]]) -> list[Any]:
    """The ``related`` of a create_memory of :data:`DUPLICATE` after ``memories`` (title,
    text) were created under ``core://``."""
    settings = Settings.from_env({}, dir=directory, node_id="laptop", fsync=fsync)
    store = Store(settings)
    try:
        async with Client(make_server(store, settings)) as client:
            s = Session(client)
            for title, text in memories:
                await s.create("core://", title, text)
            _, data = await s.call(
                "create_memory",
                parent_uri="core://",
                title="drinks",
                content=DUPLICATE,
                priority=1,
                disclosure="d",
            )
            return list(data["related"])
    finally:
        store.close()


TEA = ("tea", "The user drinks green tea every morning, never coffee.")


@pytest.mark.parametrize("fsync", [True, False])
async def test_the_hint_is_the_same_made_during_the_fsync_or_after(
    tmp_path: Path, fsync: bool
) -> None:
    found = await _hints(tmp_path, fsync, [TEA, ("deploy", "Deploys go through systemd units.")])
    assert found == ["core://tea"]


@pytest.mark.parametrize("fsync", [True, False])
async def test_the_hint_reads_as_many_other_memories_either_way(
    tmp_path: Path, fsync: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new memory, once folded, is the newest candidate: a hint made before its fold reads
    one candidate fewer, so an older duplicate just past the bound is left out both ways."""
    monkeypatch.setattr(search, "PROBE_CANDIDATES", 3)
    newer = [("a", "The user drinks water."), ("b", "Coffee is for guests.")]
    assert await _hints(tmp_path, fsync, [TEA, *newer]) == []
    monkeypatch.setattr(search, "PROBE_CANDIDATES", 4)
    assert await _hints(tmp_path / "again", fsync, [TEA, *newer]) == ["core://tea"]


async def test_the_hint_runs_while_the_fsync_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fsync of the new memory's batch waits until the hint has read its candidates: a
    hint made only after the fsync would leave the fsync waiting out its bound instead."""
    hinting = threading.Event()
    waited: list[bool] = []
    related = search.Search.related
    fsync = os.fsync

    def spy(self: search.Search, *args: Any, **kw: Any) -> list[search.Hit]:
        hinting.set()
        return related(self, *args, **kw)

    def fsync_after_the_hint(fd: int) -> None:
        if threading.current_thread().name.startswith("noon-fsync"):
            waited.append(hinting.wait(timeout=30))
            hinting.clear()
        fsync(fd)

    monkeypatch.setattr(search.Search, "related", spy)
    monkeypatch.setattr(os, "fsync", fsync_after_the_hint)
    assert await _hints(tmp_path, True, [TEA]) == ["core://tea"]
    assert waited == [True, True]  # the first memory's create and the duplicate's
