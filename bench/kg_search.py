"""search_nodes and open_nodes on a large knowledge graph: noon against the official memory
server on the same data in the same run (issue 27's "search_nodes at 1M ops").

    python -m bench.kg_search [--ops 1000000] [--calls 15] [--keep DIR] [--before DIR]
                              [--in-process N]

The graph is :mod:`bench.kg_scale`'s: an official ``memory.jsonl`` of N/5 entities (three
Zipf-worded observations and one relation each), imported into noon with ``noon import``.
``--keep DIR`` builds it there once and reuses it on later runs (the import of 1M ops takes
minutes). Then one noon session and one official server answer the same calls, interleaved
call by call (a change of the machine's load hits both alike); ``--before DIR`` adds a session
of the noon whose package sits in DIR (``git archive OLD noon | tar -x -C DIR``) on the same
read model; each call goes to the servers in a rotating order. Each server's wall clock is
given to the parsed answer and to the answer's last byte (before the client parses it), beside
its CPU. The queries, each a kind the answer's size tells apart:

- ``name``: ``e1234``-like, the entities so named and their decimal extensions (111 of them at
  200k entities), with their relations;
- ``rare word``: a word of the vocabulary's tail (about a hundred entities hold it);
- ``nothing``: a query no entity holds;
- ``common word``: a word of the vocabulary's head part (thousands of entities);
- ``open_nodes``: three names.

``--in-process N`` times instead, for each kind of query but ``open_nodes``, N calls of
``search_nodes``' read and text (``kg_read`` and ``pretty``, the tool's work without the MCP
SDK and the pipe) in a process of its own per noon (this checkout's, and ``--before``'s),
the processes taking turns N times: the CPU of the calling thread beside the wall clock, and
a digest of the texts, which the two noons must agree on.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.kg_latency import OFFICIAL, noon_client, official_client
from bench.kg_scale import OPS_PER_ENTITY, SLOW_START, noon_import, write_official
from bench.pipe import PipeClient
from bench.stats import percentiles, sched_seconds
from tests.harness.mesh import ROOT, subprocess_env

QUERIES: dict[str, Callable[[random.Random, int], tuple[str, dict[str, Any]]]] = {
    "name": lambda rnd, n: ("search_nodes", {"query": f"e{rnd.randrange(1000, 2000)}"}),
    "rare word": lambda rnd, n: ("search_nodes", {"query": f"term{rnd.randrange(4000, 5000)}"}),
    "nothing": lambda rnd, n: ("search_nodes", {"query": f"zq{rnd.randrange(10**6)}x"}),
    "common word": lambda rnd, n: ("search_nodes", {"query": f"term{rnd.randrange(200, 300)} "}),
    "open_nodes": lambda rnd, n: (
        "open_nodes",
        {"names": [f"e{rnd.randrange(n)}" for _ in range(3)]},
    ),
}


def build(directory: Path, ops: int) -> tuple[Path, Path, dict[str, Any]]:
    """The official file and noon's store of ``ops`` ops in ``directory``, built unless there
    (the import's figures when built now)."""
    memory, store = directory / "memory.jsonl", directory / "store"
    done = directory / "built"
    if done.exists():
        return memory, store, json.loads(done.read_text())
    directory.mkdir(parents=True, exist_ok=True)
    write_official(memory, max(10, ops // OPS_PER_ENTITY))
    figures = noon_import(memory, store)
    done.write_text(json.dumps(figures))
    return memory, store, figures


def _answer(client: PipeClient, tool: str, args: dict[str, Any]) -> tuple[float, float, float, int]:
    """Milliseconds to the answer, milliseconds until its last byte had arrived (before the
    client parsed it), the server's CPU milliseconds for it (every thread), and how many
    entities it holds."""
    cpu = sched_seconds(client.proc.pid)["on_cpu"]
    t0 = time.perf_counter()
    reply = client.call(tool, args)
    ms = (time.perf_counter() - t0) * 1000
    received = (client.received - t0) * 1000
    cpu = (sched_seconds(client.proc.pid)["on_cpu"] - cpu) * 1000
    if reply.get("isError") or "__error__" in reply:
        raise RuntimeError(f"{tool} failed: {str(reply)[:500]}")
    text = "".join(c.get("text", "") for c in reply["content"])
    return ms, received, cpu, len(json.loads(text)["entities"])


def measure(memory: Path, store: Path, calls: int, before: Path | None) -> dict[str, Any]:
    entities = sum(1 for line in memory.open("rb") if line.startswith(b'{"type":"entity"'))
    with ExitStack() as stack:
        clients: dict[str, PipeClient] = {}
        if OFFICIAL.exists():
            clients["official"] = official_client(memory, timeout=SLOW_START)
            stack.callback(clients["official"].close)
        clients["noon"] = noon_client(store, timeout=SLOW_START)
        stack.callback(clients["noon"].close)
        if before is not None:
            clients["noon before"] = noon_client(store, timeout=SLOW_START, code=before)
            stack.callback(clients["noon before"].close)
        for client in clients.values():  # the first answer (loads, folds) is not timed
            _answer(client, "open_nodes", {"names": ["e0"]})
        times: dict[str, dict[str, list[float]]] = {n: {q: [] for q in QUERIES} for n in clients}
        arrived: dict[str, dict[str, list[float]]] = {n: {q: [] for q in QUERIES} for n in clients}
        cpus: dict[str, dict[str, list[float]]] = {n: {q: [] for q in QUERIES} for n in clients}
        hits: dict[str, list[int]] = {q: [] for q in QUERIES}
        rnd = random.Random(27)
        order = list(clients.items())
        for _ in range(calls):
            for kind, make in QUERIES.items():
                tool, args = make(rnd, entities)
                counts = set()
                # each server first in turn: the one asked right after another finds the
                # machine's caches warm with the same pages (two noons share one read model)
                order = order[1:] + order[:1]
                for name, client in order:
                    ms, received, cpu, count = _answer(client, tool, args)
                    times[name][kind].append(ms)
                    arrived[name][kind].append(received)
                    cpus[name][kind].append(cpu)
                    counts.add(count)
                if len(counts) != 1:
                    raise RuntimeError(f"the servers disagree on {tool} {args}: {counts}")
                hits[kind].append(counts.pop())
    return {
        "entities": entities,
        "hits_median": {kind: statistics.median(v) for kind, v in hits.items()},
        "ms": {name: {kind: percentiles(v) for kind, v in t.items()} for name, t in times.items()},
        "received_ms": {
            name: {kind: percentiles(v) for kind, v in t.items()} for name, t in arrived.items()
        },
        "cpu_ms": {
            name: {kind: percentiles(v) for kind, v in t.items()} for name, t in cpus.items()
        },
    }


PROBE = r"""
import hashlib, json, sys, time
from pathlib import Path
from noon.config import Settings
from noon.kg.text import pretty
from noon.store.access import kg_read
from noon.store.store import Store
store = Store(Settings.from_env({}, dir=Path(sys.argv[1]), node_id="bench", fsync=False))
kg_read(store, "default", lambda kg: kg.search("e1"))  # the first read (opens, refreshes)
out = {}
for kind, queries in json.loads(sys.argv[2]).items():
    cpu, wall, digest = [], [], hashlib.sha256()
    for q in queries:
        t, c = time.perf_counter(), time.thread_time()
        text = pretty(kg_read(store, "default", lambda kg: kg.search(q)))
        cpu.append((time.thread_time() - c) * 1000)
        wall.append((time.perf_counter() - t) * 1000)
        digest.update(text.encode("utf-8", "surrogatepass"))
    out[kind] = {"cpu": cpu, "wall": wall, "digest": digest.hexdigest()}
store.close()
print(json.dumps(out))
"""


def _probe(store: Path, queries: dict[str, list[str]], code: Path | None) -> dict[str, Any]:
    env = subprocess_env()
    if code is not None:  # another checkout's noon, found before this one's
        env["PYTHONPATH"] = str(code) + os.pathsep + env["PYTHONPATH"]
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(store), json.dumps(queries)],
        capture_output=True,
        text=True,
        check=True,
        cwd=code if code is not None else ROOT,
        env=env,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def in_process(memory: Path, store: Path, rounds: int, before: Path | None) -> int:
    """``--in-process``: each noon's CPU and wall milliseconds per search, p50 of its calls."""
    entities = sum(1 for line in memory.open("rb") if line.startswith(b'{"type":"entity"'))
    rnd = random.Random(27)
    queries = {
        kind: [make(rnd, entities)[1]["query"] for _ in range(5)]
        for kind, make in QUERIES.items()
        if kind != "open_nodes"
    }
    codes: dict[str, Path | None] = {"noon": None}
    if before is not None:
        codes["noon before"] = before
    samples: dict[str, dict[str, dict[str, list[float]]]] = {
        name: {kind: {"cpu": [], "wall": []} for kind in queries} for name in codes
    }
    digests: dict[tuple[str, str], set[str]] = {}
    for turn in range(rounds):
        order = list(codes.items())
        for name, code in order[turn % len(order) :] + order[: turn % len(order)]:
            for kind, got in _probe(store, queries, code).items():
                samples[name][kind]["cpu"] += got["cpu"]
                samples[name][kind]["wall"] += got["wall"]
                digests.setdefault((kind, name), set()).add(got["digest"])
    for kind in queries:
        if len(set.union(*(digests[kind, name] for name in codes))) != 1:
            raise RuntimeError(f"the answers to the {kind} queries differ")
    print(f"{'query':<12} " + "".join(f"{n + ' CPU / wall p50 ms':>30}" for n in codes))
    for kind in queries:
        line = f"{kind:<12} "
        for name in codes:
            cpu = statistics.median(samples[name][kind]["cpu"])
            wall = statistics.median(samples[name][kind]["wall"])
            line += f"{cpu:>19.2f} / {wall:>8.2f}"
        print(line)
    return 0


def _table(res: dict[str, Any], figure: str, title: str) -> None:
    """One line per kind of query: the official server's p50 / p99 milliseconds of ``figure``
    and each noon's, with its ratio of p50s."""
    names = [n for n in ("noon", "noon before") if n in res[figure]]
    print(
        f"{res['entities']} entities, {title}: {'query':<12} {'hits':>6} {'official p50/p99':>18}"
        + "".join(f" {n + ' p50/p99':>20} {n + ' ÷ official':>17}" for n in names)
    )
    indent = len(f"{res['entities']} entities, {title}: ")
    for kind in QUERIES:
        theirs = res[figure]["official"][kind]
        line = f"{'':>{indent}}{kind:<12} {res['hits_median'][kind]:>6.0f}"
        line += f" {theirs['p50']:>9.1f}/{theirs['p99']:<8.1f}"
        for n in names:
            mine = res[figure][n][kind]
            ratio = mine["p50"] / theirs["p50"]
            line += f" {mine['p50']:>10.2f}/{mine['p99']:<9.2f} {ratio:>17.3f}"
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR")
    parser.add_argument("--before", type=Path, default=None, metavar="DIR")
    parser.add_argument("--in-process", type=int, default=0, metavar="N")
    args = parser.parse_args(argv)
    if args.in_process:
        with tempfile.TemporaryDirectory(prefix="noon-bench-search-") as tmp:
            memory, store, _ = build(args.keep or Path(tmp), args.ops)
            return in_process(memory, store, args.in_process, args.before)
    if not OFFICIAL.exists():
        print("official server missing: run scripts/install-official-server.sh", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="noon-bench-search-") as tmp:
        memory, store, built = build(args.keep or Path(tmp), args.ops)
        res = measure(memory, store, args.calls, args.before)
    print(f"import: {json.dumps(built)}", file=sys.stderr)
    _table(res, "ms", "wall")
    _table(res, "received_ms", "wall to the answer's last byte")
    _table(res, "cpu_ms", "the server's CPU (every thread)")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
