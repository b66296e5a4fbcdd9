"""Per-call latency of the knowledge-graph tools: noon vs the official memory server.

Same client (a synchronous stdio JSON-RPC client), same machine, same run. For each size the
graph is first filled with that many entities (two observations each), then each tool is timed
over several calls; the table shows medians in milliseconds and official/noon ratios.

    python -m bench.kg_latency [--sizes 1000 10000] [--calls 30]

Needs node and the official server (scripts/install-official-server.sh).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.jsonrpc_pipe import PipeClient
from tests.mcp_helpers import ROOT, subprocess_env

OFFICIAL = ROOT / ".cache/official/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
FILL_BATCH = 500


def _entity(i: int) -> dict[str, Any]:
    return {"name": f"e{i}", "entityType": "thing", "observations": [f"fact {i}", f"note {i}"]}


def _timed(client: PipeClient, tool: str, args: dict[str, Any]) -> float:
    start = time.perf_counter()
    result = client.call(tool, args)
    elapsed = (time.perf_counter() - start) * 1000
    if result.get("isError"):
        raise RuntimeError(f"{tool} failed: {result}")
    return elapsed


def measure(client: PipeClient, size: int, calls: int) -> dict[str, float]:
    for start in range(0, size, FILL_BATCH):
        batch = [_entity(i) for i in range(start, min(size, start + FILL_BATCH))]
        client.call("create_entities", {"entities": batch})
    out: dict[str, list[float]] = {"create_entities": [], "add_observations": [],
                                   "search_nodes": [], "read_graph": []}
    for k in range(calls):
        out["create_entities"].append(
            _timed(client, "create_entities", {"entities": [_entity(size + k)]}))
        out["add_observations"].append(_timed(client, "add_observations", {
            "observations": [{"entityName": f"e{(k * 7919) % size}", "contents": [f"new {k}"]}]}))
        out["search_nodes"].append(_timed(client, "search_nodes", {"query": f"fact {k * 31}"}))
        if k < max(3, calls // 5):
            out["read_graph"].append(_timed(client, "read_graph", {}))
    return {tool: statistics.median(v) for tool, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args(argv)
    if not OFFICIAL.exists():
        print("official server missing: run scripts/install-official-server.sh", file=sys.stderr)
        return 1
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            official = PipeClient(["node", str(OFFICIAL)],
                                  env={**subprocess_env(), "MEMORY_FILE_PATH": str(d / "m.jsonl")})
            noon = PipeClient([sys.executable, "-m", "noon", "serve", "--tools", "kg", "--dir",
                               str(d / "noon"), "--node-id", "bench"],
                              env=subprocess_env(), cwd=str(ROOT))
            try:
                theirs = measure(official, size, args.calls)
                ours = measure(noon, size, args.calls)
            finally:
                official.close()
                noon.close()
        for tool in theirs:
            rows.append((size, tool, theirs[tool], ours[tool], theirs[tool] / ours[tool]))
    print(f"{'entities':>8}  {'tool':<17} {'official ms':>11} {'noon ms':>8} {'official/noon':>13}")
    for size, tool, a, b, ratio in rows:
        print(f"{size:>8}  {tool:<17} {a:>11.2f} {b:>8.2f} {ratio:>13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
