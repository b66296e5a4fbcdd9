"""Learn of a local write at once: Linux inotify on ``NOON_DIR``, through ctypes.

Any process of the machine may append to the shards written here (sessions, the CLI, an
import), so the daemon watches the files rather than asking every writer to tell it: the
kernel reports an append as it happens, whoever made it, with no change to the write path
and nothing a writer can forget. Where inotify is not available (not Linux, no libc symbol,
the per-user watch limit reached) :func:`open_watch` says so and the daemon polls as before;
it polls as well while watching (a fallback for an event queue that overflowed).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import struct
from pathlib import Path

log = logging.getLogger("noond")

IN_MODIFY = 0x00000002
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_Q_OVERFLOW = 0x00004000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_EVENT = struct.Struct("iIII")
"""wd, mask, cookie, length of the name that follows (NUL padded)."""
READ_BYTES = 64 << 10


class DirWatch:
    """Appends, creations and renames into one directory, as the names they touched."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def changed(self) -> set[str] | None:
        """Names touched since the last call (empty: nothing); None: events were lost (the
        queue overflowed), so anything may have changed."""
        names: set[str] = set()
        while True:
            try:
                data = os.read(self.fd, READ_BYTES)
            except BlockingIOError:
                return names
            if not data:
                return names
            at = 0
            while at + _EVENT.size <= len(data):
                _, mask, _, length = _EVENT.unpack_from(data, at)
                if mask & IN_Q_OVERFLOW:
                    self._drain()
                    return None
                name = data[at + _EVENT.size : at + _EVENT.size + length].rstrip(b"\0")
                at += _EVENT.size + length
                if name:
                    names.add(os.fsdecode(name))

    def _drain(self) -> None:
        try:
            while os.read(self.fd, READ_BYTES):
                pass
        except BlockingIOError:
            return

    def close(self) -> None:
        os.close(self.fd)


def open_watch(directory: Path) -> DirWatch | None:
    """A watch on ``directory``, or None where inotify cannot be had (the reason is logged)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init, add = libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError):
        log.info("no inotify here: local writes are noticed by polling")
        return None
    init.argtypes, init.restype = [ctypes.c_int], ctypes.c_int
    add.argtypes, add.restype = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32], ctypes.c_int
    fd = init(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0:
        _unavailable(directory, ctypes.get_errno())
        return None
    if add(fd, os.fsencode(directory), IN_MODIFY | IN_MOVED_TO | IN_CREATE) < 0:
        _unavailable(directory, ctypes.get_errno())
        os.close(fd)
        return None
    return DirWatch(fd)


def _unavailable(directory: Path, code: int) -> None:
    hint = (
        " (raise fs.inotify.max_user_watches or max_user_instances)"
        if code
        in (
            errno.ENOSPC,
            errno.EMFILE,
        )
        else ""
    )
    log.warning(
        "cannot watch %s with inotify: %s%s; local writes are noticed by polling",
        directory,
        os.strerror(code),
        hint,
    )
