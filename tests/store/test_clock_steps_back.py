"""Issue 26 item 4: after the wall clock stepped back more than the skew bound (60 s), a second
process of the machine stamped its ops below the last one in the shard. Real writer processes
of one node, under a wall clock that libfaketime steps back for all of them at once."""

from __future__ import annotations

import glob
import itertools
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from noon.core.ops import decode
from tests.harness.mesh import ROOT, subprocess_env

pytestmark = pytest.mark.integration

FAKETIME = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))


class Writer:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def write(self, tag: str) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"write {tag}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line.startswith("ack "), line
        return int(line.split()[2])


@pytest.fixture
def wall(tmp_path: Path) -> Path:
    """The file libfaketime reads on every clock call: the offset of every process's wall
    clock from the real one, in seconds."""
    if not FAKETIME:
        pytest.skip("libfaketime is not installed (Debian: apt-get install libfaketime)")
    offset = tmp_path / "offset"
    offset.write_text("+0\n")
    return offset


def faked_env(offset: Path) -> dict[str, str]:
    return subprocess_env(
        LD_PRELOAD=FAKETIME[0], FAKETIME_TIMESTAMP_FILE=str(offset), FAKETIME_NO_CACHE="1"
    )


@contextmanager
def writer(directory: Path, offset: Path) -> Iterator[Writer]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.harness.stamp_writer", str(directory), "n1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=faked_env(offset),
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        yield Writer(proc)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def test_stamps_rise_strictly_across_processes_when_the_wall_clock_steps_back(
    tmp_path: Path, wall: Path
) -> None:
    store = tmp_path / "store"
    acked: list[int] = []
    with writer(store, wall) as a, writer(store, wall) as b:
        for i in range(3):
            acked += [a.write(f"a{i}"), b.write(f"b{i}")]
        wall.write_text("-120\n")  # the machine's clock steps back two minutes
        for i in range(3, 6):
            acked += [a.write(f"a{i}"), b.write(f"b{i}")]
        # An upgrade or `noon reindex` rebuilds the read model from the shards: the clock it
        # keeps is then what a fold derives, clamped to the (stepped back) wall clock.
        reindex = subprocess.run(
            [sys.executable, "-m", "noon", "reindex", "--dir", str(store), "--node-id", "n1"],
            env=faked_env(wall),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert reindex.returncode == 0, reindex.stderr
        with writer(store, wall) as c:
            for i in range(6, 9):
                acked += [c.write(f"c{i}"), a.write(f"a{i}")]
    stamps = [decode(line).hlc for line in (store / "n1.jsonl").read_bytes().splitlines()]
    assert stamps == acked
    falls = [(i, x, y) for i, (x, y) in enumerate(itertools.pairwise(stamps)) if y <= x]
    assert not falls, f"the node's stamps fell or repeated at {falls}"
