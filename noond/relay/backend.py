"""The seam between the relay protocol and where objects live (PROTOCOL.md §14): a synced
folder (:mod:`noond.relay.folder`) or an S3-compatible bucket (:mod:`noond.relay.bucket`).

Calls block (file system, HTTP); the relay runs them in threads. Names are relative to
:data:`noond.relay.seal.ROOT` under the relay's own prefix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from noon.config import ConfigError


@dataclass(frozen=True)
class Entry:
    name: str
    size: int
    version: str
    """Changes whenever the object does (an ETag; size and mtime in a folder)."""
    copy: str | None = None
    """Where a sync tool's conflicted copy of ``name`` is stored (a folder relay only)."""

    @property
    def stored(self) -> str:
        """What to ask the backend for."""
        return self.copy or self.name


class RelayDown(OSError):
    """The relay could not be reached or answered with an error: nothing was changed here."""


class Missing(RelayDown):
    """The object is not (or no longer) there."""


class Conflict(RelayDown):
    """A conditional write found the object changed since it was read."""


class TooLarge(RelayDown):
    """The object is larger than the reader takes."""


class Backend(Protocol):
    url: str
    """Where, as the operator wrote it (without credentials: there are none in it)."""

    def list(self) -> list[Entry]: ...

    def get(self, name: str, limit: int) -> bytes: ...

    def put(self, name: str, body: bytes) -> None: ...

    def put_head(self, name: str, body: bytes, expect: str | None) -> str:
        """Write ``name`` if its version is still ``expect`` (None: it must not exist); the
        new version. Raises :class:`Conflict` otherwise."""
        ...

    def delete(self, name: str) -> None: ...


def open_backend(url: str, *, timeout: float = 10.0) -> Backend:
    """A backend for ``file:///path`` or ``s3://bucket/prefix?region=R&endpoint=E&path_style=1``."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        from noond.relay.folder import Folder

        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ConfigError(f"NOOND_RELAY: {url!r} is not file:///absolute/path")
        return Folder(url, parts.path)
    if parts.scheme == "s3":
        from noond.relay.bucket import Bucket

        if not parts.netloc:
            raise ConfigError(f"NOOND_RELAY: {url!r} names no bucket (s3://bucket/prefix)")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(query) - {"region", "endpoint", "path_style"}
        if unknown:
            raise ConfigError(f"NOOND_RELAY: {url!r}: unknown parameter {sorted(unknown)[0]!r}")
        return Bucket(
            url,
            parts.netloc,
            parts.path.strip("/"),
            region=query.get("region"),
            endpoint=query.get("endpoint"),
            path_style=query.get("path_style", "") in ("1", "true", "yes"),
            timeout=timeout,
        )
    raise ConfigError(f"NOOND_RELAY: {url!r} is neither s3://bucket/prefix nor file:///path")
