"""Core benchmarks: append throughput and a fresh node's catch-up fold (the first process of a
machine folds every shard into the shared read model).

Run: ``.venv/bin/python -m bench.core`` (100k ops) or ``--sizes 100000,1000000``.
Each figure is printed with its physical floor measured in the same run: fsync latency for
appends, raw JSON decoding of the same bytes for folds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from noon.config import Settings
from noon.core.elements import content_key
from noon.core.ops import Draft, encode
from noon.store.store import Store

ROOT = Path(__file__).resolve().parent.parent


def settings(d: Path, node: str, **kw: object) -> Settings:
    return Settings.from_env({}, dir=d, node_id=node, compact_after=0, **kw)  # type: ignore[arg-type]


def _one_memory(i: int, graph: object) -> list[Draft]:
    return [Draft(content_key("default", f"m{i}"), {"text": "x" * 80})]


def bench_appends(n: int, fsync: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(settings(Path(tmp), "bench", fsync=fsync))
        start = time.perf_counter()
        for i in range(n):
            store.write(partial(_one_memory, i))
        return n / (time.perf_counter() - start)


def fsync_floor(n: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        fd = os.open(Path(tmp) / "f", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        start = time.perf_counter()
        for _ in range(n):
            os.write(fd, b"x" * 200 + b"\n")
            os.fsync(fd)
        os.close(fd)
        return n / (time.perf_counter() - start)


def generate(d: Path, total: int, authors: int = 4) -> None:
    """A store shaped like real use: memories created, edited a few times, placed, tagged."""
    rnd = random.Random(1)
    per = total // authors
    stamp = 1_700_000_000_000 << 16
    for a in range(authors):
        node = f"node{a}"
        heads: dict[str, tuple[str, int]] = {}
        with open(d / f"{node}.jsonl", "wb") as f:
            for seq in range(1, per + 1):
                stamp += rnd.randint(1, 1 << 16)
                r = rnd.random()
                mem = f"{node}.{rnd.randint(0, per // 4)}"
                if r < 0.6:
                    key = ("content", "default", mem)
                    prev = heads.get(mem)
                    line = encode(
                        node=node,
                        seq=seq,
                        hlc=stamp,
                        el=key,
                        val={"text": "memory text " * rnd.randint(2, 12)},
                        prev=(prev,) if prev else None,
                        by="bench",
                    )
                    heads[mem] = (node, seq)
                elif r < 0.85:
                    line = encode(
                        node=node,
                        seq=seq,
                        hlc=stamp,
                        el=("edge", "default", "@core", f"name{seq}"),
                        val={"child": mem, "priority": 1, "disclosure": "when"},
                        by="bench",
                    )
                else:
                    line = encode(
                        node=node,
                        seq=seq,
                        hlc=stamp,
                        el=("keyword", "default", f"kw{seq % 500}", mem),
                        val={},
                        by="bench",
                    )
                f.write(line + b"\n")


FOLD_PROBE = r"""
import json, os, resource, sys, time
from pathlib import Path
from bench.stats import rss_mib
from noon.config import Settings
from noon.store.store import Store
t, cpu = time.perf_counter(), time.process_time()
store = Store(Settings.from_env({}, dir=Path(sys.argv[1]), node_id="probe", compact_after=0))
folded, cpu = time.perf_counter() - t, time.process_time() - cpu
child = resource.getrusage(resource.RUSAGE_CHILDREN)  # the shard decoder, ended by now
rss = rss_mib(os.getpid())["peak"]  # not ru_maxrss: it keeps the forking parent's
print(json.dumps({"s": folded, "fold_cpu_s": cpu, "cpu_s": cpu + child.ru_utime + child.ru_stime,
                  "ops": store.fold.applied, "peak_rss_mib": rss}))
"""


def remove_read_model(d: Path) -> None:
    """Throw the machine's read model of ``d`` away: the next reader folds every shard."""
    for f in (d / ".noon").glob("readmodel.sqlite3*"):
        f.unlink()


def catch_up_fold(d: Path) -> dict[str, float]:
    """A fresh node's catch-up fold: the first ``Store`` of a new process on ``d`` without a
    read model folds every shard into a new one. Its seconds (the constructor alone, not the
    process start), ops, ops/s and peak RSS, beside the JSON decode of the same bytes; also in
    CPU seconds, which a machine shared with other work disturbs far less than wall time: the
    folding process's own (``fold_cpu_s``) and with its shard decoder's (``cpu_s``)."""
    remove_read_model(d)
    out = subprocess.run(
        [sys.executable, "-c", FOLD_PROBE, str(d)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    fold = json.loads(out.stdout)
    shards = list(d.glob("*.jsonl"))
    cpu = time.process_time()
    decode = decode_seconds(shards)
    decode_cpu = time.process_time() - cpu
    return {
        **fold,
        "ops_per_s": fold["ops"] / fold["s"],
        "ops_per_cpu_s": fold["ops"] / fold["cpu_s"],
        "bytes": sum(p.stat().st_size for p in shards),
        "decode_s": decode,
        "decode_ops_per_s": fold["ops"] / decode,
        "decode_ops_per_cpu_s": fold["ops"] / decode_cpu,
    }


def decode_seconds(paths: list[Path]) -> float:
    """Seconds to read ``paths`` and decode each of their lines with orjson: the floor of
    anything that has to look at every op (or record) in them."""
    start = time.perf_counter()
    for p in paths:
        for line in p.read_bytes().splitlines():
            if line:
                orjson.loads(line)
    return time.perf_counter() - start


def measure(appends: int) -> dict[str, Any]:
    """Append rates with fsync on and off, with the fsync floor."""
    return {
        "fsync_floor_per_s": fsync_floor(appends),
        "append_fsync_per_s": bench_appends(appends, True),
        "append_nofsync_per_s": bench_appends(appends * 5, False),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="100000", help="ops of the generated stores to fold")
    ap.add_argument("--appends", type=int, default=2000)
    args = ap.parse_args()
    res = measure(args.appends)
    on, off, floor = (
        res["append_fsync_per_s"],
        res["append_nofsync_per_s"],
        res["fsync_floor_per_s"],
    )
    print(f"append, fsync on   {on:>9,.0f} ops/s  (raw fsync floor {floor:,.0f}/s)")
    print(f"append, fsync off  {off:>9,.0f} ops/s")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            generate(Path(tmp), size)
            fold = catch_up_fold(Path(tmp))
        print(
            f"catch-up fold of {fold['ops']:,} ops: {fold['s']:.2f} s, "
            f"{fold['ops_per_s']:,.0f} ops/s, peak RSS {fold['peak_rss_mib']:.0f} MiB "
            f"(JSON decode of the same bytes: {fold['decode_ops_per_s']:,.0f} ops/s); "
            f"per CPU second {fold['ops_per_cpu_s']:,.0f} ops "
            f"(decode {fold['decode_ops_per_cpu_s']:,.0f})"
        )


if __name__ == "__main__":
    main()
