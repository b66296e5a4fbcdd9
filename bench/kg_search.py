"""search_nodes and open_nodes on a large knowledge graph: noon against the official memory
server on the same data in the same run (issue 27's "search_nodes at 1M ops").

    python -m bench.kg_search [--ops 1000000] [--calls 15] [--keep DIR] [--before DIR]

The graph is :mod:`bench.kg_scale`'s: an official ``memory.jsonl`` of N/5 entities (three
Zipf-worded observations and one relation each), imported into noon with ``noon import``.
``--keep DIR`` builds it there once and reuses it on later runs (the import of 1M ops takes
minutes). Then one noon session and one official server answer the same calls, interleaved
call by call (a change of the machine's load hits both alike); ``--before DIR`` adds a session
of the noon whose package sits in DIR (``git archive OLD noon | tar -x -C DIR``) on the same
read model; each call goes to the servers in a rotating order. The queries, each a kind the
answer's size tells apart:

- ``name``: ``e1234``-like, the entities so named and their decimal extensions (111 of them at
  200k entities), with their relations;
- ``rare word``: a word of the vocabulary's tail (about a hundred entities hold it);
- ``nothing``: a query no entity holds;
- ``common word``: a word of the vocabulary's head part (thousands of entities);
- ``open_nodes``: three names.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
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
from bench.stats import percentiles

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


def _answer(client: PipeClient, tool: str, args: dict[str, Any]) -> tuple[float, int]:
    """Milliseconds to the answer, and how many entities it holds."""
    t0 = time.perf_counter()
    reply = client.call(tool, args)
    ms = (time.perf_counter() - t0) * 1000
    if reply.get("isError") or "__error__" in reply:
        raise RuntimeError(f"{tool} failed: {str(reply)[:500]}")
    text = "".join(c.get("text", "") for c in reply["content"])
    return ms, len(json.loads(text)["entities"])


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
                    ms, count = _answer(client, tool, args)
                    times[name][kind].append(ms)
                    counts.add(count)
                if len(counts) != 1:
                    raise RuntimeError(f"the servers disagree on {tool} {args}: {counts}")
                hits[kind].append(counts.pop())
    return {
        "entities": entities,
        "hits_median": {kind: statistics.median(v) for kind, v in hits.items()},
        "ms": {name: {kind: percentiles(v) for kind, v in t.items()} for name, t in times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR")
    parser.add_argument("--before", type=Path, default=None, metavar="DIR")
    args = parser.parse_args(argv)
    if not OFFICIAL.exists():
        print("official server missing: run scripts/install-official-server.sh", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="noon-bench-search-") as tmp:
        memory, store, built = build(args.keep or Path(tmp), args.ops)
        res = measure(memory, store, args.calls, args.before)
    print(f"import: {json.dumps(built)}", file=sys.stderr)
    names = [n for n in ("noon", "noon before") if n in res["ms"]]
    print(
        f"{res['entities']} entities; {'query':<12} {'hits':>6} {'official p50/p99':>18}"
        + "".join(f" {n + ' p50/p99':>20} {n + ' ÷ official':>17}" for n in names)
    )
    for kind in QUERIES:
        theirs = res["ms"]["official"][kind]
        line = f"{'':>{len(str(res['entities'])) + 10}} {kind:<12} {res['hits_median'][kind]:>6.0f}"
        line += f" {theirs['p50']:>9.1f}/{theirs['p99']:<8.1f}"
        for n in names:
            mine = res["ms"][n][kind]
            ratio = mine["p50"] / theirs["p50"]
            line += f" {mine['p50']:>10.2f}/{mine['p99']:<9.2f} {ratio:>17.3f}"
        print(line)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
