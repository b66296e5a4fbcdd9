"""The URI tools through a real ``noon serve`` over stdio, on a large store.

    python -m bench.uri_latency [--memories 50000] [--calls 40]

Writes the shards of N memories (100 topics with N/100 children each, ~200 characters of
Zipf-worded text; two ops each), measures a fresh node's catch-up fold of them into the
machine's read model (search documents included), then starts ``noon serve --tools uri`` on
that read model: its first answer (process start to the first read_memory result), and p50 /
p99 latency of read_memory, search_memory and update_memory, beside an MCP ping. Searches are
two words drawn as the text draws them (so most hold a word found in most memories: the worst
case for ranking) or two words of the vocabulary's long tail.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from bench.core import catch_up_fold
from bench.shards import ShardWriter, ops_in
from bench.stats import percentiles, rss_mib
from noon.config import Settings
from noon.core.elements import content_key, edge_key
from noon.core.ops import Draft
from noon.graph.plan import edge_val
from noon.graph.uri import new_node_id, root
from noon.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
WORDS = (
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "deploy",
    "tea",
    "systemd",
    "memory",
    "agent",
    "user",
    "project",
    "noon",
    "graph",
    "shard",
    "gossip",
)
NS = "default"
VOCAB = [*WORDS, *(f"term{i}" for i in range(5000))]
ZIPF = [1 / (rank + 1) for rank in range(len(VOCAB))]
"""Memory text draws words Zipf-distributed from about 5000 words, as prose does."""
_CUMULATIVE = list(accumulate(ZIPF))
"""``random.choices`` sums the weights on every call; summed once, the same draws cost a
fraction (writing 1M ops of text took minutes of summing)."""


def text_of(rnd: random.Random, k: int) -> str:
    return " ".join(rnd.choices(VOCAB, cum_weights=_CUMULATIVE, k=k))


def rare_words(rnd: random.Random, k: int) -> str:
    """Words drawn evenly from the long tail of the vocabulary: each is in few memories."""
    return " ".join(rnd.choices(VOCAB[len(WORDS) :], k=k))


TOPICS = 100


def build_shards(directory: Path, n: int) -> None:
    """Shards of ``n`` memories under ``TOPICS`` topics of ``core://`` (one batch per topic),
    not yet folded."""
    writer = ShardWriter(directory, "bench")
    rnd = random.Random(n)
    per = max(1, n // TOPICS)
    for t in range(TOPICS):
        topic = new_node_id()
        drafts = [
            Draft(content_key(NS, topic), {"text": f"Topic {t}: " + text_of(rnd, 20)}),
            Draft(edge_key(NS, root("core"), f"topic{t}"), edge_val(topic, 1, "when t")),
        ]
        for i in range(per):
            node = new_node_id()
            text = f"Memory {t}/{i}: " + text_of(rnd, 30)
            drafts.append(Draft(content_key(NS, node), {"text": text}))
            drafts.append(
                Draft(
                    edge_key(NS, topic, f"m{i}"),
                    edge_val(node, 2, f"When {rnd.choice(WORDS)} comes up"),
                )
            )
        writer.batch(drafts)


def build(directory: Path, n: int) -> None:
    """A store of ``n`` memories (see :func:`build_shards`) with its read model folded, as every
    session but the machine's first finds it."""
    build_shards(directory, n)
    Store(Settings.from_env({}, dir=directory, node_id="bench", fsync=False)).close()


def server_pid() -> int:
    """The ``noon serve`` child this process started (the SDK's stdio client hides its pid)."""
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"serve" in cmd and b"noon" in cmd:
                return int(pid)
    raise RuntimeError("noon serve child not found")


def serve_params(directory: Path, **env: str) -> StdioServerParameters:
    """``noon serve --tools uri`` over stdio on ``directory`` as node ``bench``, with this
    process's environment and ``env``."""
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "noon",
            "serve",
            "--tools",
            "uri",
            "--node-id",
            "bench",
            "--dir",
            str(directory),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        cwd=str(ROOT),
    )


async def session(directory: Path, n: int, calls: int = 40) -> dict[str, Any]:
    """A new session on a store of ``n`` memories: time to the first read_memory answer (from
    process start), then p50/p99 of each tool over ``calls`` calls, and the server's memory."""
    params = serve_params(directory)
    rnd = random.Random(1)
    per = max(1, n // TOPICS)
    out: dict[str, Any] = {}
    start = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        r = await client.call_tool("read_memory", {"uri": "core://topic0/m0"})
        assert not r.is_error, r.content
        out["first_answer_s"] = time.perf_counter() - start

        async def timed(name: str, args: dict[str, Any]) -> float:
            t0 = time.perf_counter()
            res = await client.call_tool(name, args)
            assert not res.is_error, res.content
            return (time.perf_counter() - t0) * 1000

        def uri() -> dict[str, Any]:
            return {"uri": f"core://topic{rnd.randrange(TOPICS)}/m{rnd.randrange(per)}"}

        if calls:
            pings = []
            for _ in range(calls):
                t0 = time.perf_counter()
                with warnings.catch_warnings():  # ping is legacy-only; this client is legacy
                    warnings.simplefilter("ignore")
                    await client.send_ping()
                pings.append((time.perf_counter() - t0) * 1000)
            out["ping"] = percentiles(pings)
        # Reads run twice: while the search index still warms up in the background, and after
        # searches (which finish any warm-up left).
        runs: list[tuple[str, str, Callable[[], dict[str, Any]]]] = [
            ("read_memory", "read_memory", uri),
            ("search_memory", "search_memory", lambda: {"query": text_of(rnd, 2)}),
            ("search_memory_rare", "search_memory", lambda: {"query": rare_words(rnd, 2)}),
            ("update_memory", "update_memory", lambda: {**uri(), "append": "more"}),
            ("read_memory_warm", "read_memory", uri),
        ]
        for label, tool, make in runs if calls else ():
            out[label] = {
                "first_ms": await timed(tool, make()),
                **percentiles([await timed(tool, make()) for _ in range(calls)]),
            }
        out["rss_mib"] = rss_mib(server_pid())
    return out


def run(memories: int, calls: int) -> dict[str, Any]:
    """A fresh node's catch-up fold of ``memories`` memories, then a session on the read model
    it left: its first answer and the tools' latency."""
    with tempfile.TemporaryDirectory(prefix="noon-bench-uri-") as d:
        t0 = time.perf_counter()
        build_shards(Path(d), memories)
        built = time.perf_counter() - t0
        fold = catch_up_fold(Path(d))
        return {
            "memories": memories,
            "ops": ops_in(Path(d)),
            "build_s": built,
            "catch_up": fold,
            **anyio.run(session, Path(d), memories, calls),
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=50_000)
    ap.add_argument("--calls", type=int, default=40)
    args = ap.parse_args()
    print(json.dumps(run(args.memories, args.calls), indent=1))


if __name__ == "__main__":
    main()
