"""The read model file is derived and never trusted: a file from another schema version, a
truncated or garbage file, a file with planted triggers, or anything that is not a regular file
at its path is thrown away and rebuilt from the shards, and nothing in it runs. Processes that
share it (sessions, the CLI, an import) at once, or one killed in the middle of a fold, leave
it showing exactly what the shards hold."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from noon.config import Settings
from noon.core.ops import Draft
from noon.names import shard_file
from noon.store.readmodel.schema import SCHEMA_VERSION, _check, connect
from noon.store.shard import Poll, ShardReader
from noon.store.store import Store, read_model_path
from tests.harness.kg_view import View
from tests.harness.mesh import ROOT, subprocess_env
from tests.harness.oracle import fold_of_dir, observe
from tests.harness.stores import plan_of
from tests.harness.uri_graph import Graph

NS = "default"


def settings(d: Path, node: str = "n1") -> Settings:
    return Settings.from_env({}, dir=d, node_id=node, fsync=False, compact_after=0)


def fill(d: Path, count: int, node: str = "n1") -> Store:
    store = Store(settings(d, node))
    for i in range(count):
        store.write(plan_of([Draft(("content", NS, f"m{i}"), {"text": f"memory {i}"})]))
    return store


def as_the_shards_say(d: Path) -> None:
    """A new process's view through the read model equals a fresh fold of the shard files."""
    fold = fold_of_dir(d)
    expected = observe(Graph(fold), View(fold, NS), fold)
    store = Store(settings(d, "checker"))
    with store.lock, store.graph.reading():
        assert observe(store.graph, store.kg(NS), store.fold) == expected


def test_a_file_from_another_schema_version_is_rebuilt(noon_dir: Path, caplog) -> None:
    fill(noon_dir, 5).close()
    with sqlite3.connect(read_model_path(noon_dir)) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION - 1,))
    as_the_shards_say(noon_dir)
    assert "rebuilt from the shards" in caplog.text


def test_a_truncated_file_is_rebuilt(noon_dir: Path) -> None:
    store = fill(noon_dir, 300)
    store.close()
    path = read_model_path(noon_dir)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    os.truncate(path, path.stat().st_size // 2)
    as_the_shards_say(noon_dir)


def test_a_file_just_created_is_the_schema_every_later_open_checks_for(tmp_path: Path) -> None:
    """The opener that creates the tables does not check them (what it wrote in one
    transaction is the schema); the check every later opener makes must find them whole, and
    the next open keeps the file rather than rebuilding it."""
    path = tmp_path / "readmodel.sqlite3"
    conn, inode = connect(path, tmp_path)
    try:
        _check(conn)
    finally:
        conn.close()
    again, inode_again = connect(path, tmp_path)
    again.close()
    assert inode_again == inode


@pytest.mark.parametrize("planted", ["garbage", "trigger", "symlink", "directory", "fifo"])
def test_a_planted_file_is_never_trusted_nor_run(noon_dir: Path, planted: str) -> None:
    fill(noon_dir, 3).close()
    path = read_model_path(noon_dir)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    outside = noon_dir.parent / "outside.txt"
    outside.write_text("not noon's\n")
    if planted == "garbage":
        path.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    elif planted == "trigger":  # the right schema, plus a trigger that would act on every fold
        Store(settings(noon_dir, "builder")).close()
        with sqlite3.connect(path) as db:
            db.execute("DELETE FROM shards")
            db.execute("CREATE TABLE pwned (x)")
            db.execute(
                "CREATE TRIGGER spy AFTER INSERT ON ops BEGIN INSERT INTO pwned VALUES (1); END"
            )
    elif planted == "symlink":
        path.symlink_to(outside)
    elif planted == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)
    started = time.monotonic()
    as_the_shards_say(noon_dir)
    assert time.monotonic() - started < 30  # a FIFO is never opened (it would block)
    assert outside.read_text() == "not noon's\n"
    assert path.is_file() and not path.is_symlink()
    with sqlite3.connect(path) as db:
        names = {n for (n,) in db.execute("SELECT name FROM sqlite_master")}
    assert "pwned" not in names and "spy" not in names


