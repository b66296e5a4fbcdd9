"""Errors of the store a person must act on, shared by every module of ``noon.store`` (so the
replication layer needs nothing from the store's fold to raise them)."""

from __future__ import annotations

from noon.core.ops import Op
from noon.errors import NoonError, Unavailable


class StoreError(Unavailable):
    """A store problem a person must act on. The message says what to do."""


class ForkDetected(StoreError):
    """Two different ops share one identity: a shard was forked (restored backup, reused id)."""


class ShardBehind(StoreError):
    """The own shard holds fewer ops than a copy of it elsewhere: writing would reuse seqs."""


class DiskFull(StoreError):
    """The disk holding ``NOON_DIR`` is full: a write was refused, and nothing was written."""


class AlreadyWritten(NoonError):
    """This very call was written before, by this machine, and still stands (its answer was
    lost): nothing was written again. ``batch`` is what it wrote (:mod:`noon.store.retries`)."""

    def __init__(self, batch: list[Op]) -> None:
        super().__init__(f"already written as {batch[0].node}:{batch[0].seq}")
        self.batch = batch
