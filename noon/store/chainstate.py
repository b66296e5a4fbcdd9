"""Where a shard stands in its author's chain (:mod:`noon.core.chain`): the chain value after
its last line, needed to sign the next batch (the own shard) or to verify the next page (a
replica). Walking a shard from its first line costs its size, so the head is remembered in a
small file per shard (``NOON_DIR/.noon/<node>.chain``, written under the shard's lock), good
while the shard still ends on the same line (seq and digest): compaction and collection
rewrite a shard but never its last line, so only an append moves it. A missing or stale
record is walked again; it is a cache, never a source of truth (a wrong one would only make
the next signature or page fail)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import orjson

from noon.core import chain
from noon.core import checkpoint as cps
from noon.core.checkpoint import MAX_CHECKPOINT_SEQ, Checkpoint
from noon.names import shard_file
from noon.store.lines import clean_end, envelope, lines_forwards
from noon.store.private import FILE_MODE
from noon.store.shard import mapped, read_regular

MAX_CHECKPOINT_FILE = MAX_CHECKPOINT_SEQ * 24 + 4096
"""A checkpoint file's largest size: base64 of 16 bytes a seq, and its frame."""
RECORD_BYTES = 256
"""A record's size on disk, padded with spaces (JSON ignores them)."""


def _record(directory: Path, node: str) -> Path:
    return directory / ".noon" / f"{node}.chain"


def checkpoint_path(directory: Path, shard: str) -> Path:
    return directory / ".noon" / f"{shard}.checkpoint"


_loaded: dict[Path, tuple[tuple[int, int, int], Checkpoint]] = {}
"""Checkpoints read, by file and its identity: every page received asks, and walking a large
checkpoint's leaves to its link costs a hash per seq."""


def checkpoint(directory: Path, shard: str) -> Checkpoint | None:
    """The author's checkpoint kept for ``shard`` (:mod:`noon.store.checkpoints`), or None.
    Only verified ones are ever written there."""
    path = checkpoint_path(directory, shard)
    try:
        st = os.stat(path)
    except OSError:
        return None
    ident = (st.st_ino, st.st_mtime_ns, st.st_size)
    held = _loaded.get(path)
    if held is not None and held[0] == ident:
        return held[1]
    try:
        found = cps.parse(read_regular(path, MAX_CHECKPOINT_FILE), shard, lambda _m, _s: True)
    except (OSError, chain.ChainError):
        return None
    if len(_loaded) > 1024:
        _loaded.clear()
    _loaded[path] = (ident, found)
    return found


def head(directory: Path, node: str, last: tuple[int, int] | None) -> chain.Head:
    """The chain head of ``node``'s shard in ``directory``, which ends on ``last`` (seq,
    digest; None: empty). The caller holds the shard's lock."""
    if last is None:
        return chain.empty(node)
    try:
        obj = orjson.loads(read_regular(_record(directory, node), 4096))
        if obj["seq"] == last[0] and obj["digest"] == last[1]:
            value = bytes.fromhex(obj["chain"]) if obj["chain"] else None
            return chain.Head(last[0], value, bool(obj["proven"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    found = walk(directory / shard_file(node), node)
    remember(directory, node, found, last[1])
    return found


def walk(path: Path, node: str) -> chain.Head:
    """The chain head of a shard file, from its first line."""
    try:
        with mapped(path) as buf:
            end = clean_end(buf)
            lines = []
            for _, raw in lines_forwards(buf, 0, end):
                env = envelope(raw)
                if env is not None and env.node == node:
                    lines.append((env.seq, raw))
    except FileNotFoundError:
        return chain.empty(node)
    return chain.walk(node, lines, checkpoint(path.parent, node))


def remember(directory: Path, node: str, at: chain.Head, digest: int) -> None:
    """Record ``at`` as the head of ``node``'s shard, whose last line has ``digest``."""
    record = {
        "seq": at.seq,
        "digest": digest,
        "chain": at.chain.hex() if at.chain else "",
        "proven": at.proven,
    }
    path = _record(directory, node)
    with contextlib.suppress(OSError):  # a cache: the next use walks the shard instead
        path.parent.mkdir(mode=0o700, exist_ok=True)
        # Rewritten in place at a fixed size, not renamed or truncated (either costs more than
        # the signature); a torn record does not parse, and the shard is walked instead.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
        try:
            os.pwrite(fd, orjson.dumps(record).ljust(RECORD_BYTES), 0)
        finally:
            os.close(fd)


def forget(directory: Path, node: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_record(directory, node))
