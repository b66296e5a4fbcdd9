"""A semantic model that does not load (its package damaged, its weights missing): search stays
lexical and every answer says so, the worker stops, ``noon reindex`` says the index was not
rebuilt. A stand-in package fails the load, so these run with or without the extra."""

from __future__ import annotations

import importlib.machinery
import logging
import sys
import types
from functools import partial
from pathlib import Path

import pytest

from noon.app.recall import recall as recall_of
from noon.mcp.uri_read import search as search_memory
from noon.mcp.uri_recall import rendered
from noon.store.access import service
from noon.store.readmodel import embedder, search, vectorizer
from noon.store.readmodel.embedder import Embedder, ModelUnavailable
from tests.harness.mesh import noon_command, subprocess_env
from tests.harness.texts import write_texts
from tests.harness.uri import open_store

BROKEN = """
def USE(**_options):
    raise OSError("weights file missing")
"""
"""The stand-in package's code: importing it works, loading its model fails."""
LOAD_S = 60.0
"""Bound on the background load's failure (an import and a raise)."""


@pytest.fixture
def broken(monkeypatch: pytest.MonkeyPatch) -> Embedder:
    """This process's model, fresh, with a package that fails to load it."""
    fake = types.ModuleType(embedder.PACKAGE)
    fake.__spec__ = importlib.machinery.ModuleSpec(embedder.PACKAGE, None)
    exec(BROKEN, fake.__dict__)
    monkeypatch.setitem(sys.modules, embedder.PACKAGE, fake)
    monkeypatch.delenv("NOON_SEMANTIC", raising=False)
    fresh = Embedder()
    for module in (embedder, search, vectorizer):
        monkeypatch.setattr(module, "MODEL", fresh)
    return fresh


def test_a_model_that_does_not_load_leaves_search_lexical_and_every_answer_says_so(
    tmp_path: Path, broken: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    store, _ = open_store(tmp_path, "n1")
    try:
        svc = service(store)
        write_texts(svc, "default", {"pottery": "I take pottery classes on Tuesdays."})
        assert embedder.available()  # installed: the tool texts said hybrid at start
        with caplog.at_level(logging.ERROR, logger="noon.search"):
            text, data = svc.read(lambda s: search_memory(s, "default", "pottery", None, 5))
            assert data["ranking"] == "lexical"  # the first search starts the load
            assert [r["uri"] for r in data["results"]] == ["core://pottery"]
            assert "Ranked by words only: " in text
            loading = broken._loading
            assert loading is not None
            loading.join(LOAD_S)
            assert not loading.is_alive(), f"the load did not end within {LOAD_S} s"
            assert broken.failure is not None and not broken.ready
            said = (
                "Ranked by words only: the semantic model did not load in this process "
                f"({broken.failure})."
            )
            for query in ("pottery", "Which hobby do I have?"):  # found by words; not found
                text, data = svc.read(
                    partial(search_memory, ns="default", query=query, domain=None, limit=5)
                )
                assert data["ranking"] == "lexical"
                assert text.endswith(said), text
            assert [r["uri"] for r in data["results"]] == []
            text, data = rendered(recall_of(svc, "default", "My pottery class is on Tuesday", 5))
            assert data["ranking"] == "lexical" and "did not load" in text
            assert [r["uri"] for r in data["results"]] == ["core://pottery"]
        failures = [r for r in caplog.records if "did not load" in r.getMessage()]
        assert len(failures) == 1  # tried once in the process, said once
        assert not embedder.available()
        assert vectorizer.describe() == "lexical, not semantic"
        assert not store.vectorizer.enabled
        with pytest.raises(ModelUnavailable):
            store.vectorizer.catch_up()
    finally:
        store.close()


def test_turned_off_the_answers_add_nothing_to_the_tool_texts(
    tmp_path: Path, broken: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOON_SEMANTIC", "off")
    store, _ = open_store(tmp_path, "n1")
    try:
        svc = service(store)
        write_texts(svc, "default", {"pottery": "I take pottery classes on Tuesdays."})
        text, data = svc.read(lambda s: search_memory(s, "default", "pottery", None, 5))
        assert data["ranking"] == "lexical" and "Ranked by words only" not in text
        assert broken._loading is None  # never tried
    finally:
        store.close()


@pytest.mark.integration
def test_reindex_says_the_semantic_index_was_not_rebuilt_when_the_model_does_not_load(
    tmp_path: Path,
) -> None:
    package = tmp_path / "site" / embedder.PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(BROKEN)
    store, _ = open_store(tmp_path / "store", "n1")
    write_texts(service(store), "default", {"a": "The train leaves at nine."})
    store.close()
    env = subprocess_env(NOON_NODE_ID="n1")
    env["PYTHONPATH"] = str(tmp_path / "site") + ":" + env["PYTHONPATH"]
    env.pop("NOON_SEMANTIC", None)
    run = noon_command("reindex", "--quiet", "--dir", str(tmp_path / "store"), env=env)
    assert run.returncode == 1, run.stderr
    assert "read model rebuilt: " in run.stdout
    assert "semantic index rebuilt" not in run.stdout
    assert "semantic index not rebuilt: the model did not load (" in run.stderr
    assert "weights file missing" in run.stderr or "ModuleNotFoundError" in run.stderr
