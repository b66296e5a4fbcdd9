"""A relay in a folder that a sync tool copies between machines (PROTOCOL.md §14).

Every object is written to a hidden temporary name in its directory and moved into place, so
a reader on this machine never sees half an object. A head's conditional write is atomic among
the writers of this file system: create-if-absent is a hard link of the finished temporary file
(which fails if the name exists), a replace checks the version and renames under an exclusive
``flock`` of ``.lock`` in the relay's root (released by the kernel if the writer dies; over NFS
it is a lock the server keeps). A sync tool writes without either: what it delivers under a
head's name is seen as a changed version, and two machines writing one name leave it a
conflicted copy.

A sync tool may deliver an object late, in pieces or twice. Its temporary files and partial
downloads carry names outside the layout and are never listed; a partial file under a valid
name fails its AEAD and is read again when it changes. Its conflicted copies (``x.sync-conflict-
DATE-TIME-DEVICE.seg``, ``x (... conflicted copy ...).seg``) are listed as copies of ``x``:
sealed under ``x``'s name and signed by their author like any object, a reader takes one only
where it holds something the original does not (the original cut, refused or gone)."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from noond.relay.backend import Conflict, Entry, Missing, RelayDown, TooLarge
from noond.relay.seal import ROOT, parse_name

_CONFLICTED = re.compile(
    r"^(?P<stem>[^/]+?)"
    r"(?:\.sync-conflict-[0-9]{8}-[0-9]{6}-[A-Z0-9]{7}| \([^()/]*conflicted copy[^()/]*\))"
    r"(?P<ext>\.seg)?$"
)
"""Syncthing's ``.sync-conflict-...`` and Dropbox's or Nextcloud's ``(... conflicted copy ...)``,
before the extension (as they write them) or after the whole name."""

NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK, errno.EXDEV}
"""What ``link`` fails with on a file system without hard links (FAT, exFAT, some FUSE mounts)."""


def conflicted_original(name: str) -> str | None:
    """The object name a sync tool's conflicted copy stored at ``name`` is a copy of, or None."""
    directory, _, file = name.rpartition("/")
    m = _CONFLICTED.match(file)
    if m is None:
        return None
    original = f"{directory}/{m['stem']}{m['ext'] or ''}"
    return original if parse_name(original) is not None else None


def _version(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


class Folder:
    def __init__(self, url: str, path: str) -> None:
        self.url = url
        self.base = Path(path)
        self.root = self.base / ROOT

    def _path(self, name: str) -> Path:
        if parse_name(name) is None and conflicted_original(name) is None:
            raise ValueError(f"not a relay object name: {name!r}")
        return self.root / name

    def list(self) -> list[Entry]:
        if not self.base.is_dir():
            raise RelayDown(f"{self.base} is not a directory (is the synced folder there?)")
        out = []
        for top, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for f in files:
                path = Path(top) / f
                stored = path.relative_to(self.root).as_posix()
                name = stored if parse_name(stored) else conflicted_original(stored)
                if name is None:
                    continue
                try:
                    st = os.stat(path, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                copy = None if name == stored else stored
                out.append(Entry(name, st.st_size, _version(st), copy))
        return out

    def get(self, name: str, limit: int) -> bytes:
        try:
            fd = os.open(self._path(name), os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise Missing(name) from None
        except OSError as exc:
            raise RelayDown(f"{name}: {exc}") from None
        with os.fdopen(fd, "rb") as f:
            body = f.read(limit + 1)
        if len(body) > limit:
            raise TooLarge(f"{name} holds more than {limit} bytes")
        return body

    def _temporary(self, path: Path, body: bytes) -> tuple[Path, str]:
        """``body`` durable under a hidden name beside ``path``; that name and its version
        (kept by a rename or a link: the same inode, size and mtime)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        with open(tmp, "xb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
            return tmp, _version(os.fstat(f.fileno()))

    def put(self, name: str, body: bytes) -> None:
        path = self._path(name)
        tmp = None
        try:
            tmp, _ = self._temporary(path, body)
            os.replace(tmp, path)
        except OSError as exc:
            raise RelayDown(f"{name}: {exc}") from None
        finally:
            if tmp is not None:
                tmp.unlink(missing_ok=True)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def put_head(self, name: str, body: bytes, expect: str | None) -> str:
        path = self._path(name)
        tmp = None
        try:
            tmp, version = self._temporary(path, body)
            if expect is None:
                try:
                    os.link(tmp, path)  # atomic create-if-absent
                    return version
                except FileExistsError:
                    raise Conflict(f"{name} exists already") from None
                except OSError as exc:
                    if exc.errno not in NO_HARD_LINKS:
                        raise
            with self._locked():
                try:
                    now: str | None = _version(os.stat(path, follow_symlinks=False))
                except FileNotFoundError:
                    now = None
                if now != expect:
                    raise Conflict(f"{name} changed since it was read")
                os.replace(tmp, path)
            return version
        except OSError as exc:
            if isinstance(exc, Conflict):
                raise
            raise RelayDown(f"{name}: {exc}") from None
        finally:
            if tmp is not None:
                tmp.unlink(missing_ok=True)

    def delete(self, name: str) -> None:
        try:
            self._path(name).unlink(missing_ok=True)
        except OSError as exc:
            raise RelayDown(f"{name}: {exc}") from None
