"""A knowledge graph of N ops in both servers, on the same data in the same run: noon's shared
read model against the official memory server's one JSON file (issue 17's "Measure").

    python -m bench.kg_scale [--ops 100000 1000000] [--runs 3] [--reads 20]

For each size it writes an official ``memory.jsonl`` of N/5 entities (three observations and one
relation each: five ops each in noon), then measures:

- ``noon import`` of that file through the real command (the wall time of the process), beside
  decoding the file's JSON lines;
- a fresh node's catch-up fold of the shard the import wrote (the first ``Store`` of a process
  on the directory without a read model), beside decoding the shard's JSON lines;
- a new session's first answer (process start to the first ``open_nodes`` answer): on the
  machine's read model (every session but the machine's first), the official server on the same
  ``memory.jsonl`` and the floor (a fresh Python importing the MCP SDK), interleaved run by run;
  then the machine's first session (no read model yet: it folds every shard); each server's RSS
  after its first answer;
- the read after one remote op: a replica shard grows by one op (an observation of the entity
  read next), then ``Store.refresh`` in this process, and the next ``open_nodes`` through a
  session; each beside the same read with nothing new.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench.core import catch_up_fold, decode_seconds, remove_read_model, settings
from bench.floors import sdk_import
from bench.kg_latency import OFFICIAL, noon_client, official_client
from bench.pipe import PipeClient
from bench.shards import ShardWriter, ops_in
from bench.stats import percentiles, rss_mib
from bench.uri_latency import text_of
from noon.core.elements import obs_key
from noon.core.ops import Draft
from noon.kg.graph import obs_id, obs_value
from noon.store.store import Store
from tests.harness.mesh import ROOT, subprocess_env

NODE = "bench"
NS = "default"
OBSERVATIONS = 3
OPS_PER_ENTITY = 1 + OBSERVATIONS + 1
"""An entity, its observations and one relation from it."""
TYPES = ("person", "project", "service", "host", "decision", "preference")
RELATIONS = ("works_on", "depends_on", "runs_on", "decided", "prefers", "knows")
SLOW_START = 3600.0
"""Seconds a first answer may take: the machine's first session folds every shard first."""


def write_official(path: Path, entities: int) -> None:
    """The official server's ``memory.jsonl``: entities with Zipf-worded observations, then one
    relation from each entity to a random one."""
    rnd = random.Random(entities)
    lines = [
        orjson.dumps(
            {
                "type": "entity",
                "name": f"e{i}",
                "entityType": rnd.choice(TYPES),
                "observations": [f"{k}: {text_of(rnd, 6)}" for k in range(OBSERVATIONS)],
            }
        )
        for i in range(entities)
    ]
    lines += [
        orjson.dumps(
            {
                "type": "relation",
                "from": f"e{i}",
                "to": f"e{rnd.randrange(entities)}",
                "relationType": rnd.choice(RELATIONS),
            }
        )
        for i in range(entities)
    ]
    path.write_bytes(b"\n".join(lines))


IMPORT_PROBE = r"""
import json, os, sys
from bench.stats import rss_mib
from noon.cli import main
if main(sys.argv[1:]):
    sys.exit(1)
print(json.dumps(rss_mib(os.getpid())["peak"]))  # not ru_maxrss: it keeps the forking parent's
"""


def noon_import(memory: Path, store: Path) -> dict[str, float]:
    """``noon import memory.jsonl`` in a new process: wall seconds, ops written, ops/s, its peak
    RSS, beside the JSON decode of the file (as ops/s of the ops it became); also per CPU
    second of the import process (its start included), which other work on the machine
    disturbs less."""
    command = ["import", str(memory), "--dir", str(store), "--node-id", NODE]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, *command],
        env=subprocess_env(),
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    ops = ops_in(store)
    decode_cpu = time.process_time()
    decode = decode_seconds([memory])
    decode_cpu = time.process_time() - decode_cpu
    return {
        "s": seconds,
        "cpu_s": cpu,
        "ops": ops,
        "ops_per_s": ops / seconds,
        "ops_per_cpu_s": ops / cpu,
        "peak_rss_mib": float(done.stdout.splitlines()[-1]),
        "bytes": memory.stat().st_size,
        "decode_s": decode,
        "decode_ops_per_s": ops / decode,
        "decode_ops_per_cpu_s": ops / decode_cpu,
    }


def _text(reply: dict[str, Any]) -> str:
    if reply.get("isError") or "__error__" in reply:
        raise RuntimeError(f"tool call failed: {str(reply)[:500]}")
    return "".join(c.get("text", "") for c in reply["content"])


def open_nodes(client: PipeClient, name: str) -> str:
    text = _text(client.call("open_nodes", {"names": [name]}))
    if f'"name": "{name}"' not in text:
        raise RuntimeError(f"open_nodes did not return {name}: {text[:300]}")
    return text


