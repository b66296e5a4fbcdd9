"""Latency of the URI tools through a real ``noon serve`` over stdio, on a large store.

    python -m bench.uri_latency [--memories 10000] [--first-answer-ops 100000]

Builds a store of N memories (100 topics with N/100 children each, ~200 chars of text), starts
``noon serve --tools uri`` and measures p50 / p99 latency of read_memory, search_memory and
update_memory. Then, on a store of about M ops, the first answer of a new session (process start
to the first read_memory result) on the machine's read model (every session after the first)
and without it (the first session folds every shard).
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
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from bench.stats import percentiles, rss_mib
from noon.config import Settings
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
        drafts = [
            Draft(("content", NS, topic), {"text": f"Topic {t}: " + text_of(rnd, 20)}),
            Draft(("edge", NS, root("core"), f"topic{t}"), edge_val(topic, 1, "when t")),
        ]
        for i in range(per):
            node = new_node_id()
            text = f"Memory {t}/{i}: " + text_of(rnd, 30)
            drafts.append(Draft(("content", NS, node), {"text": text}))
            drafts.append(
                Draft(
                    ("edge", NS, topic, f"m{i}"),
                    edge_val(node, 2, f"When {rnd.choice(WORDS)} comes up"),
                )
            )
        store.write(lambda fold, d=drafts: d, client="bench")


def _server_pid() -> int:
    """The ``noon serve`` child this process started (the SDK's stdio client hides its pid)."""
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"serve" in cmd and b"noon" in cmd:
                return int(pid)
    raise RuntimeError("noon serve child not found")


async def session(directory: Path, n: int, calls: int = 40, shared: bool = True) -> dict[str, Any]:
    """A new session on a store of ``n`` memories: time to the first read_memory answer (from
    process start), then p50/p99 of each tool over ``calls`` calls, and the server's memory."""
    if not shared:  # the first session on this machine: it folds every shard first
        for f in (directory / ".noon").glob("readmodel.sqlite3*"):
            f.unlink()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "noon",
            "serve",
            "--tools",
            "uri",
            "--dir",
            str(directory),
            "--node-id",
            "bench",
        ],
        env=env,
        cwd=str(ROOT),
    )
    rnd = random.Random(1)
    per = max(1, n // 100)
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
            return {"uri": f"core://topic{rnd.randrange(100)}/m{rnd.randrange(per)}"}

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
            ("update_memory", "update_memory", lambda: {**uri(), "append": "more"}),
            ("read_memory_warm", "read_memory", uri),
        ]
        for label, tool, make in runs if calls else ():
            out[label] = {
                "first_ms": await timed(tool, make()),
                **percentiles([await timed(tool, make()) for _ in range(calls)]),
            }
        out["rss_mib"] = rss_mib(_server_pid())
    return out


def ops_in(directory: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in directory.glob("*.jsonl"))


def run(memories: int, first_answer_ops: list[int], calls: int) -> dict[str, Any]:
    """Tool latency at ``memories`` memories, then a new session's first answer on stores of
    about each of ``first_answer_ops`` ops with and without the machine's read model."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        build(Path(d), memories)
        out["tools"] = {
            "memories": memories,
            "ops": ops_in(Path(d)),
            "build_s": time.perf_counter() - t0,
            **anyio.run(session, Path(d), memories, calls),
        }
    out["first_answer"] = {}
    for size in first_answer_ops:
        with tempfile.TemporaryDirectory() as d:
            n = max(100, size // 2)  # two ops per memory: its text and its place
            build(Path(d), n)
            entry: dict[str, Any] = {"ops": ops_in(Path(d))}
            for label, shared in (("cold", False), ("shared", True)):
                res = anyio.run(partial(session, Path(d), n, 0, shared))
                entry[label] = {"s": res["first_answer_s"], "rss_mib": res["rss_mib"]}
            out["first_answer"][str(size)] = entry
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--first-answer-ops", type=int, nargs="+", default=[100_000])
    ap.add_argument("--calls", type=int, default=40)
    args = ap.parse_args()
    print(json.dumps(run(args.memories, args.first_answer_ops, args.calls), indent=1))


if __name__ == "__main__":
    main()
