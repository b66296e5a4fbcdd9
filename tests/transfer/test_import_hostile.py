"""Hostile files given to ``noon import``: a Nocturne SQLite file whose schema would make a read
evaluate something (a generated column growing each row to 150 MB, a view or a virtual table
standing in for a table) is refused before any row is read, in a real process whose address
space is capped, and imports nothing; an honest file beside it imports as before."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness.mesh import ROOT, subprocess_env
from tests.harness.nocturne import SQLITE_DDL, nocturne_db

pytestmark = pytest.mark.integration

ADDRESS_SPACE = 1 << 30
"""What the importing process may map: far below what evaluating the hostile file needs."""


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def noon_import(d: Path, source: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "noon", "import", str(source), "--dir", str(d), "--node-id", "n1"],
        # glibc reserves address space per malloc arena (64 MiB each, one per busy thread):
        # two arenas keep the cap about what the import maps, not how its threads raced
        env=subprocess_env(NOON_FSYNC="false", MALLOC_ARENA_MAX="2"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_capped,
    )
    return done, time.monotonic() - started


MAKE_DB = (
    "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); "
    "db.executescript(sys.stdin.read()); db.commit(); db.close()"
)


def hostile_db(path: Path, memories: str) -> None:
    """Nocturne's schema with ``memories`` defined by ``memories`` (DDL), and rows in it."""
    ddl = SQLITE_DDL.replace(
        SQLITE_DDL[
            SQLITE_DDL.index("CREATE TABLE memories") : SQLITE_DDL.index("CREATE TABLE edges")
        ],
        memories,
    )
    # written by a process of its own: SQLite's heap limit and allocator state are per process,
    # and this one has run every test before it
    subprocess.run(
        [sys.executable, "-c", MAKE_DB, str(path)], input=ddl, text=True, check=True, timeout=60
    )


GENERATED = (
    "CREATE TABLE memories (id INTEGER PRIMARY KEY, node_uuid VARCHAR(36), seed TEXT,"
    " content TEXT GENERATED ALWAYS AS (printf('%.*c', 150000000, 'x')) VIRTUAL,"
    " deprecated BOOLEAN DEFAULT 0, migrated_to INTEGER, created_at DATETIME);"
    " INSERT INTO memories (id, node_uuid, seed) SELECT value, 'n' || value, 'x'"
    " FROM (WITH RECURSIVE c(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM c"
    " WHERE value < 10) SELECT value FROM c);\n"
)
VIEW = (
    "CREATE TABLE real_memories (id INTEGER PRIMARY KEY, n INTEGER);"
    " INSERT INTO real_memories VALUES (1, 1);"
    " CREATE VIEW memories AS SELECT id, 'n' AS node_uuid, printf('%.*c', 150000000, 'x')"
    " AS content, 0 AS deprecated, NULL AS migrated_to, NULL AS created_at FROM real_memories;\n"
)


@pytest.mark.parametrize(
    ("memories", "said"),
    [
        (GENERATED, "table memories has generated columns (content)"),
        (VIEW, "not a Nocturne Memory database (missing tables: memories)"),
    ],
    ids=["generated-column", "view"],
)
def test_a_file_that_would_evaluate_something_is_refused_unread(
    tmp_path: Path, memories: str, said: str
) -> None:
    source = tmp_path / "nocturne.db"
    hostile_db(source, memories)
    assert source.stat().st_size < 64 << 10
    d = tmp_path / "noon"
    done, took = noon_import(d, source)
    assert done.returncode == 1, done.stderr[-2000:]
    assert said in done.stderr and "MemoryError" not in done.stderr
    assert took < 60
    assert not list(d.glob("*.jsonl"))  # nothing stored
    honest = tmp_path / "honest.db"
    nocturne_db(honest)
    done, _ = noon_import(d, honest)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (d / "n1-import.jsonl").stat().st_size > 0
