"""When the read model cannot take in what the shards gained because the disk is full.

The shards stay the truth and stay readable; the read model keeps its last committed state.
Reads go on from that state and say so (:meth:`Behind.notice`); writes are refused (a plan made
without the latest ops could duplicate or conflict); the fold is tried again as soon as the
disk has more free space than when it failed, or :data:`RETRY_SECONDS` later, so a machine
whose disk filled up catches up by itself once space returns, at a bounded cost meanwhile.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from noon.core.hlc import utc

RETRY_SECONDS = 1.0
"""At most one fold attempt per this many seconds while the free space has not grown."""


LOW_SPACE = 1 << 20
"""Below this many free bytes, an I/O error of SQLite counts as a full disk (it reports one when
it cannot size its shared-memory file), never as a damaged file to delete."""


def full(exc: BaseException, where: Path | None = None) -> bool:
    """The disk (or the file system's quota) is full: SQLite could not write, or a file could
    not be written. ``where``: a directory on that disk, to tell SQLite's I/O errors apart."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if isinstance(exc, sqlite3.DatabaseError):
        code = getattr(exc, "sqlite_errorcode", None) or 0
        if code == sqlite3.SQLITE_FULL or "full" in str(exc):
            return True
        io_error = code & 0xFF == sqlite3.SQLITE_IOERR or "disk I/O error" in str(exc)
        return io_error and where is not None and free_bytes(where) < LOW_SPACE
    return False


def free_bytes(directory: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system of ``directory``."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize


@dataclass
class Behind:
    """The read model could not fold: what readers are told, and when to try again."""

    directory: Path
    reason: str
    """What failed, as a person reads it."""
    shown_ms: int
    """When the read model last folded everything: reads show the memory as it was then."""
    pending: int
    """Bytes of shard lines not folded yet."""
    free: int
    retry_at: float

    @classmethod
    def start(cls, directory: Path, reason: str, shown_ms: int, pending: int) -> Behind:
        return cls(
            directory,
            reason,
            shown_ms,
            pending,
            free_bytes(directory),
            time.monotonic() + RETRY_SECONDS,
        )

    def due(self) -> bool:
        """Try the fold again: space was freed, or a while went by."""
        return time.monotonic() >= self.retry_at or free_bytes(self.directory) > self.free

    def refusal(self) -> str:
        """Why a write is refused while the read model is behind."""
        return (
            f"Not written: {self.reason}, so this machine's read model cannot take in the "
            f"latest {self.pending} bytes of ops, and a write planned without them could "
            "duplicate or conflict. Nothing was written. Free space on the disk holding "
            f"{self.directory}: noon catches up by itself, then call again."
        )

    def notice(self) -> str:
        """What every answer says while the read model is behind."""
        return (
            f"⚠ This machine's memory is shown as it was at {utc(self.shown_ms)}: "
            f"{self.reason}, so {self.pending} bytes of newer ops in its shards are not shown "
            "yet. New writes are refused until space is freed on the disk holding "
            f"{self.directory} (a write reported done is durable in the shards and shows once "
            "noon catches up, by itself)."
        )
