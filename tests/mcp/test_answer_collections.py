"""A serving process builds a large answer without a cyclic collection in its middle
(``noon.core.gcpause.sized_for_answers``): the MCP SDK validates and dumps a result into new
dictionaries and lists before it writes it, and a young collection among them moved them all to
older generations, which then walked them again."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import mcp.types as types
import pytest
from mcp_types import methods

from noon.core.gcpause import ANSWER_OBJECTS, sized_for_answers
from noon.kg.text import pretty
from noon.mcp.spec import tool_text
from tests.harness.mcp import serve_env

ENTITIES = 10_000


@pytest.fixture
def threshold() -> Iterator[None]:
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _collections_answering(graph: dict[str, Any]) -> int:
    """Collections set off while the SDK shapes and writes read_graph's result for ``graph``
    (as its server does: the protocol's surface validated and dumped, then the response's
    JSON)."""
    result = tool_text(pretty(graph), graph)
    assert isinstance(result, dict)
    seen: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.collect()  # every generation's count starts from nothing
    gc.callbacks.append(count)
    try:
        dumped = methods.serialize_server_result("tools/call", "2025-11-25", result)
        types.JSONRPCResponse(jsonrpc="2.0", id=1, result=dumped).model_dump_json(by_alias=True)
        del dumped
    finally:
        gc.callbacks.remove(count)
    return len(seen)


def _graph() -> dict[str, Any]:
    entities = [
        {"name": f"e{i}", "entityType": "thing", "observations": [f"fact {i}", f"note {i}"]}
        for i in range(ENTITIES)
    ]
    return {"entities": entities, "relations": []}


@pytest.mark.usefixtures("threshold")
def test_a_large_answer_sets_off_no_collection() -> None:
    graph = _graph()
    gc.set_threshold(700, 10, 10)  # Python's default
    assert _collections_answering(graph) > 10
    sized_for_answers()
    assert gc.get_threshold() == (ANSWER_OBJECTS, 10, 10)
    assert _collections_answering(graph) == 0


PROBE = """
import gc
import sys

import anyio

anyio.run = lambda *args, **kwargs: print("threshold", *gc.get_threshold())
from noon.cli import main

main(["serve", "--tools", "kg", "--dir", sys.argv[1], "--node-id", "probe"])
"""


@pytest.mark.integration
def test_noon_serve_serves_sized_for_answers(tmp_path: Any) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        env=serve_env(),
        timeout=60,
        check=True,
    ).stdout
    assert f"threshold {ANSWER_OBJECTS} 10 10" in out