def first_answer(start: Callable[[], PipeClient], name: str) -> dict[str, Any]:
    """Seconds from process start to the first ``open_nodes`` answer, and the RSS then."""
    t0 = time.perf_counter()
    client = start()
    try:
        open_nodes(client, name)
        seconds = time.perf_counter() - t0
        return {"s": seconds, "rss_mib": rss_mib(client.proc.pid)}
    finally:
        client.close()


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median time, with every run's seconds."""
    ordered = sorted(runs, key=lambda r: r["s"])
    return {**ordered[len(ordered) // 2], "runs_s": [r["s"] for r in runs]}


def remote_entity(entities: int, k: int) -> str:
    """The entity the ``k``-th remote op adds an observation to: a different one each time."""
    return f"e{(entities // 3 + k * 7919) % entities}"


def remote_observation(entity: str, k: int) -> Draft:
    text = f"remote fact {k}"
    return Draft(obs_key(NS, entity, obs_id(text), 0), obs_value(text))


def refresh_after_remote(store_dir: Path, peer: ShardWriter, entities: int, reads: int) -> Any:
    """In this process: ``Store.refresh`` with nothing new, and after one remote op."""
    store = Store(settings(store_dir, "reader"))
    idle, remote = [], []
    try:
        for k in range(reads):
            t0 = time.perf_counter()
            if store.refresh():
                raise RuntimeError("an idle refresh found changes")
            idle.append((time.perf_counter() - t0) * 1000)
            peer.batch([remote_observation(remote_entity(entities, k), k)])
            t0 = time.perf_counter()
            folded = store.refresh().ops
            remote.append((time.perf_counter() - t0) * 1000)
            if folded != 1:
                raise RuntimeError(f"refresh folded {folded} ops, expected the 1 remote op")
    finally:
        store.close()
    return {"idle_ms": percentiles(idle), "remote_ms": percentiles(remote)}


def session_after_remote(
    store_dir: Path, peer: ShardWriter, entities: int, reads: int, first: int
) -> Any:
    """Through a ``noon serve`` session: ``open_nodes`` with nothing new, and right after one
    remote op (the answer must hold it); the session's RSS after all."""
    client = noon_client(store_dir, timeout=SLOW_START)
    idle, remote = [], []
    try:
        open_nodes(client, remote_entity(entities, first))
        for k in range(first, first + reads):
            entity = remote_entity(entities, k)
            t0 = time.perf_counter()
            open_nodes(client, entity)
            idle.append((time.perf_counter() - t0) * 1000)
            peer.batch([remote_observation(entity, k)])
            t0 = time.perf_counter()
            text = open_nodes(client, entity)
            remote.append((time.perf_counter() - t0) * 1000)
            if f"remote fact {k}" not in text:
                raise RuntimeError("the read after a remote op does not show it")
        return {
            "idle_ms": percentiles(idle),
            "remote_ms": percentiles(remote),
            "rss_mib": rss_mib(client.proc.pid),
        }
    finally:
        client.close()


def measure(ops: int, runs: int, reads: int, *, bulk_only: bool = False) -> dict[str, Any]:
    entities = max(10, ops // OPS_PER_ENTITY)
    probe = f"e{entities // 2}"
    with tempfile.TemporaryDirectory(prefix="noon-bench-kg-") as tmp:
        memory, store = Path(tmp) / "memory.jsonl", Path(tmp) / "store"
        write_official(memory, entities)
        out: dict[str, Any] = {"entities": entities, "import": noon_import(memory, store)}
        out["ops"] = out["import"]["ops"]
        out["catch_up"] = catch_up_fold(store)
        if bulk_only:
            return out

        def noon() -> PipeClient:
            return noon_client(store, timeout=SLOW_START)

        def official() -> PipeClient:
            return official_client(memory, timeout=SLOW_START)

        # interleaved, so a change in the machine's load touches all three alike
        shared, theirs, floor = [], [], []
        for _ in range(runs):
            shared.append(first_answer(noon, probe))
            if OFFICIAL.exists():
                theirs.append(first_answer(official, probe))
            floor.append({"s": sdk_import(1)})
        out["shared"] = _median(shared)
        if theirs:
            out["official"] = _median(theirs)
        out["floor"] = _median(floor)
        remove_read_model(store)
        out["cold"] = first_answer(noon, probe)
        peer = ShardWriter(store, "peer")
        out["refresh"] = refresh_after_remote(store, peer, entities, reads)
        out["session"] = session_after_remote(store, peer, entities, reads, reads)
    return out


def run(sizes: list[int], runs: int, reads: int, *, bulk_only: bool = False) -> dict[str, Any]:
    """{ops: measurements} per store size; the official server's figures when installed."""
    return {
        "official_installed": OFFICIAL.exists(),
        "sizes": {str(size): measure(size, runs, reads, bulk_only=bulk_only) for size in sizes},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", type=int, nargs="+", default=[100_000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--reads", type=int, default=20)
    ap.add_argument(
        "--bulk-only", action="store_true", help="only the import and the catch-up fold"
    )
    args = ap.parse_args()
    print(json.dumps(run(args.ops, args.runs, args.reads, bulk_only=args.bulk_only), indent=1))


if __name__ == "__main__":
    main()
