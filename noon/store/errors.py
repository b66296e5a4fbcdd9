"""Errors of the store a person must act on, shared by every module of ``noon.store`` (so the
replication layer needs nothing from the store's fold to raise them)."""

from __future__ import annotations

from noon.errors import Unavailable


class StoreError(Unavailable):
    """A store problem a person must act on. The message says what to do."""


class ForkDetected(StoreError):
    """Two different ops share one identity: a shard was forked (restored backup, reused id)."""


class ShardBehind(StoreError):
    """The own shard holds fewer ops than a copy of it elsewhere: writing would reuse seqs."""


class DiskFull(StoreError):
    """The disk holding ``NOON_DIR`` is full: a write was refused, and nothing was written."""
