"""noon's own lossless export: every operation of every shard, verbatim.

Format: a header line ``{"noon_export":1,"exported_by":<node>,"ops":<count>}``, then the op lines
exactly as they are in the shards (same bytes, so the same identities and digests), grouped by
author in seq order. Only ops the store has folded are exported (never half a batch).

Importing restores the ops into the shards of their authors, the way replication would: ops an
author's shard here lacks are appended to it (under its lock); ops it already holds are checked
to be byte-identical (a difference is a forked shard and aborts the import before anything is
written). Nothing is re-stamped, so history, conflict heads and provenance survive unchanged and
re-importing adds nothing.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from noon.core.ops import Op, OpError, decode
from noon.names import shard_file, shard_node
from noon.store.shard import (
    NotRegular,
    fsync_dir,
    list_shards,
    lock_path,
    locked,
    mapped,
    open_regular,
    repair_tail,
    write_all,
)
from noon.store.store import Store
from noon.transfer import jsontext
from noon.transfer.errors import TransferError

FORMAT = 1
HEADER_KEY = "noon_export"


def export_lines(store: Store) -> Iterator[bytes]:
    """The export, line by line (without newlines)."""
    store.refresh()
    chosen: list[tuple[str, int, bytes]] = []
    for name in list_shards(store.dir):
        try:
            raw = (store.dir / name).read_bytes()
        except FileNotFoundError:
            continue
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            try:
                op = decode(line)
            except OpError:
                continue  # reported by the store; not an op
            if store.fold.holds(op.node, op.seq):
                chosen.append((op.node, op.seq, line.rstrip(b"\r")))
    chosen.sort(key=lambda t: (t[0], t[1]))
    unique = list({(n, s): line for n, s, line in chosen}.items())
    yield json.dumps(
        {HEADER_KEY: FORMAT, "exported_by": store.node, "ops": len(unique)},
        separators=(",", ":"),
    ).encode()
    for _, line in unique:
        yield line


def is_noon_export(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0]
    try:
        obj = jsontext.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(obj, dict) and HEADER_KEY in obj


@dataclass
class NoonExport:
    ops: dict[str, list[tuple[Op, bytes]]]
    """author -> (op, verbatim line), in seq order"""


def parse(data: bytes, source: str) -> NoonExport:
    lines = data.split(b"\n")
    try:
        header = jsontext.loads(lines[0])
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get(HEADER_KEY) != FORMAT:
        raise TransferError(f"{source}: line 1: not a noon export header (format {FORMAT})")
    problems: list[tuple[int, str]] = []
    by_node: dict[str, dict[int, tuple[Op, bytes]]] = {}
    for no, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        line = line.rstrip(b"\r")
        try:
            op = decode(line)
        except OpError as exc:
            problems.append((no, str(exc)))
            continue
        seen = by_node.setdefault(op.node, {}).get(op.seq)
        if seen is not None and seen[1] != line:
            problems.append((no, f"two different ops {op.node}:{op.seq} in the export"))
        by_node[op.node][op.seq] = (op, line)
    if problems:
        raise TransferError.lines(source, problems)
    return NoonExport({n: [ops[s] for s in sorted(ops)] for n, ops in by_node.items()})


def _local_ops(path: Path, source: str) -> dict[int, bytes]:
    """The ops of the shard at ``path`` by seq; an entry there that is not a regular file (a
    link, a FIFO) refuses the import before anything is written (nothing is written through
    it, PROTOCOL.md §10.4)."""
    for entry in (path, lock_path(path)):
        if os.path.lexists(entry) and not stat.S_ISREG(os.lstat(entry).st_mode):
            raise TransferError(f"{source}: {_refused(entry)}")
    with mapped(path) as buf:
        raw = bytes(buf)
    held: dict[int, bytes] = {}
    for line in raw.split(b"\n"):
        try:
            op = decode(line)
        except OpError:
            continue
        held[op.seq] = line.rstrip(b"\r")
    return held


def restore(directory: Path, export: NoonExport, source: str) -> tuple[int, int]:
    """Append what the shards here lack. Returns (ops added, ops already present)."""
    plan: dict[str, list[bytes]] = {}
    present = 0
    for node, ops in export.ops.items():
        path = directory / shard_file(node)
        held = _local_ops(path, source)
        top = max(held, default=0)
        for op, line in ops:
            if op.seq in held:
                if held[op.seq] != line:
                    raise TransferError(
                        f"{source}: operation {node}:{op.seq} differs from the one in "
                        f"{path.name} (a forked shard); nothing was imported"
                    )
                present += 1
            elif op.seq > top:
                plan.setdefault(node, []).append(line)
            else:
                present += 1  # compacted away here: superseded, nothing to restore
    added = 0
    for node, lines in plan.items():
        path = directory / shard_file(node)
        assert shard_node(path.name) == node
        try:
            added += _append(directory, path, node, lines)
        except NotRegular as exc:  # placed between the check above and this write
            raise TransferError(f"{source}: {exc}; {added} operations were restored") from None
    return added, present


def _append(directory: Path, path: Path, node: str, lines: list[bytes]) -> int:
    """Append to ``node``'s shard the ``lines`` past its last op, under its lock; never through a
    link (:func:`open_regular`). Returns how many were appended."""
    with locked(path):
        created = not os.path.lexists(path)
        fd = open_regular(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        try:
            tail = repair_tail(fd, node)
            last = tail.last.seq if tail.last else 0
            fresh = [ln for ln in lines if decode(ln).seq > last]
            write_all(fd, b"".join(ln + b"\n" for ln in fresh))
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(directory)
    return len(fresh)


def _refused(path: Path) -> str:
    return (
        f"{path} is not a regular file (noon never writes through a link, a FIFO or a "
        "directory in its place); move it away. Nothing was imported"
    )
