"""A small write's tail in one process: create_entities of one entity at 1k entities.

    python -m bench.write_tail [--calls 600] [--rounds 4] [--gap-ms 0] [--fsync]
                               [--before DIR] [--side NAME=DIR ...]

Each round starts a new process on a new store, filled with 1,000 entities by two 500-entity
calls, then makes 50 untimed calls and ``calls`` timed ones, as the tool makes them (planned and
written by ``kg_mutate``, the answer's text built); fsync off unless ``--fsync`` (the shard's
fsync, the same on every side, hides the read model's own syncs). ``--before DIR`` (DIR holding
``git archive OLD noon``) adds a process of that noon each round, and each ``--side NAME=DIR``
one more; they take turns (the order reversed every round), so a change of the machine's load
hits each alike. ``--gap-ms`` leaves that many ms between calls, as a client's round trip would
(0: back to back).

Per process: the calls' wall clock and the calling thread's CPU (p50, p99, mean, and how many
calls took over 1, 2 and 5 ms of wall clock), the process's CPU (all its threads) per call, and
the fold's ``COMMIT`` alone (a ``COMMIT`` after changes, on any of the process's connections:
p50, p90, how many over 1 ms), in microseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

from noon.config import Settings
from noon.kg import plan
from noon.kg.text import pretty
from noon.mcp.spec import tool_text
from noon.store.access import kg_mutate
from noon.store.store import Store
from tests.harness.mesh import ROOT, subprocess_env

FILL = 500
WARM = 50
COMMITS: list[float] = []
"""Seconds each ``COMMIT`` after changes took, in this process."""


class TimedCommits(sqlite3.Connection):
    """A connection that times each ``COMMIT`` of a transaction that changed something."""

    changes = 0

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if sql != "COMMIT" or self.total_changes == self.changes:
            return super().execute(sql, parameters)
        self.changes = self.total_changes
        t0 = time.perf_counter()
        cursor = super().execute(sql, parameters)
        COMMITS.append(time.perf_counter() - t0)
        return cursor


def entity(name: str, observation: str) -> dict[str, Any]:
    return {"name": name, "entityType": "person", "observations": [observation]}


def calls(n: int, gap_s: float, fsync: bool) -> dict[str, Any]:
    """This process's figures, in seconds: ``n`` calls on a new store at 1k entities."""
    connect = partial(sqlite3.connect, factory=TimedCommits)
    with tempfile.TemporaryDirectory() as d, mock.patch("sqlite3.connect", connect):
        store = Store(Settings.from_env({}, dir=Path(d), node_id="bench", fsync=fsync))
        try:
            for b in range(2):
                batch = [entity(f"e{b}-{i}", f"obs {i}") for i in range(FILL)]
                kg_mutate(store, "default", plan.create_entities, batch, "bench")
            for i in range(WARM):
                kg_mutate(store, "default", plan.create_entities, [entity(f"w{i}", "w")], "bench")
            wall, cpu = [], []
            first = len(COMMITS)
            p0 = time.process_time()
            for i in range(n):
                t0, c0 = time.perf_counter(), time.thread_time()
                one = [entity(f"x{i}", f"observation {i}")]
                created = kg_mutate(store, "default", plan.create_entities, one, "bench")
                tool_text(pretty(created), {"entities": created})
                cpu.append(time.thread_time() - c0)
                wall.append(time.perf_counter() - t0)
                if gap_s:
                    time.sleep(gap_s)
            process = time.process_time() - p0
        finally:
            store.close()
    return {"wall": wall, "cpu": cpu, "process": process, "commits": COMMITS[first:]}


def _q(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def summary(figures: dict[str, Any]) -> str:
    us = 1e6
    wall = [s * us for s in figures["wall"]]
    cpu = [s * us for s in figures["cpu"]]
    commits = [s * us for s in figures["commits"]]
    return (
        f"wall p50 {_q(wall, 0.5):5.0f} p99 {_q(wall, 0.99):6.0f} mean {statistics.mean(wall):5.0f}"
        f" >1/2/5 ms {sum(w > 1000 for w in wall)}/{sum(w > 2000 for w in wall)}"
        f"/{sum(w > 5000 for w in wall)} | CPU p50 {_q(cpu, 0.5):4.0f} p99 {_q(cpu, 0.99):5.0f}"
        f" mean {statistics.mean(cpu):4.0f}, process {figures['process'] * us / len(cpu):4.0f}"
        f" | COMMIT p50 {_q(commits, 0.5):3.0f} p90 {_q(commits, 0.9):4.0f}"
        f" >1 ms {sum(c > 1000 for c in commits)}"
    )


def run_side(code: Path | None, n: int, gap_ms: float, fsync: bool) -> dict[str, Any]:
    """One process of the noon in ``code`` (None: this checkout's) making the calls."""
    env = subprocess_env()
    if code is not None:  # its noon found first; `-m` puts the working directory first
        env["PYTHONPATH"] = str(code) + os.pathsep + env["PYTHONPATH"]
    child = ["--child", "--calls", str(n), "--gap-ms", str(gap_ms)] + (["--fsync"] if fsync else [])
    out = subprocess.run(
        [sys.executable, "-m", "bench.write_tail", *child],
        env=env,
        cwd=code if code is not None else ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    figures: dict[str, Any] = json.loads(out)
    return figures


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--gap-ms", type=float, default=0.0)
    parser.add_argument("--fsync", action="store_true")
    parser.add_argument("--before", type=Path, default=None, metavar="DIR")
    parser.add_argument("--side", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(calls(args.calls, args.gap_ms / 1000, args.fsync)))
        return
    sides: list[tuple[str, Path | None]] = [("noon", None)]
    if args.before is not None:
        sides.append(("noon before", args.before.resolve()))
    for side in args.side:
        name, _, code = side.partition("=")
        sides.append((name, Path(code).resolve()))
    width = max(len(name) for name, _ in sides)
    fsync = "on" if args.fsync else "off"
    print(f"create_entities of one at 1k entities, {args.calls} calls a process, fsync {fsync}, µs")
    for r in range(args.rounds):
        for name, code in sides if r % 2 == 0 else sides[::-1]:
            start = load()
            figures = run_side(code, args.calls, args.gap_ms, args.fsync)
            print(f"round {r + 1} {name:{width}} {summary(figures)} | load {start} -> {load()}")


if __name__ == "__main__":
    main()
