"""Issue 26, finding 10: a compaction on a disk that cannot hold a second copy of its shard.

A shard of long, many times rewritten texts fills most of a small tmpfs the test mounts: the
free space is less than the shard, so the old compaction (a full copy beside the old file,
the whole file in memory) could not work there. Now ``noon compact`` needs room for what the
shard keeps only; it streams, so its memory does not grow with the shard's bytes; a
compaction killed (SIGKILL) while it writes its copy or just before the rename leaves the shard
as it was, and the next one removes the dead copy first and succeeds on the same small disk.
Each time the fold of what remains equals the fold of what was there."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench.shards import ShardWriter
from noon.core.chain import parse_stub
from noon.core.elements import content_key
from noon.core.ops import Draft, decode
from noon.store.compact import COPY_SUFFIX
from noon.store.readmodel.behind import free_bytes
from tests.harness.fold import Fold
from tests.harness.small_disk import small_disk

pytestmark = pytest.mark.integration

MEMORIES, VERSIONS, WORDS = 40, 12, 3000
"""About 9 MiB of shard; a history of 0 keeps one version in twelve."""


def _build(d: Path) -> None:
    rnd = random.Random(26)
    writer = ShardWriter(d, "n1")
    last: dict[str, int] = {}
    for v in range(VERSIONS):
        drafts = [
            Draft(
                content_key("default", f"m{m}"),
                {"text": f"v{v} " + " ".join(f"w{rnd.randrange(10**6)}" for _ in range(WORDS))},
                prev=(("n1", last[f"m{m}"]),) if v else (),
            )
            for m in range(MEMORIES)
        ]
        first = writer.seq + 1
        writer.batch(drafts)
        last = {f"m{m}": first + m for m in range(MEMORIES)}


def _winners(shard: Path) -> dict[Any, Any]:
    fold = Fold()
    fold.apply_all(
        decode(raw) for raw in shard.read_bytes().splitlines() if parse_stub(raw) is None
    )
    return {key: el.winner.val for key, el in fold.elements.items()}


def _compact_cli(d: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "noon",
            "compact",
            "--dir",
            str(d),
            "--node-id",
            "n1",
            "--history",
            "0",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _stopped(proc: subprocess.Popen[str]) -> bool:
    try:
        state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state == "T"


def _stop_in(d: Path, where: str) -> None:
    """Run a compaction that stops itself ``where``, wait (bounded) until it has, kill -9."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.harness.compact_proc", str(d), "0", "--stop-in", where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    try:
        while not _stopped(proc):
            assert proc.poll() is None, f"it ended instead of stopping: {proc.communicate()}"
            assert time.monotonic() < deadline, "the compaction never reached its stop"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)


@pytest.fixture
def disk(tmp_path: Path) -> Any:
    with small_disk(tmp_path / "disk", "14m") as mounted:
        yield mounted


@pytest.mark.parametrize("killed_in", [None, "copy", "rename"])
def test_a_shard_larger_than_the_free_space_compacts(
    disk: Path, tmp_path: Path, killed_in: str | None
) -> None:
    _build(disk)
    shard = disk / "n1.jsonl"
    before = shard.read_bytes()
    want = _winners(shard)
    assert free_bytes(disk) < len(before), "the disk must not hold a second full copy"

    if killed_in is not None:
        _stop_in(disk, killed_in)
        assert shard.read_bytes() == before, "a killed compaction changed the shard"
        left = [p.name for p in disk.iterdir() if p.name.endswith(COPY_SUFFIX)]
        assert left == [f".n1.jsonl{COPY_SUFFIX}"], left
        assert free_bytes(disk) < len(before) // 2, "the dead copy holds the room it took"

    done = _compact_cli(disk)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["shards"][0]["before"] == MEMORIES * VERSIONS, report
    assert report["shards"][0]["after"] == MEMORIES, report
    after = shard.read_bytes()
    assert len(after) < len(before) // 8
    assert _winners(shard) == want
    assert not [p for p in disk.iterdir() if p.name.endswith(COPY_SUFFIX)]


def test_a_compaction_s_memory_does_not_grow_with_the_shard_s_bytes(tmp_path: Path) -> None:
    """It holds a few chunks of the file (64 KiB here, so they do not hide the shard) and the
    ops without their values; the old one held the file, its lines and their values."""
    d = tmp_path / "store"
    d.mkdir()
    _build(d)
    size = (d / "n1.jsonl").stat().st_size
    run = subprocess.run(
        [sys.executable, "-m", "tests.harness.compact_proc", str(d), "0", "--chunk", "65536"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    cost = json.loads(run.stdout)
    assert cost["reports"][0]["after"] == MEMORIES
    assert cost["peak_bytes"] < size // 4, f"compacting {size} bytes held {cost['peak_bytes']}"
