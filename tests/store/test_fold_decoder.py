"""The shard decoder (:mod:`noon.store.readmodel.decoder`): a child process reads and decodes
shards while the fold writes. Its polls are the ones the folding process would read itself,
a fold through it gives the read model a fold in one process gives, a child killed mid-fold
leaves the folding process to read the rest, and a folding process killed mid-pipeline loses
nothing: the next fold resumes and its child goes with it."""

from __future__ import annotations

import itertools
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from noon.core.hlc import Clock
from noon.store.readmodel import model as model_module
from noon.store.readmodel.decoder import Decoder, polls, start_of
from noon.store.readmodel.documents import PENDING
from noon.store.readmodel.model import ReadModel
from noon.store.readmodel.schema import FILE_NAME
from noon.store.readmodel.unfolded import read_meta
from noon.store.shard import ShardReader
from tests.harness.bulkshards import write_shards
from tests.harness.snapshot import snapshot

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def read_model(directory: Path, path: Path | None = None) -> ReadModel:
    return ReadModel(directory, path, Clock(), lambda: 1_800_000_000_000)


def flat(taken: Any) -> tuple[Any, ...]:
    """What the fold reads of a shard's polls: op ids, corrupt lines, line offsets, positions."""
    out = []
    state = None
    for polled, _, _, after in taken:
        assert polled is not None
        state = after
        out.append(
            (
                [
                    (op.node, op.seq, op.el, op.val, op.digest, op.known, op.stub)
                    for op in polled.ops
                ],
                [(c.line, c.reason) for c in polled.corrupt],
                sorted(polled.at.items()),
            )
        )
    return [x for poll in out for x in poll[0]], [c for poll in out for c in poll[1]], state


def test_the_child_reads_what_this_process_reads_and_a_killed_child_is_taken_over(
    tmp_path: Path,
) -> None:
    write_shards(tmp_path, 3000)
    path = tmp_path / "node0.jsonl"
    here = flat(polls(ShardReader(path), 64 << 10))

    decoder = Decoder()
    assert decoder.proc is not None
    try:
        # A shard whose file is gone by the time it is read: its one poll says so, and the
        # fold leaves it there, before its end mark.
        missing = decoder.ask(start_of(ShardReader(tmp_path / "node9.jsonl")), 64 << 10)
        number = decoder.ask(start_of(ShardReader(path)), 64 << 10)
        left = decoder.polls(ShardReader(tmp_path / "node9.jsonl"), 64 << 10, missing)
        assert next(left)[0] is None
        reader = ShardReader(path)
        taken = decoder.polls(reader, 64 << 10, number)
        first = [next(taken)]  # the child answered: it holds more polls of the shard
        decoder.proc.kill()
        child = flat(first + list(taken))
    finally:
        decoder.close()
    assert decoder.proc is None  # the rest was read here
    assert child[0] == here[0] and child[1] == here[1]
    assert child[2] == here[2] == (reader.inode, reader.offset, reader.line, reader.tail_mark)
    assert len(here[1]) == 1  # the line that is not an op, reported by both
    assert [op[6] for op in here[0]].count(True) == 1  # and the stub, a stub in both


def test_a_fold_through_the_child_is_a_fold_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_shards(tmp_path, 4000)
    alone = read_model(tmp_path)
    alone.refresh()
    expected = snapshot(alone.conn)
    alone.close()

    started: list[Decoder] = []

    class Watched(Decoder):
        def __init__(self) -> None:
            super().__init__()
            started.append(self)

    monkeypatch.setattr(model_module, "WORTH", 0)
    monkeypatch.setattr(model_module, "Decoder", Watched)
    piped = read_model(tmp_path)
    piped.chunk_ops, piped.poll_bytes = 700, 48 << 10  # many commits, at the child's edges
    opened = piped.conn
    piped.refresh()
    assert len(started) == 1 and started[0].proc is None  # used, and closed after
    assert piped.conn is opened  # not rebuilt
    assert snapshot(piped.conn) == expected
    piped.close()


KILLED = """
import os, sys
from pathlib import Path
from noon.core.chain import Stub
from noon.core.hlc import Clock
from noon.store.readmodel import decoder, model
from noon.store.readmodel.model import ReadModel
from noon.store.readmodel.schema import FILE_NAME
from noon.store.readmodel.schema import FILE_NAME

class Told(decoder.Decoder):
    def __init__(self):
        super().__init__()
        print(self.proc.pid, flush=True)

model.WORTH, model.Decoder = 0, Told
directory = Path(sys.argv[1])
m = ReadModel(directory, directory / FILE_NAME, Clock(), lambda: 1_800_000_000_000)
m.chunk_ops, m.poll_bytes = 500, 16 << 10
commits = 0
def commit(tx, meta, commit=m._commit, **kw):
    global commits
    commit(tx, meta, **kw)
    commits += 1
    if commits == 3:
        print("committed", flush=True)
        sys.stdin.readline()  # killed here, mid-fold
m._commit = commit
m.refresh()
print("finished", flush=True)
"""


def test_a_fold_killed_mid_pipeline_resumes_and_its_child_goes(tmp_path: Path) -> None:
    write_shards(tmp_path, 4000)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    child = os.pidfd_open(int(proc.stdout.readline()))  # readable once the child has ended
    assert proc.stdout.readline().strip() == "committed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert proc.stdin is not None
    proc.stdin.close()
    # The child finds its pipes closed and ends.
    ended, _, _ = select.select([child], [], [], 120)
    os.close(child)
    assert ended, "the decoder outlived the fold that started it"

    resumed = read_model(tmp_path, tmp_path / FILE_NAME)
    held = resumed.conn.execute("SELECT sum(offset) FROM shards").fetchone()[0]
    assert held > 0  # three commits survived the kill
    assert read_meta(resumed.conn, PENDING, None) == 1  # and left their documents
    resumed.refresh()
    fresh = read_model(tmp_path)
    fresh.refresh()
    assert snapshot(resumed.conn) == snapshot(fresh.conn)
    resumed.close()
    fresh.close()


def test_the_child_marks_commit_points_no_further_apart_than_the_folds_own_polls(
    tmp_path: Path,
) -> None:
    """Read in small polls, a shard offers the fold a commit point where a poll of the fold's
    own size would have ended, never later: its transactions hold no more than before."""
    write_shards(tmp_path, 6000)
    reader = ShardReader(tmp_path / "node0.jsonl")
    every, cap = 200 << 10, 48 << 10
    points = [0] + [state[1] for _, _, edge, state in polls(reader, cap, every) if edge]
    gaps = [b - a for a, b in itertools.pairwise(points)]
    assert len(gaps) >= 3
    assert all(every - cap < gap <= every for gap in gaps)
