"""A small file system a test mounts (tmpfs of a given size), filled up and freed on demand:
what a machine whose disk fills up meets. Mounting needs root (tests run as root here and in
CI); elsewhere the tests that need it skip with the reason."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PAGE = 4096


@contextmanager
def small_disk(where: Path, size: str = "8m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` for the duration (skips when mounting is not
    permitted)."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or 'not root'}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path, leave_pages: int = 0) -> Path:
    """Fill ``disk`` up with a filler file, then give back ``leave_pages`` pages of it: the
    disk is then full but for that many pages. Returns the filler (delete it to free space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (b"\0" * (256 * PAGE), b"\0" * PAGE):
            while True:
                try:
                    if os.write(fd, chunk) < len(chunk):
                        break
                except OSError:
                    break
        size = os.fstat(fd).st_size // PAGE * PAGE
        os.ftruncate(fd, max(0, size - leave_pages * PAGE))
    finally:
        os.close(fd)
    return filler


def empty_wal(read_model: Path) -> None:
    """Checkpoint the read model's write-ahead log and cut it to nothing, so the next fold
    must grow it (and cannot on a full disk)."""
    conn = sqlite3.connect(read_model)
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0, "another connection kept the checkpoint from finishing"
    finally:
        conn.close()
    assert os.path.getsize(f"{read_model}-wal") == 0
