"""server-noonien's shards: its ``NOONIEN_DIR`` (default ``~/.noonien``) or one ``<node>.jsonl``,
read, validated and folded into the knowledge graph server-noonien shows, for import.

A shard holds one operation per line (reference: its ``src/graph/operations.ts``)::

    {"name":"Ada","entityType":"person","v":1,"id":"<ts>|n1|0","ts":"<ts>",
     "hlc":"001767225600000:000000","node":"n1","seq":0,"type":"entity.create"}

with ``type`` one of ``entity.create|delete`` (``name``, ``entityType``),
``observation.add|delete`` (``entityName``, ``content``, ``slot`` on adds), ``relation.add|delete``
(``from``, ``to``, ``relationType``) and ``shard.compact`` (``generation``; ignored). Every op of
every shard is validated first; a bad line makes the import refuse with its place, except a torn
last line of a shard (a crash mid-append, which server-noonien ignores too), which is skipped
with a warning.

The fold is server-noonien's: each entity, observation occurrence (entity, content, slot) and
relation is a last-writer-wins register ordered by ``(hlc, node, seq)`` (``hlc`` missing: the
``ts`` milliseconds with counter 0); an observation delete hides every occurrence of its content
written before it; observations show only on present entities, relations only between present
entities; observations in op order, entities and relations sorted (UTF-16 order, like JS).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noon.transfer import jsontext
from noon.transfer.errors import TransferError
from noon.transfer.official import OfficialGraph

PAYLOADS: dict[str, tuple[str, ...]] = {
    "entity.create": ("name", "entityType"),
    "entity.delete": ("name",),
    "observation.add": ("entityName", "content"),
    "observation.delete": ("entityName", "content"),
    "relation.add": ("from", "to", "relationType"),
    "relation.delete": ("from", "to", "relationType"),
    "shard.compact": (),
}
SHARD_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\.jsonl$")
HLC = re.compile(r"^\d{15}:\d{6}$")
TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


@dataclass(frozen=True)
class NoonienOp:
    order: tuple[str, bytes, int]
    """``(hlc, node as UTF-16, seq)``: server-noonien's total order."""
    type: str
    payload: tuple[Any, ...]


@dataclass
class NoonienData:
    graph: OfficialGraph
    shards: list[str]
    ops: int
    warnings: list[str] = field(default_factory=list)


def looks_like_shard(head: bytes) -> bool:
    """Whether the first non-blank line of a file is a server-noonien operation."""
    for raw in head.split(b"\n"):
        if raw.strip():
            try:
                obj = jsontext.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                return False
            return isinstance(obj, dict) and obj.get("type") in PAYLOADS and "v" in obj
    return False


def shard_files(path: Path) -> list[Path]:
    """The shards of a server-noonien directory (lock, temp and daemon files are not)."""
    return sorted(
        p for p in path.iterdir() if SHARD_NAME.match(p.name) and ".." not in p.name and p.is_file()
    )


def _canonical_ts(ts: object) -> int | None:
    """The ms of a canonical ``Date.toISOString()`` stamp, or None."""
    if not isinstance(ts, str) or not TS.match(ts):
        return None
    try:
        parsed = dt.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    return int(parsed.timestamp() * 1000 + 0.5)


def _op(obj: object) -> tuple[str, NoonienOp] | str:
    """An op with the id it must be unique under, or what is wrong with it."""
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    kind = obj.get("type")
    if kind not in PAYLOADS:
        return f"unknown operation type {kind!r}"
    if obj.get("v") != 1:
        return f"operation version {obj.get('v')!r} (this import reads version 1)"
    node, seq, ts, hlc = obj.get("node"), obj.get("seq"), obj.get("ts"), obj.get("hlc")
    if not isinstance(node, str) or not node:
        return "'node' must be a non-empty string"
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        return "'seq' must be a non-negative integer"
    ms = _canonical_ts(ts)
    if ms is None:
        return f"'ts' must be an ISO time like 2026-01-01T00:00:00.000Z, got {ts!r}"
    if obj.get("id") != f"{ts}|{node}|{seq}":
        return f"'id' must be {ts}|{node}|{seq}, got {obj.get('id')!r}"
    if hlc is not None and (not isinstance(hlc, str) or not HLC.match(hlc)):
        return f"'hlc' must look like 001767225600000:000000, got {hlc!r}"
    payload: list[Any] = []
    for name in PAYLOADS[kind]:
        if not isinstance(obj.get(name), str):
            return f"{kind} without a string {name!r}"
        payload.append(obj[name])
    if kind == "observation.add":
        slot = obj.get("slot", 0)
        if not isinstance(slot, int) or isinstance(slot, bool) or slot < 0:
            return "'slot' must be a non-negative integer"
        payload.append(slot)
    stamp = hlc if hlc is not None else f"{ms:015d}:000000"
    return obj["id"], NoonienOp((stamp, node.encode("utf-16-be"), seq), kind, tuple(payload))


