"""Core benchmarks: append throughput, cold fold vs opening the machine's read model,
incremental read.

Run: ``.venv/bin/python -m bench.core`` (100k ops) or ``--sizes 100000,1000000``.
Each figure is printed with its physical floor measured in the same run: fsync latency for
appends, raw JSON decoding of the same bytes for folds, one ``stat`` for idle reads.
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
from pathlib import Path
from typing import Any

import orjson

from noon.config import Settings
from noon.core.ops import Draft, encode
from noon.store.store import Store

ROOT = Path(__file__).resolve().parent.parent


def settings(d: Path, node: str, **kw: object) -> Settings:
    return Settings.from_env({}, dir=d, node_id=node, compact_after=0, **kw)  # type: ignore[arg-type]


def bench_appends(n: int, fsync: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(settings(Path(tmp), "bench", fsync=fsync))
        start = time.perf_counter()
        for i in range(n):
            store.write(lambda f, i=i: [Draft(("content", "default", f"m{i}"), {"text": "x" * 80})])
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


PROBE = r"""
import json, resource, sys, time
from pathlib import Path
from noon.config import Settings
from noon.store.store import Store
d, keep, extra = Path(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
if not keep:
    for f in (d / ".noon").glob("readmodel.sqlite3*"):
        f.unlink()
t = time.perf_counter()
store = Store(Settings.from_env({}, dir=d, node_id="probe", compact_after=0))
opened = time.perf_counter() - t
result = {"open_s": opened, "ops": store.fold.applied}
t = time.perf_counter()
store.refresh()
result["idle_refresh_s"] = time.perf_counter() - t
if extra:
    with open(d / "node0.jsonl", "ab") as f:
        f.write(extra.encode() + b"\n")
    t = time.perf_counter()
    changes = store.refresh()
    result["incremental_s"] = time.perf_counter() - t
    result["incremental_ops"] = changes.ops
result["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(result))
"""


def probe(d: Path, keep: bool, extra: str = "") -> dict[str, float]:
    """A new process on ``d``: with the machine's read model as it is (``keep``), or after
    throwing it away (a cold fold)."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(d), "1" if keep else "0", extra],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout)


def decode_floor(d: Path) -> float:
    start = time.perf_counter()
    for p in d.glob("*.jsonl"):
        for line in p.read_bytes().splitlines():
            orjson.loads(line)
    return time.perf_counter() - start


def next_line(d: Path) -> str:
    last = (d / "node0.jsonl").read_bytes().splitlines()[-1]
    op = orjson.loads(last)
    return encode(
        node="node0",
        seq=op["seq"] + 1,
        hlc=op["hlc"] + 1,
        el=("keyword", "default", "fresh", "x"),
        val={},
    ).decode()


def measure(sizes: list[int], appends: int) -> dict[str, Any]:
    """Append rates with the fsync floor, then per store size: cold fold, opening the read
    model a first process built, and the read after one new op (with the raw decode of the same
    bytes as the fold's floor)."""
    out: dict[str, Any] = {
        "fsync_floor_per_s": fsync_floor(appends),
        "append_fsync_per_s": bench_appends(appends, True),
        "append_nofsync_per_s": bench_appends(appends * 5, False),
        "sizes": {},
    }
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            generate(d, size)
            raw = decode_floor(d)
            cold = probe(d, keep=False)
            warm = probe(d, keep=True, extra=next_line(d))
            assert warm["ops"] == cold["ops"], "the read model was not reused"
            shards = list(d.glob("*.jsonl"))
            out["sizes"][str(size)] = {
                "raw_decode_s": raw,
                "cold": cold,
                "warm": warm,
                "bytes": sum(p.stat().st_size for p in shards),
                "ops": sum(len(p.read_bytes().splitlines()) for p in shards),
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--appends", type=int, default=2000)
    args = ap.parse_args()
    res = measure([int(s) for s in args.sizes.split(",")], args.appends)
    on, off, floor = (
        res["append_fsync_per_s"],
        res["append_nofsync_per_s"],
        res["fsync_floor_per_s"],
    )
    rows: list[tuple[str, str, str]] = [
        (
            "append, fsync on",
            f"{on:,.0f} ops/s",
            f"raw fsync floor {floor:,.0f}/s ({on / floor:.2f}x of floor)",
        ),
        ("append, fsync off", f"{off:,.0f} ops/s", "in-process lock+write+refresh"),
    ]
    for size, r in res["sizes"].items():
        cold, warm, raw = r["cold"], r["warm"], r["raw_decode_s"]
        n = int(size)
        rows += [
            (
                f"cold fold {n:,} ops",
                f"{cold['open_s']:.2f} s, {cold['rss_mib']:.0f} MiB",
                f"raw orjson decode {raw:.2f} s ({cold['open_s'] / raw:.1f}x)",
            ),
            (
                f"snapshot load {n:,} ops",
                f"{warm['open_s']:.2f} s, {warm['rss_mib']:.0f} MiB",
                f"{cold['open_s'] / warm['open_s']:.1f}x faster than cold",
            ),
            (
                f"read after 1 new op at {n:,}",
                f"{warm['incremental_s'] * 1e3:.2f} ms",
                f"idle refresh {warm['idle_refresh_s'] * 1e3:.3f} ms",
            ),
        ]
    width = max(len(r[0]) for r in rows)
    for name, figure, anchor in rows:
        print(f"{name:<{width}}  {figure:>24}   {anchor}")


if __name__ == "__main__":
    main()
