"""The seam between the relay protocol and where objects live (PROTOCOL.md §14): a synced
folder (:mod:`noond.relay.folder`) or an S3-compatible bucket (:mod:`noond.relay.bucket`).

Calls block (file system, HTTP); the relay runs them in threads. Names are relative to
:data:`noond.relay.seal.ROOT` under the relay's own prefix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from noon.errors import NoonError


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


class RelayDown(NoonError, OSError):
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