WRITER = r"""
import sys
from pathlib import Path
from noon.config import Settings
from noon.core.ops import Draft
from noon.store.store import Store
d, node, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = Store(Settings.from_env({}, dir=d, node_id=node, fsync=False, compact_after=200))
for i in range(count):
    store.write(lambda g, i=i: [Draft(("content", "default", f"{node}-{i}"), {"text": str(i)})])
    print(f"{node}-{i}", flush=True)
"""


@pytest.mark.integration
def test_writers_readers_the_cli_and_an_import_share_one_file_at_once(
    noon_dir: Path, tmp_path: Path
) -> None:
    official = tmp_path / "memory.jsonl"
    official.write_text(
        "\n".join(
            json.dumps({"type": "entity", "name": f"e{i}", "entityType": "t", "observations": []})
            for i in range(400)
        )
    )
    env = subprocess_env(NOON_DIR=str(noon_dir), NOON_NODE_ID="n1", NOON_FSYNC="false")
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(noon_dir), f"w{i}", "150"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        for i in range(2)
    ]
    importer = subprocess.Popen(
        [sys.executable, "-m", "noon", "import", str(official)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    readers = 0
    while any(p.poll() is None for p in (*writers, importer)):
        out = subprocess.run(
            [sys.executable, "-m", "noon", "log", "-n", "3"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        readers += 1
    acked = [line.strip() for p in writers for line in p.communicate(timeout=60)[0].splitlines()]
    assert all(p.returncode == 0 for p in writers)
    assert importer.wait(timeout=60) == 0, importer.stderr.read() if importer.stderr else ""
    assert readers >= 1 and len(acked) == 300
    store = Store(settings(noon_dir, "checker"))
    with store.lock, store.graph.reading():
        for name in acked:
            assert store.graph.content(NS, name) is not None, name
        assert len(store.kg(NS).entity_names()) == 400
    as_the_shards_say(noon_dir)


HELD_FOLDER = r"""
import signal
import sys
from pathlib import Path
from noon.core.hlc import Clock
from noon.store.readmodel import model
from noon.store.store import read_model_path, wall_ms

directory, stop_at = Path(sys.argv[1]), float(sys.argv[2])
folder = model.ReadModel(directory, read_model_path(directory), Clock(), wall_ms)
folder.conn.execute("PRAGMA cache_size = 32")  # pages spill into the WAL mid-transaction
folder.poll_bytes = 64 << 10


def tell(done: int, total: int) -> None:
    if done >= stop_at * total:
        print("holding", flush=True)
        while True:
            signal.pause()  # inside the fold's open transaction, until the test kills it


folder.on_progress = tell
folder.refresh()
print("finished", flush=True)
"""


def open_at_once(directory: Path, count: int) -> tuple[list[str], list[BaseException]]:
    """``count`` threads (as many open file descriptions, as processes have) open the read
    model in ``directory`` at the same moment: the journal modes they find, and their errors."""
    start = threading.Barrier(count)
    modes: list[str] = []
    errors: list[BaseException] = []

    def open_model() -> None:
        start.wait(timeout=30)
        try:
            conn, _ = connect(directory / "readmodel.sqlite3", directory)
        except BaseException as exc:
            errors.append(exc)
            return
        modes.append(conn.execute("PRAGMA journal_mode").fetchone()[0])
        conn.close()

    threads = [threading.Thread(target=open_model) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return modes, errors


def test_processes_creating_the_file_at_once_all_open_it(tmp_path: Path) -> None:
    """Turning a new file to WAL needs SQLite's exclusive lock, and SQLite answers 'database is
    locked' at once there instead of waiting: two sessions starting on a new store failed CI.
    Of 60 new files, each opened by four at once, every opener gets the file in WAL mode."""
    for round_ in range(60):
        directory = tmp_path / str(round_)
        directory.mkdir()
        modes, errors = open_at_once(directory, 4)
        assert errors == [], f"round {round_}"
        assert modes == ["wal"] * 4


@pytest.mark.integration
@pytest.mark.timeout(900)  # ~25 CPU seconds, mostly the oracle's fold: 300 s ran out at load 20
def test_a_fold_killed_mid_transaction_leaves_nothing_half_done(noon_dir: Path) -> None:
    """The folder says when it has folded a given share of the shard and then holds its open
    transaction until killed, so each kill lands mid-fold however fast the machine is."""
    lines = []
    for i in range(1, 40_001):
        stamp = (1_700_000_000_000 << 16) + i
        lines.append(
            f'{{"v":1,"node":"big","seq":{i},"hlc":{stamp},"el":["content","default",'
            f'"m{i % 1_500}"],"val":{{"text":"memory {i}"}}}}'
        )
    (noon_dir / "big.jsonl").write_text("\n".join(lines) + "\n")
    wal = Path(f"{read_model_path(noon_dir)}-wal")
    for share in (0.2, 0.5, 0.9):  # kill it at different points of the cold fold
        proc = subprocess.Popen(
            [sys.executable, "-c", HELD_FOLDER, str(noon_dir), str(share)],
            cwd=ROOT,
            env=subprocess_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        said = proc.stdout.readline().strip()  # the folder ends either way: held or finished
        assert said == "holding", f"the fold ended before {share:.0%} of the shard: {said!r}"
        assert wal.stat().st_size > 0  # uncommitted pages were written, and are now torn off
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
    as_the_shards_say(noon_dir)


@pytest.mark.integration
def test_noon_reindex_rebuilds_the_file_and_says_what_it_folded(noon_dir: Path) -> None:
    fill(noon_dir, 40).close()
    path = read_model_path(noon_dir)
    with sqlite3.connect(path) as db:  # a mark only the old file holds
        db.execute("INSERT INTO meta VALUES ('old', 1)")
    out = subprocess.run(
        [sys.executable, "-m", "noon", "reindex"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=subprocess_env(NOON_DIR=str(noon_dir), NOON_NODE_ID="n1"),
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "read model rebuilt: 40 ops folded" in out.stdout
    assert "folding" in out.stderr  # the progress bar, on stderr
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM meta WHERE key = 'old'").fetchone() == (0,)
    as_the_shards_say(noon_dir)


def test_a_sliced_refresh_stops_between_chunks_and_resumes_where_it_stopped(
    noon_dir: Path,
) -> None:
    """noond folds a long catch-up in slices (noond/fold.py): each ends at a committed chunk,
    and the slices together fold exactly what one refresh would."""
    from noon.core.hlc import Clock
    from noon.store.readmodel import model
    from noon.store.store import wall_ms

    fill(noon_dir, 60).close()
    read_model_path(noon_dir).unlink()
    folder = model.ReadModel(noon_dir, read_model_path(noon_dir), Clock(), wall_ms)
    folder.chunk_ops, folder.poll_bytes = 10, 1024  # a few ops per poll
    offsets = []
    for _ in range(20):
        folder.refresh(slice_ops=10)
        offsets.append(folder.conn.execute("SELECT offset FROM shards").fetchone()[0])
        if not folder.partial:
            break
    folder.close()
    assert len(offsets) >= 3  # several slices, each further on
    assert offsets == sorted(set(offsets))
    assert offsets[-1] == (noon_dir / "n1.jsonl").stat().st_size
    as_the_shards_say(noon_dir)


def test_a_fold_reads_only_the_shards_that_moved(
    noon_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write folds its own shard: the others, the files the read model saw last at the size
    and time it saw, are not read again, whichever process's handle folds; what it shows is
    still what the shards say."""
    for node in ("n2", "n3"):
        fill(noon_dir, 1, node).close()
    store, other = fill(noon_dir, 1), Store(settings(noon_dir, "n2"))
    polled: list[str] = []
    poll = ShardReader.poll

    def spied(reader: ShardReader, max_bytes: int | None = None) -> Poll:
        polled.append(reader.name)
        return poll(reader, max_bytes)

    monkeypatch.setattr(ShardReader, "poll", spied)
    store.write(plan_of([Draft(("content", NS, "mine"), {"text": "mine"})]))
    assert polled == [shard_file("n1")]
    polled.clear()
    other.write(plan_of([Draft(("content", NS, "theirs"), {"text": "theirs"})]))
    assert polled == [shard_file("n2")]
    polled.clear()
    store.refresh()  # another handle folded it: nothing is read here
    assert polled == []
    other.close()
    store.close()
    as_the_shards_say(noon_dir)
