"""Fixtures of the search tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from noon.store.access import GraphService, service
from noon.store.store import Store
from tests.harness.uri import open_store


@pytest.fixture
def lexical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Store, GraphService]]:
    """A store searched by words only (``NOON_SEMANTIC=off``, whether or not the extra is
    installed), and its service; closed afterwards."""
    monkeypatch.setenv("NOON_SEMANTIC", "off")
    store, _ = open_store(tmp_path, "n1")
    try:
        yield store, service(store)
    finally:
        store.close()
