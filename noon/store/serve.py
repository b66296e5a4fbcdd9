"""The read side of replication: what a node tells and serves of the shards it holds.

A shard holds the ops of one author, in increasing ``seq`` order (the author appends in order,
replicas only ever append ops above their highest seq, compaction keeps the order). So a seq
cursor is a binary search away from a byte offset, and a compaction on either side never makes
a cursor invalid: the cursor names ops, not bytes.

Served pages hold complete batches only, so a batch never reaches a peer half-written. Lines are
served verbatim: a peer stores exactly the bytes the author wrote (unknown future fields and
kinds included), which is what makes a duplicate tell itself apart from a fork by digest.
Nothing here writes; :mod:`noon.store.receive` is the side that stores what peers send.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from noon.names import shard_file, shard_node
from noon.store.errors import ForkDetected
from noon.store.lines import (
    BatchGate,
    Buffer,
    clean_end,
    digest,
    digest_at,
    envelope,
    first_after,
    last_complete,
    lines_backwards,
    lines_forwards,
)
from noon.store.shard import list_shards, mapped

Checks = Sequence[tuple[int, int]]
"""(seq, digest) pairs of one shard, compared by a peer to find a forked history."""

MAX_CHECKS = 32
"""Most (seq, digest) pairs one request may ask a peer to compare."""
CHECKS_SENT = 16
"""How many of its newest ops at or below the cursor a node asks a peer to compare."""


@dataclass(frozen=True)
class Summary:
    """What a node holds of one shard: the highest complete seq and the digest of that op."""

    node: str
    seq: int
    digest: int


@dataclass(frozen=True)
class Page:
    body: bytes
    """Complete lines (each ending in a newline), verbatim from the shard."""
    ops: int
    last: int
    """Seq of the last op in the page; the cursor for the next page (``after`` when empty)."""
    more: bool
    """The page stopped at the size limit; ask again with ``after=last``."""
    head: int
    """Highest complete seq of the shard when the page was read."""
    checked: bool
    """At least one of the reader's digests (``check``, ``checks``) was compared with an op
    held here (False when none was sent or none of those ops is held any more)."""


def summary_of(buf: Buffer, end: int, node: str) -> Summary:
    """The highest seq of a shard whose batch is complete, and that op's digest."""
    entries = ((raw, envelope(raw)) for _, raw in lines_backwards(buf, end))
    last = last_complete(entries).last
    env = envelope(last) if last is not None else None
    if last is None or env is None:
        return Summary(node, 0, 0)
    return Summary(node, env.seq, digest(last))


def digest_of(path: Path, seq: int) -> int | None:
    """The line digest of the op with ``seq`` in a shard, or None when the shard lacks it."""
    with mapped(path) as buf:
        return digest_at(buf, clean_end(buf), seq)


def recent_digests(path: Path, at_or_below: int, count: int = CHECKS_SENT) -> list[tuple[int, int]]:
    """(seq, digest) of a shard's newest ``count`` ops with ``seq <= at_or_below``, newest
    first. Sent with a pull or a push beside ``check``: when the peer no longer holds the op at
    the cursor itself (compacted, or collected with a deleted element), one of these still
    shows a forked history (a node restored from a backup wrote other ops under these seqs)."""
    with mapped(path) as buf:
        out: list[tuple[int, int]] = []
        for _, raw in lines_backwards(buf, first_after(buf, clean_end(buf), at_or_below)):
            if len(out) >= count:
                break
            env = envelope(raw)
            if env is not None:
                out.append((env.seq, digest(raw)))
        return out


def _compare(buf: Buffer, end: int, name: str, checks: Checks, who: str) -> int:
    """Compare a peer's (seq, digest) pairs with the ops held here; raise
    :class:`ForkDetected` on the first that differs. Returns how many could be compared."""
    compared = 0
    for seq, theirs in checks:
        mine = digest_at(buf, end, seq)
        if mine is None:
            continue  # compacted or collected here: nothing to compare
        if mine != theirs:
            raise ForkDetected(
                f"forked shard {name}: op {seq} differs between this node "
                f"(digest {mine:016x}) and the {who} (digest {theirs:016x})"
            )
        compared += 1
    return compared


def compare(path: Path, checks: Checks, *, who: str) -> int:
    """:func:`_compare` on a shard file (a push's checks, before anything is stored)."""
    with mapped(path) as buf:
        return _compare(buf, clean_end(buf), path.name, checks, who)


def read_after(
    path: Path, after: int, *, max_bytes: int, check: int | None = None, checks: Checks = ()
) -> Page:
    """The ops of a shard with ``seq > after``, complete batches only, about ``max_bytes`` at
    most (a page always holds at least one batch when one exists, so paging makes progress).

    ``check`` is the reader's digest of its own op at ``after``, ``checks`` more (seq, digest)
    pairs of its ops (:func:`recent_digests`); when this shard holds one of those ops with
    other bytes, :class:`ForkDetected` is raised instead of serving a forked history."""
    with mapped(path) as buf:
        end = clean_end(buf)
        pairs = [(after, check)] if check is not None and after > 0 else []
        checked = _compare(buf, end, path.name, [*pairs, *checks], "reader") > 0
        # [start, stop) of the runs of lines served: the page is cut from the file in one
        # piece unless a line not served (blank, undecodable) lies between.
        spans: list[list[int]] = []
        size = ops = 0
        last = after
        more = False
        gate: BatchGate[tuple[int, int, int]] = BatchGate()
        pos = first_after(buf, end, after)
        for nxt, raw in lines_forwards(buf, pos, end):
            start, pos = pos, nxt
            env = envelope(raw)
            if env is None:
                continue
            if size >= max_bytes and not gate.open:
                more = True
                break
            for seq, first, stop in gate.feed((env.seq, start, nxt), env.node, env.seq, env.bat):
                if spans and spans[-1][1] == first:
                    spans[-1][1] = stop
                else:
                    spans.append([first, stop])
                size += stop - first
                ops += 1
                last = seq
        body = b"".join(buf[first:stop] for first, stop in spans)
        head = summary_of(buf, end, shard_node(path.name) or "").seq
        return Page(body, ops, last, more, head, checked)


class Summaries:
    """Per-shard summaries of a directory, recomputed only for files whose identity changed
    (inode, size, mtime), so an idle round costs one ``stat`` per shard."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._cache: dict[str, tuple[tuple[int, int, int], Summary]] = {}

    def get(self, node: str) -> Summary:
        path = self.dir / shard_file(node)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self._cache.pop(node, None)
            return Summary(node, 0, 0)
        ident = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._cache.get(node)
        if cached and cached[0] == ident:
            return cached[1]
        with mapped(path) as buf:
            summary = summary_of(buf, clean_end(buf), node)
        self._cache[node] = (ident, summary)
        return summary

    def nodes(self) -> list[str]:
        return [node for node in map(shard_node, list_shards(self.dir)) if node is not None]

    def all(self) -> dict[str, Summary]:
        return {node: self.get(node) for node in self.nodes()}
