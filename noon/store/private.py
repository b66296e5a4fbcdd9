"""Files only their owner can read: every directory noon creates is 0700 and every file 0600
(shards, locks, the read model, the collection journal, peer state, certificates, exports),
whatever the umask. Another account on the machine reads nothing of the memory, and cannot
plant or rewrite a file in it (PROTOCOL.md §10.5).

A directory created before this rule (0755 with 0644 files) is not changed behind the owner's
back: :func:`loose_entries` lists what other accounts may read or write, and ``noon doctor``
names each entry with the one command that fixes them all (:func:`fix_command`).
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700
OTHERS = 0o077
"""The permission bits of the group and of everyone else: none of them is ever set."""


def make_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) as a directory only its owner can enter; an
    existing one is left as it is (see :func:`loose_entries`)."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)


def create_file(path: Path) -> None:
    """Create ``path`` empty, mode :data:`FILE_MODE`, unless it exists; never through a link.
    For files another library creates with its own mode (SQLite keeps the mode of a file it
    finds, and gives its ``-wal`` and ``-shm`` the database's)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def loose_entries(directory: Path) -> list[tuple[str, int]]:
    """Everything under ``directory`` (itself as ``.``) that the group or other accounts may
    read, write or enter, with its mode bits, in walking order. Symbolic links are not
    followed (their own modes mean nothing); an unreadable entry is skipped."""
    out: list[tuple[str, int]] = []

    def look(path: Path, shown: str) -> None:
        try:
            st = os.lstat(path)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            return
        if st.st_mode & OTHERS:
            out.append((shown, stat.S_IMODE(st.st_mode)))
        if stat.S_ISDIR(st.st_mode):
            try:
                names = sorted(os.listdir(path))
            except OSError:
                return
            for name in names:
                look(path / name, name if shown == "." else f"{shown}/{name}")

    look(directory, ".")
    return out


def fix_command(directory: Path) -> str:
    """The shell command that takes every permission of the group and other accounts away
    from ``directory`` and everything in it (links are not followed)."""
    return f"chmod -R go= {shlex.quote(str(directory))}"
