"""``noon web``'s search ranks as ``search_memory`` does: the same memories in the same order,
the neighbour step included (a memory lifted by the hit written two before it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from noon.store.access import service
from noon.store.readmodel import search
from tests.harness.texts import ANSWER_TWO_AFTER, ranked, write_turns
from tests.harness.web import page_server


async def test_the_page_search_ranks_as_search_memory_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOON_SEMANTIC", "off")  # the ranking under test is the same either way
    async with page_server(tmp_path) as page:
        svc = service(page.store)
        write_turns(svc, "default", ANSWER_TWO_AFTER)
        query = "married in Porto"
        tool = ranked(svc, query)
        _, hits = await page.get("/api/search", q=query, ns="default")
        assert [h["uri"] for h in hits] == tool
        assert tool[:2] == ["core://asked", "core://answer"]  # lifted by the neighbour step
        monkeypatch.setattr(search, "SPREAD", ())
        _, plain = await page.get("/api/search", q=query, ns="default")
        assert [h["uri"] for h in plain] == ranked(svc, query) != tool
