"""noond folds what it receives into the machine's read model (noond/fold.py): a real fresh noond
catches up from a real peer, then a real ``noon serve`` answers its first call without folding
anything (the read model's generation and cursors are where noond left them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.core import generate
from bench.kg_latency import noon_client
from bench.noond_mesh import read_model_holds, read_model_state
from tests.harness.mesh import Node, Pki, wait_until

pytestmark = pytest.mark.integration

OPS = 4000


def shard_sizes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in directory.glob("*.jsonl")}


def source(spawn: list[Node], tmp_path: Path, pki: Pki) -> tuple[Node, dict[str, int]]:
    """A node holding OPS ops of four authors, signed as their machines would have."""
    src = Node("src", tmp_path, pki)
    spawn.append(src)
    generate(src.dir, OPS)
    authors = [p.name.removesuffix(".jsonl") for p in src.dir.glob("*.jsonl")]
    for author in authors:
        pki.sign_shard(src.dir / f"{author}.jsonl", author)
    pki.know_signers(src.dir, *authors)
    return src, shard_sizes(src.dir)


def test_first_session_after_a_catch_up_folds_nothing(spawn, tmp_path, pki):
    src, want = source(spawn, tmp_path, pki)
    fresh = Node("fresh", tmp_path, pki)
    spawn.append(fresh)
    src.start([fresh])
    fresh.start([src])
    wait_until(
        lambda: shard_sizes(fresh.dir) == want and read_model_holds(fresh.dir, want),
        what="noond to fold every shard it pulled",
    )
    generation, cursors = read_model_state(fresh.dir)
    assert generation > 0
    assert fresh.metric("noond_readmodel_folds_total", 'result="current"') >= 1

    client = noon_client(fresh.dir, fsync=False, node="fresh", tools="uri")
    try:
        answer = client.call("search_memory", {"query": "memory text", "limit": 5})
    finally:
        client.close()
    assert not answer.get("isError"), answer
    hits = answer["structuredContent"]["results"]
    assert len(hits) == 5  # generated memories, found in what noond folded
    # The session read what noond had committed: it folded nothing itself.
    assert read_model_state(fresh.dir) == (generation, cursors)


def test_without_noond_folding_the_first_session_folds(spawn, tmp_path, pki):
    """The control: with NOOND_FOLD=false the read model stays behind the shards noond
    stored, and the first session is the one that folds them."""
    src, want = source(spawn, tmp_path, pki)
    fresh = Node("fresh", tmp_path, pki, env={"NOOND_FOLD": "false"})
    spawn.append(fresh)
    src.start([fresh])
    fresh.start([src])
    wait_until(lambda: shard_sizes(fresh.dir) == want, what="the fresh node to hold every shard")
    generation, cursors = read_model_state(fresh.dir)
    assert not all(cursors.get(n) == s for n, s in want.items())

    client = noon_client(fresh.dir, fsync=False, node="fresh", tools="uri")
    try:
        answer = client.call("search_memory", {"query": "memory text", "limit": 5})
    finally:
        client.close()
    assert len(answer["structuredContent"]["results"]) == 5
    after, folded = read_model_state(fresh.dir)
    assert after > generation
    assert all(folded.get(n) == s for n, s in want.items())
