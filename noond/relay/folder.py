"""A relay in a folder that a sync tool copies between machines (PROTOCOL.md §14).

Every object is written to a hidden temporary name in its directory and renamed into place, so
a reader on this machine never sees half an object. A sync tool may still deliver one late, in
pieces or twice: its temporary files, conflicted copies (``x.sync-conflict-...``, ``x
(conflicted copy)``) and partial downloads carry names outside the layout and are never listed;
a partial file under a valid name fails its AEAD and is read again when it changes."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from noond.relay.backend import Conflict, Entry, Missing, RelayDown, TooLarge
from noond.relay.seal import ROOT, parse_name


class Folder:
    def __init__(self, url: str, path: str) -> None:
        self.url = url
        self.base = Path(path)
        self.root = self.base / ROOT

    def _path(self, name: str) -> Path:
        if parse_name(name) is None:
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
                name = path.relative_to(self.root).as_posix()
                if parse_name(name) is None:
                    continue
                try:
                    st = os.stat(path, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                out.append(Entry(name, st.st_size, f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"))
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

    def _write(self, path: Path, body: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            with open(tmp, "xb") as f:
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def put(self, name: str, body: bytes) -> None:
        try:
            self._write(self._path(name), body)
        except OSError as exc:
            raise RelayDown(f"{name}: {exc}") from None

    def put_head(self, name: str, body: bytes, expect: str | None) -> str:
        """One writer per head (its author's noond) makes this check enough; a sync tool has no
        conditional write to offer."""
        path = self._path(name)
        try:
            st = os.stat(path, follow_symlinks=False)
            now: str | None = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
        except FileNotFoundError:
            now = None
        if now != expect:
            raise Conflict(f"{name} changed since it was read")
        try:
            self._write(path, body)
            st = os.stat(path, follow_symlinks=False)
        except OSError as exc:
            raise RelayDown(f"{name}: {exc}") from None
        return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"

    def delete(self, name: str) -> None:
        try:
            self._path(name).unlink(missing_ok=True)
        except OSError as exc:
            raise RelayDown(f"{name}: {exc}") from None
