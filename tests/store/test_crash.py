"""A writer killed with SIGKILL at arbitrary points of appends and compactions loses nothing it
acknowledged, and the shard always reads."""

import os
import random
import signal

import pytest

from tests.harness.stores import open_store, writer

pytestmark = pytest.mark.integration


def kill_loop(noon_dir, rounds: int, seed: int) -> None:
    rnd = random.Random(seed)
    acked: list[str] = []
    for r in range(rounds):
        proc = writer(noon_dir, "victim", f"r{r}", 1000, compact_every=3)
        want = rnd.randint(1, 8)
        assert proc.stdout is not None
        for _ in range(want):
            line = proc.stdout.readline()
            assert line.startswith("ack "), proc.stderr.read() if proc.stderr else line
            acked.append(line.split()[3])
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        store = open_store(noon_dir, "checker")
        assert not store.corrupt, store.corrupt
        for tag in acked:
            round_tag, i = tag.rsplit("-", 1)
            for j in range(1 + int(i) % 3):
                el = store.fold.elements.get(("content", "default", f"{round_tag}-{i}-{j}"))
                assert el is not None and not el.deleted, (tag, j)


def test_sigkill_during_appends_and_compactions_loses_no_acknowledged_write(noon_dir):
    kill_loop(noon_dir, rounds=12, seed=1)


@pytest.mark.slow
def test_sigkill_soak(noon_dir):
    kill_loop(noon_dir, rounds=200, seed=int(os.environ.get("NOON_SEED", "7")))
