"""Nemesis runs on real daemons: every acknowledged write survives, nothing deleted comes back,
every replica converges, forks are reported. CI runs a sized-down configuration; the soak
(``NOON_SLOW=1``, ``NOON_SOAK_SECONDS``) repeats runs and prints a summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.nemesis import Config, Outcome, run_once, seed_from_env
from tests.noond_harness import Pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


def assert_clean(outcome: Outcome) -> None:
    assert not outcome.anomalies, (
        f"NOON_SEED={outcome.seed} reproduces this run; anomalies:\n" +
        "\n".join(outcome.anomalies)
    )


def test_nemesis_ci_sized(tmp_path: Path, pki: Pki) -> None:
    seed = seed_from_env()
    print(f"nemesis seed: NOON_SEED={seed}")
    outcome = run_once(tmp_path, pki, seed, Config(nodes=3, steps=14))
    print(f"faults {dict(outcome.faults)}, writes {outcome.writes}, deletes {outcome.deletes}, "
          f"converged in {outcome.convergence:.2f}s")
    assert_clean(outcome)
    assert outcome.writes > 20 and outcome.deletes > 0
    assert sum(outcome.faults.values()) >= 10