def read(path: Path) -> NoonienData:
    """Every op of a directory's shards (or of one shard file), validated, deduplicated by id
    and folded. Raises :class:`TransferError` naming every bad line."""
    files = shard_files(path) if path.is_dir() else [path]
    if not files:
        raise TransferError(f"{path}: no server-noonien shard (<node>.jsonl) in this directory")
    ops: dict[str, tuple[str, NoonienOp]] = {}
    problems: list[str] = []
    warnings: list[str] = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{f.name}: not UTF-8 text ({exc.reason} at byte {exc.start})")
            continue
        lines = text.split("\n")
        last = max((i for i, ln in enumerate(lines) if ln.strip()), default=-1)
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                obj = jsontext.loads(line)
            except json.JSONDecodeError as exc:
                if i == last:
                    warnings.append(f"{f.name}:{i + 1}: torn last line (a crash mid-write) skipped")
                else:
                    problems.append(f"{f.name}:{i + 1}: not JSON ({exc.msg})")
                continue
            found = _op(obj)
            if isinstance(found, str):
                problems.append(f"{f.name}:{i + 1}: {found}")
                continue
            op_id, op = found
            seen = ops.get(op_id)
            if seen is not None and seen[1] != op:
                problems.append(
                    f"{f.name}:{i + 1}: another operation has id {op_id} ({seen[0]}): two "
                    "writers used one NOONIEN_NODE_ID"
                )
            elif seen is None:
                ops[op_id] = (f"{f.name}:{i + 1}", op)
    if problems:
        raise TransferError.listing(str(path), problems)
    graph = fold(op for _, op in ops.values())
    return NoonienData(graph, [f.name for f in files], len(ops), warnings)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def fold(ops: Iterable[NoonienOp]) -> OfficialGraph:
    entities: dict[str, NoonienOp] = {}
    relations: dict[tuple[str, str, str], NoonienOp] = {}
    adds: dict[tuple[str, str], dict[int, NoonienOp]] = {}
    deletes: dict[tuple[str, str], NoonienOp] = {}

    def later(table: dict[Any, NoonienOp], key: Any, op: NoonienOp) -> None:
        old = table.get(key)
        if old is None or op.order > old.order:
            table[key] = op

    for op in ops:
        if op.type.startswith("entity."):
            later(entities, op.payload[0], op)
        elif op.type.startswith("relation."):
            later(relations, op.payload, op)
        elif op.type == "observation.add":
            later(adds.setdefault(op.payload[:2], {}), op.payload[2], op)
        elif op.type == "observation.delete":
            later(deletes, op.payload, op)
    present = {name: op for name, op in entities.items() if op.type == "entity.create"}
    visible: list[NoonienOp] = []
    for group, slots in adds.items():
        if group[0] not in present:
            continue
        gone = deletes.get(group)
        visible += [a for a in slots.values() if gone is None or a.order > gone.order]
    observations: dict[str, list[str]] = {name: [] for name in present}
    for add in sorted(visible, key=lambda o: o.order):
        observations[add.payload[0]].append(add.payload[1])
    graph = OfficialGraph()
    for name in sorted(present, key=_utf16):
        graph.add(
            "entity",
            {
                "name": name,
                "entityType": present[name].payload[1],
                "observations": observations[name],
            },
        )
    for key in sorted(relations, key=lambda k: tuple(map(_utf16, k))):
        if relations[key].type == "relation.add" and key[0] in present and key[1] in present:
            graph.add("relation", dict(zip(("from", "to", "relationType"), key, strict=True)))
    return graph
