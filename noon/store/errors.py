"""The errors of the store a person must act on."""

from __future__ import annotations

from noon.errors import NoonError


class StoreError(NoonError):
    """A store problem a person must act on. The message says what to do."""


class ForkDetected(StoreError):
    """Two different ops share one identity: a shard was forked (restored backup, reused id)."""


class ShardBehind(StoreError):
    """The own shard holds fewer ops than a copy of it elsewhere: writing would reuse seqs."""
