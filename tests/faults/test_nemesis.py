"""Nemesis runs on real daemons: every acknowledged write survives, nothing deleted comes back,
every replica converges, forks are reported. CI runs a sized-down configuration; the soak
(``NOON_SLOW=1``, ``NOON_SOAK_SECONDS``, default 600) repeats runs with new seeds and prints a
summary. ``NOON_SEED`` replays a run. ``NOON_NEMESIS_RELAY_COMPACTION=0`` leaves ``noon compact``
(of every shard, killed at random) out of the faults; ``NOON_NEMESIS_DISK_DAMAGE=0`` leaves out
replica shards deleted or truncated in a crash."""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.harness.mesh import Pki
from tests.harness.nemesis import Config, Outcome, run_once, seed_from_env

pytestmark = pytest.mark.integration

RELAY_COMPACTION = os.environ.get("NOON_NEMESIS_RELAY_COMPACTION", "1") == "1"
DISK_DAMAGE = os.environ.get("NOON_NEMESIS_DISK_DAMAGE", "1") == "1"
NODES = int(os.environ.get("NOON_NEMESIS_NODES", "0"))
"""Replays a soak run: NOON_SEED=<its seed> NOON_NEMESIS_NODES=<its nodes> (CI run or soak)."""


def describe(outcome: Outcome) -> str:
    return (
        f"seed {outcome.seed}: faults {dict(outcome.faults)}, writes {outcome.writes}, "
        f"deletes {outcome.deletes}, converged in {outcome.convergence:.2f}s"
    )


def assert_clean(outcome: Outcome) -> None:
    assert not outcome.anomalies, (
        f"NOON_SEED={outcome.seed} reproduces this run; anomalies:\n"
        + "\n".join(outcome.anomalies[:50])
        + "\nfaults:\n"
        + "\n".join(outcome.log)
    )


def test_nemesis_ci_sized(tmp_path: Path, pki: Pki) -> None:
    seed = seed_from_env()
    print(f"nemesis: NOON_SEED={seed}")
    outcome = run_once(
        tmp_path,
        pki,
        seed,
        Config(
            nodes=NODES or 3, steps=16, relay_compaction=RELAY_COMPACTION, disk_damage=DISK_DAMAGE
        ),
    )
    print(describe(outcome))
    assert_clean(outcome)
    assert outcome.writes > 20 and outcome.deletes > 0
    assert sum(outcome.faults.values()) >= 10


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@pytest.mark.slow
@pytest.mark.timeout(0)  # bounded by NOON_SOAK_SECONDS instead
def test_nemesis_soak(tmp_path: Path, pki: Pki) -> None:
    budget = float(os.environ.get("NOON_SOAK_SECONDS", "600"))
    first = seed_from_env()
    end = time.monotonic() + budget
    outcomes: list[Outcome] = []
    while time.monotonic() < end:
        seed = first + len(outcomes)
        nodes = NODES or 3 + len(outcomes) % 3
        outcome = run_once(
            tmp_path / f"run{len(outcomes)}",
            pki,
            seed,
            Config(
                nodes=nodes, steps=40, relay_compaction=RELAY_COMPACTION, disk_damage=DISK_DAMAGE
            ),
        )
        print(f"{nodes} nodes, {describe(outcome)}, anomalies {len(outcome.anomalies)}", flush=True)
        outcomes.append(outcome)
    faults: Counter[str] = Counter()
    for o in outcomes:
        faults.update(o.faults)
    times = [o.convergence for o in outcomes if o.convergence != float("inf")]
    bad = [o for o in outcomes if o.anomalies]
    print("\n=== nemesis soak summary ===")
    print(f"runs: {len(outcomes)} (seeds {first}..{first + len(outcomes) - 1})")
    print(f"faults injected: {sum(faults.values())} {dict(sorted(faults.items()))}")
    print(
        f"writes checked: {sum(o.checked for o in outcomes)} "
        f"({sum(o.writes for o in outcomes)} writes, {sum(o.deletes for o in outcomes)} "
        "deletes)"
    )
    print(
        f"anomalies found: {sum(len(o.anomalies) for o in bad)} in runs (seed, nodes) "
        f"{[(o.seed, o.nodes) for o in bad]}"
    )
    if times:
        print(
            f"convergence after heal: p50 {statistics.median(times):.2f}s, "
            f"p99 {percentile(times, 0.99):.2f}s, max {max(times):.2f}s"
        )
    for o in bad:
        assert_clean(o)
