"""Latency of the URI tools through a real ``noon serve`` over stdio, on a large store.

    python bench/uri_latency.py 10000 100000

For each size: builds a store of N memories (100 topics with N/100 children each, ~200 chars
of text), then starts ``noon serve --tools uri`` and measures the first answer of a new session
(process start to the first read_memory result, snapshot present, as for every session after
the first) and the median / p95 latency of read_memory, search_memory and update_memory.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from noon.config import Settings
from noon.core.ops import Draft
from noon.graph.plan import edge_val
from noon.graph.uri import new_node_id, root
from noon.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
WORDS = (
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "deploy", "tea", "systemd",
    "memory", "agent", "user", "project", "noon", "graph", "shard", "gossip",
)
NS = "default"
VOCAB = [*WORDS, *(f"term{i}" for i in range(5000))]
ZIPF = [1 / (rank + 1) for rank in range(len(VOCAB))]
"""Memory text draws words Zipf-distributed from about 5000 words, as prose does."""


def text_of(rnd: random.Random, k: int) -> str:
    return " ".join(rnd.choices(VOCAB, weights=ZIPF, k=k))


def build(directory: Path, n: int) -> None:
    settings = Settings.from_env({}, dir=directory, node_id="bench", fsync=False)
    store = Store(settings)
    rnd = random.Random(n)
    topics = 100
    per = max(1, n // topics)
    for t in range(topics):
        topic = new_node_id()
        drafts = [Draft(("content", NS, topic), {"text": f"Topic {t}: " + text_of(rnd, 20)}),
                  Draft(("edge", NS, root("core"), f"topic{t}"), edge_val(topic, 1, "when t"))]
        for i in range(per):
            node = new_node_id()
            text = f"Memory {t}/{i}: " + text_of(rnd, 30)
            drafts.append(Draft(("content", NS, node), {"text": text}))
            drafts.append(Draft(("edge", NS, topic, f"m{i}"),
                                edge_val(node, 2, f"When {rnd.choice(WORDS)} comes up")))
        store.write(lambda fold, d=drafts: d, client="bench")
    store.save_snapshot()


async def session(directory: Path, n: int) -> dict[str, float]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "noon", "serve", "--tools", "uri", "--dir", str(directory), "--node-id",
              "bench"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    rnd = random.Random(1)
    per = max(1, n // 100)
    out: dict[str, float] = {}
    start = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        r = await client.call_tool("read_memory", {"uri": "core://topic0/m0"})
        assert not r.is_error, r.content
        out["first_answer_s"] = time.perf_counter() - start

        async def timed(name: str, args: dict) -> float:
            t0 = time.perf_counter()
            res = await client.call_tool(name, args)
            assert not res.is_error, res.content
            return (time.perf_counter() - t0) * 1000

        def read_args() -> dict:
            return {"uri": f"core://topic{rnd.randrange(100)}/m{rnd.randrange(per)}"}

        # Reads run twice: while the search index still warms up in the background, and after
        # searches (which finish any warm-up left).
        for label, tool, make in (
            ("read_memory", "read_memory", read_args),
            ("search_memory", "search_memory", lambda: {"query": text_of(rnd, 2)}),
            ("update_memory", "update_memory", lambda: {**read_args(), "append": "more"}),
            ("read_memory_warm", "read_memory", read_args),
        ):
            first = await timed(tool, make())
            samples = sorted([await timed(tool, make()) for _ in range(40)])
            out[f"{label}_first_ms"] = first
            out[f"{label}_median_ms"] = statistics.median(samples)
            out[f"{label}_p95_ms"] = samples[int(len(samples) * 0.95) - 1]
    return out


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000]
    for n in sizes:
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            build(Path(d), n)
            built = time.perf_counter() - t0
            res = anyio.run(session, Path(d), n)
            print(f"n={n} build={built:.1f}s " + " ".join(f"{k}={v:.1f}" for k, v in
                                                          res.items()), flush=True)


if __name__ == "__main__":
    main()
