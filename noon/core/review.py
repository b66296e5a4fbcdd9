"""Whose decision a review element holds, and what a decision may cover (PROTOCOL.md §1.5).

A review element ``["review", ns, subject, reviewer]`` holds the decision of the machine it
names, and only that machine can make it: of its versions, only those *written by* ``reviewer``
(the op's ``node``, the shard's author) count, and the latest of them (by seq: one machine's
writes are ordered) is the decision. A version another machine wrote never approves anything in
the name of ``reviewer``. The one thing it may do is send a decision back to the queue: a
tombstone naming ``reviewer``'s latest version in ``prev`` withdraws it (how "back to the queue"
was written before this rule, and still the only cross-machine write honest code makes). That is
always the safe direction: at worst a change is shown for review again.

A decision covers nothing stamped at or after it: a machine cannot have seen, so cannot have
approved, an op whose stamp its own clock had not passed (every node's clock moves past what it
folds, noon.core.hlc). A verdict counts only for a change stamped before it; a watermark
``{"through": {author: seq}}`` covers an author's ops up to that seq *and* stamped before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from noon.core.ops import Op

VERDICTS = ("approved", "rolled_back")
"""The verdicts a decision may hold; any other value is no decision."""


def decision(versions: Iterable[Op], reviewer: str) -> Op | None:
    """The live decision of ``reviewer`` among the held versions of its review element, or None
    (it never decided, withdrew, or another machine's tombstone withdrew its latest version)."""
    own: Op | None = None
    withdrawn: set[tuple[str, int]] = set()
    for op in versions:
        if op.node == reviewer:
            if own is None or op.seq > own.seq:
                own = op
        elif op.val is None and op.prev:
            withdrawn.update(op.prev)
    if own is None or own.val is None or own.id in withdrawn:
        return None
    return own


def verdict_of_value(val: Mapping[str, Any] | None) -> str | None:
    """The verdict a decision on one change holds (None: a value that is no verdict)."""
    found = val.get("verdict") if val is not None else None
    return found if found in VERDICTS else None
