"""The semantic model loads once no search runs: the first search of a session asks for it and
ranks by words meanwhile, and the load (numpy's import and the weights) does not share the
interpreter with that search. A search that does not end holds the load back at most
``embedder.QUIET_S``, and the log says the model loaded beside it. Either way semantic search
turns on. A stand-in package stands for the model, so these run with or without the extra; each
test waits on a signal the code gives (a thread waiting in ``SEARCHES``, the loading thread's
end), never on a moment."""

from __future__ import annotations

import importlib.machinery
import logging
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from noon.mcp.uri_read import search as search_memory
from noon.store.access import GraphService, service
from noon.store.readmodel import embedder, search, vectorizer
from noon.store.readmodel.embedder import DIMENSIONS, Embedder
from noon.store.readmodel.running import SEARCHES
from tests.harness.texts import write_texts
from tests.harness.uri import open_store

pytest.importorskip("numpy")  # the model's rows; the stand-in needs nothing else

SIGNAL_S = 60.0
"""How long a test waits for the code's signal before it fails (never a synchronisation)."""


class StandIn:
    """The package's model: says when it is made (the load's costly part), one unit row a text."""

    made = threading.Event()

    def __init__(self, **_options: Any) -> None:
        StandIn.made.set()

    def encode(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * (DIMENSIONS - 1) for _ in texts]


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Embedder:
    """This process's model, fresh, its package the stand-in."""
    fake = types.ModuleType(embedder.PACKAGE)
    fake.__spec__ = importlib.machinery.ModuleSpec(embedder.PACKAGE, None)
    fake.USE = StandIn  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, embedder.PACKAGE, fake)
    limits = types.ModuleType("threadpoolctl")
    limits.threadpool_limits = lambda *_a, **_k: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "threadpoolctl", limits)
    monkeypatch.delenv("NOON_SEMANTIC", raising=False)
    StandIn.made.clear()
    fresh = Embedder()
    for module in (embedder, search, vectorizer):
        monkeypatch.setattr(module, "MODEL", fresh)
    return fresh


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[GraphService]:
    store, _ = open_store(tmp_path, "n1")
    try:
        s = service(store)
        write_texts(s, "default", {"pottery": "I take pottery classes on Tuesdays."})
        yield s
    finally:
        store.close()


def loaded(model: Embedder) -> bool:
    """The loading thread ended (its signal); whether the model is ready."""
    loading = model._loading
    assert loading is not None, "nothing started the load"
    loading.join(SIGNAL_S)
    assert not loading.is_alive(), f"the load did not end within {SIGNAL_S} s"
    return model.ready


def ranking(svc: GraphService) -> str:
    _, data = svc.read(lambda s: search_memory(s, "default", "pottery", None, 5))
    assert [r["uri"] for r in data["results"]] == ["core://pottery"]
    return str(data["ranking"])


def test_the_load_waits_for_the_search_that_asked_for_it_then_search_is_hybrid(
    model: Embedder, svc: GraphService
) -> None:
    seen: dict[str, bool] = {}

    def accept(node: str) -> bool:
        if not seen:  # inside the search, which has asked for the model
            seen["waits"] = SEARCHES.changed(lambda: SEARCHES.waiting == 1, SIGNAL_S)
            seen["made"] = StandIn.made.is_set()
        return True

    found = svc.read(lambda s: s.search.search("default", "pottery", 5, accept, hybrid=True))
    assert not found.semantic and len(found.hits) == 1  # by words while the model loads
    assert seen == {"waits": True, "made": False}  # the load waited for this very search
    assert loaded(model) and StandIn.made.is_set()
    assert ranking(svc) == "hybrid"


def test_a_search_that_does_not_end_holds_the_load_back_a_bounded_time_and_it_is_said(
    model: Embedder,
    svc: GraphService,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(embedder, "QUIET_S", 0.0)  # the bound, reached at once
    SEARCHES.begin()  # a search that runs on through the load, and asks for the model
    try:
        with caplog.at_level(logging.INFO, logger="noon.search"):
            model.load_in_background()
            assert loaded(model)
        said = [r.getMessage() for r in caplog.records if "loads beside a search" in r.getMessage()]
        assert said == [
            "the semantic model loads beside a search running for over 0 s (it waits for no "
            "search to run, at most that long)"
        ]
    finally:
        SEARCHES.end()
    assert ranking(svc) == "hybrid"
