"""The write side of replication: validate what a peer sends, append it to a replica (or to
the own shard when recovering it), and merge a peer's whole copy of a shard into ours, keeping
every invariant of :mod:`noon.store.shard`. What is served lives in :mod:`noon.store.serve`.
"""

from __future__ import annotations

import bisect
import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from noon.core import chain
from noon.core.checkpoint import Checkpoint
from noon.core.compaction import stale_after_refetch
from noon.core.ops import Key, Op, OpError, decode
from noon.errors import Refused
from noon.names import shard_file
from noon.store import chainstate, forgotten
from noon.store.compact import maintenance
from noon.store.errors import ForkDetected
from noon.store.lines import clean_end, digest_at
from noon.store.shard import (
    HeldLock,
    append_all,
    fsync_dir,
    list_shards,
    locked,
    mapped,
    open_regular,
    read_regular,
    repair_tail,
    write_file,
)


class ReplicaError(Refused, ValueError):
    """Ops received from a peer that cannot be stored. The message says which line and why."""


class SkipsCompacted(ReplicaError):
    """Received ops skip seqs above this shard's head: the sender compacted them away.

    Appending past them would be wrong, not just incomplete: the missing ops may be the ones
    that superseded versions this replica still holds, and those would show again (a deleted
    memory would come back here). The replica must instead take the sender's whole shard
    (:func:`replace`)."""

    def __init__(self, node: str, before: int, first: int) -> None:
        super().__init__(
            f"ops {node}:{before + 1}..{first - 1} were compacted away by the sender; this replica "
            "must re-fetch the whole shard instead of appending past them"
        )


class Unproven(ReplicaError):
    """Ops their author's chain and signature do not prove (PROTOCOL.md §13): forged, changed,
    reordered, moved, spliced, signed with another key, or unsigned where a signature is due.
    Nothing of the body is stored."""


@dataclass(frozen=True)
class Appended:
    appended: int
    skipped: int
    head: int


def parse_ops(body: bytes, node: str, *, max_ops: int) -> list[tuple[bytes, Op]]:
    """Validate an NDJSON body of ops authored by ``node``: every line a valid op of that author,
    seqs strictly increasing, the last batch complete. Raises :class:`ReplicaError` naming the
    first bad line; nothing is stored from a body that fails."""
    out: list[tuple[bytes, Op]] = []
    prev = 0
    for no, raw in enumerate(body.split(b"\n"), 1):
        line = raw.rstrip(b"\r\t ")
        if not line:
            continue
        if len(out) >= max_ops:
            raise ReplicaError(f"more than {max_ops} ops in one body")
        try:
            op = decode(line)
        except OpError as exc:
            raise ReplicaError(f"line {no}: {exc}") from None
        if op.node != node:
            raise ReplicaError(f"line {no}: op of node {op.node!r} in the shard of {node!r}")
        if op.seq <= prev:
            raise ReplicaError(f"line {no}: seq {op.seq} does not follow seq {prev}")
        prev = op.seq
        out.append((line, op))
    if out and out[-1][1].bat not in (None, out[-1][1].seq):
        last = out[-1][1]
        raise ReplicaError(
            f"the last op (seq {last.seq}) belongs to a batch ending at seq {last.bat} that "
            "the body does not complete"
        )
    return out


