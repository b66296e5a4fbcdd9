"""Checkpoints on disk (PROTOCOL.md §13.5, :mod:`noon.core.checkpoint`): one per shard whose
author signed one, in ``NOON_DIR/.noon/<shard>.checkpoint``, written by the author when it
first signs, or by a node that verified it against the author's certified key before adopting
it. A replica adopting a checkpoint drops the lines of that shard the checkpoint does not cover
(the author no longer held them when it signed: compacted, collected, or never its own), so
what it holds and serves is exactly what the author vouches for."""

from __future__ import annotations

from pathlib import Path

from noon.core import chain
from noon.core import checkpoint as cps
from noon.core.checkpoint import Checkpoint
from noon.names import shard_file
from noon.store import chainstate
from noon.store.compact import maintenance
from noon.store.lines import clean_end, envelope, lines_forwards
from noon.store.shard import locked, mapped, write_file


def _lines(directory: Path, shard: str) -> list[tuple[int, bytes]]:
    try:
        with mapped(directory / shard_file(shard)) as buf:
            end = clean_end(buf)
            out = []
            for _, raw in lines_forwards(buf, 0, end):
                env = envelope(raw)
                if env is not None and env.node == shard:
                    out.append((env.seq, bytes(raw)))
            return out
    except FileNotFoundError:
        return []


def make_own(directory: Path, shard: str, sign: chain.Sign) -> Checkpoint | None:
    """The author's checkpoint over its shard's unsigned history, signed and kept once: when the
    shard holds lines and none of them is signed. The caller holds the shard's lock."""
    found = chainstate.checkpoint(directory, shard)
    if found is not None:
        return found
    lines = _lines(directory, shard)
    if not lines or any(chain.SIG_FIELD in raw for _, raw in lines):
        return None
    made = cps.make(shard, lines, sign)
    _keep(directory, made)
    chainstate.forget(directory, shard)
    return made


def _keep(directory: Path, cp: Checkpoint) -> None:
    target = chainstate.checkpoint_path(directory, cp.node)
    target.parent.mkdir(mode=0o700, exist_ok=True)
    write_file(target, cp.encode())


def ensure_own(directory: Path, shard: str, sign: chain.Sign) -> Checkpoint | None:
    """:func:`make_own` under the shard's lock (noond at start: peers can take the checkpoint
    before the next write)."""
    if not (directory / shard_file(shard)).exists():
        return None
    with locked(directory / shard_file(shard)):
        return make_own(directory, shard, sign)


def adopt(directory: Path, cp: Checkpoint) -> int:
    """Keep ``cp`` (verified by the caller) for its shard, and drop the lines of the local copy
    it does not cover; returns how many were dropped. Under the maintenance lock, so no
    compaction plans on the copy meanwhile."""
    shard = cp.node
    with maintenance(directory), locked(directory / shard_file(shard)):
        kept: list[bytes] = []
        dropped = 0
        for seq, raw in _lines(directory, shard):
            if seq > cp.seq or cp.covers(seq, raw):
                kept.append(raw)
            else:
                dropped += 1
        if dropped:
            write_file(directory / shard_file(shard), (raw + b"\n" for raw in kept))
        _keep(directory, cp)
        chainstate.forget(directory, shard)
    return dropped