def append(
    directory: Path,
    node: str,
    ops: list[tuple[bytes, Op]],
    *,
    fsync: bool,
    held: HeldLock | None = None,
    allow_skip: bool = False,
    consumed: int = 0,
    check: chain.Verify | None = None,
) -> Appended:
    """Append validated ops (from :func:`parse_ops`, in increasing seq order) to ``node``'s shard
    under its lock (or under ``held``, the same lock taken earlier by the caller).

    Ops the shard already holds are skipped when byte-identical; one that differs raises
    :class:`ForkDetected` and nothing is written. Ops at or below the shard's highest seq that
    it no longer holds (compacted away) are skipped: the shard already moved past them. Used
    for replicas and for recovering the node's own shard from a peer alike: in both cases the
    lines are the author's, verbatim.

    Unless ``allow_skip``, new ops that skip a seq above the head of a non-empty shard raise
    :class:`SkipsCompacted` and nothing is written. ``consumed`` is the cursor of the pull this
    body belongs to: ops up to it came in earlier pages (stored, or not stored again because
    this node collected them: :mod:`noon.store.forgotten`), so no gap below it is a gap.

    With ``check`` (the author's certified keys), the new ops must continue the author's chain
    from this shard's head and end on a signature that verifies (:func:`noon.core.chain.verify`),
    else :class:`Unproven` and nothing is written; ops not stored again because this node
    collected them leave a stub, so the chain here stays whole."""
    path = directory / shard_file(node)
    if held is not None and held.shard != path:
        raise ValueError(f"the lock held is {held.shard}, not {path}")
    with contextlib.nullcontext() if held is not None else locked(path):
        created = not os.path.lexists(path)
        early: chain.Proven | None = None
        cp = chainstate.checkpoint(directory, node) if check is not None else None
        if created and check is not None and ops:
            early = _prove(node, chain.empty(node), ops, check, cp)  # before any file exists
        fd = open_regular(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        try:
            tail = repair_tail(fd, node)
            last = tail.last.seq if tail.last else 0
            skipped = 0
            split = bisect.bisect_right(ops, last, key=_seq)  # ops increase by seq
            old, new = ops[:split], ops[split:]
            if old:
                with mapped(path) as buf:
                    end = clean_end(buf)
                    for _line, op in old:
                        mine = digest_at(buf, end, op.seq)
                        if mine is not None and mine != op.digest:
                            raise ForkDetected(
                                f"forked shard {path.name}: op {node}:{op.seq} received from a "
                                f"peer differs from the one held here (digest {op.digest:016x} "
                                f"vs {mine:016x}); refusing to merge"
                            )
                        skipped += 1
            gone = forgotten.load(directory)
            if last and not allow_skip:
                expect = max(last, consumed) + 1
                for line, op in new:
                    if op.seq >= expect:
                        if op.seq != expect or line.startswith(chain.STUB_PREFIX):
                            raise SkipsCompacted(node, expect - 1, op.seq)
                        expect += 1
            kept = new
            if new and new[0][1].seq < gone.floor.get(node, 0):  # else none is covered
                kept = [(line, op) for line, op in new if not gone.covers(op)]
            skipped += len(new) - len(kept)
            fresh = [line for line, _ in kept]
            if check is not None and new:
                at = chainstate.head(
                    directory, node, (last, tail.last.digest) if tail.last else None
                )
                proven = (
                    early if early is not None and not last else _prove(node, at, new, check, cp)
                )
                if len(kept) < len(new):
                    fresh = chain.restub(
                        node, [(op.seq, line, not gone.covers(op)) for line, op in new], at, cp
                    )
            if fresh:
                append_all(fd, b"\n".join(fresh) + b"\n", fsync=fsync)
                if fsync and created:
                    fsync_dir(directory)
            head = max(last, ops[-1][1].seq) if ops else last
            if check is not None and new:
                chainstate.remember(directory, node, proven.head, new[-1][1].digest)
        finally:
            os.close(fd)
    return Appended(len(kept), skipped, head)


def _seq(item: tuple[bytes, Op]) -> int:
    return item[1].seq


def _prove(
    node: str,
    at: chain.Head,
    ops: list[tuple[bytes, Op]],
    check: chain.Verify,
    cp: Checkpoint | None,
) -> chain.Proven:
    try:
        return chain.verify(node, at, [(op.seq, line) for line, op in ops], check, cp)
    except chain.ChainError as exc:
        raise Unproven(str(exc)) from None


def _decoded(raw: bytes) -> list[tuple[bytes, Op]]:
    out = []
    for line in raw.splitlines():
        if line.strip():
            try:
                out.append((line, decode(line)))
            except OpError:
                continue
    return out


def _read(path: Path) -> bytes:
    """A shard's bytes (empty when it is missing or not a regular file)."""
    try:
        return read_regular(path, 1 << 40)
    except FileNotFoundError:
        return b""


def _ops_on(directory: Path, keys: set[Key], *, besides: Path) -> list[Op]:
    """Every op held in ``directory`` on one of ``keys``, in any shard but ``besides``."""
    return [
        op
        for name in list_shards(directory)
        if name != besides.name
        for _, op in _decoded(_read(directory / name))
        if op.el in keys
    ]


def replace(
    directory: Path, node: str, fetched: Path, *, fsync: bool, check: chain.Verify | None = None
) -> bool:
    """Merge ``fetched`` (a peer's whole copy of ``node``'s shard, validated complete lines)
    into this replica, atomically; see :class:`SkipsCompacted`. Not done when the shard
    meanwhile got past the copy's head. Holds the directory's maintenance lock, so no
    compaction or collection plans on the copy being replaced.

    The result is the peer's copy, except at or below our old head: there an op we no longer
    hold never comes back (we removed it: tombstone collection relies on that, PROTOCOL.md
    §11.3), and an op the peer no longer holds goes when it would otherwise be a stale head
    and its going exposes nothing (:func:`~noon.core.compaction.stale_after_refetch`).

    With ``check``, the peer's copy must be proven whole by its author's chain and last
    signature (else :class:`Unproven`, nothing changed), and the merged copy gets a stub in
    every gap, so it stays provable to whoever pulls it from here."""
    path = directory / shard_file(node)
    try:
        with maintenance(directory), locked(path):
            theirs = _decoded(_read(fetched))
            mine = _decoded(_read(path))
            cp = chainstate.checkpoint(directory, node)
            if check is not None:
                try:
                    chain.verify(
                        node, chain.empty(node), [(op.seq, line) for line, op in theirs], check, cp
                    )
                except chain.ChainError as exc:
                    raise Unproven(f"the whole copy of {node}: {exc}") from None
            ours = {op.seq: (line, op) for line, op in mine if not op.stub}
            head = max(ours, default=0)
            if not theirs or head > theirs[-1][1].seq:
                return False
            merged: dict[int, bytes] = {}
            kept: list[Op] = []
            gone = forgotten.load(directory)
            for line, op in theirs:
                if op.stub:
                    continue  # their dropped lines: gaps to the merge, bridged at the end
                held = ours.get(op.seq)
                if op.seq > head:
                    if not gone.covers(op):
                        merged[op.seq] = line
                        kept.append(op)
                elif held is not None:
                    if held[1].digest != op.digest:
                        raise ForkDetected(
                            f"forked shard {path.name}: op {node}:{op.seq} of the peer's copy "
                            "differs from the one held here; refusing to merge"
                        )
                    merged[op.seq] = line
                    kept.append(op)
            missing = [op for seq, (_, op) in ours.items() if seq not in merged and op.known]
            keys = {op.el for op in missing}
            stale = stale_after_refetch(
                missing,
                [op for op in kept if op.el in keys] + _ops_on(directory, keys, besides=path),
            )
            for seq, (line, op) in ours.items():
                if seq not in merged and op.id not in stale:
                    merged[seq] = line
            lines = [(seq, merged[seq]) for seq in sorted(merged)]
            # Stubs of either copy are gaps here: every gap is bridged again from the leaves
            # either copy knows (a line kept from ours may lie inside one of their stubs).
            body = [line for _, line in lines]
            if any(chain.SIG_FIELD in line for line, _ in theirs):  # a signed shard
                values = chain.known(node, [(op.seq, line) for line, op in theirs])
                for seq, value in chain.known(node, [(op.seq, line) for line, op in mine]).items():
                    if seq not in values or (not values[seq][1] and value[1]):
                        values[seq] = value  # the same leaf; ours knows the line's digest
                body = chain.bridge(node, lines, values, cp)
            write_file(path, (line + b"\n" for line in body), durable=fsync)
            chainstate.forget(directory, node)
            return True
    finally:
        fetched.unlink(missing_ok=True)
