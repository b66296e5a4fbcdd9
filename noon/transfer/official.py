"""The official memory server's file: ``memory.jsonl`` (and the legacy ``memory.json``).

One JSON object per line, ``{"type":"entity","name","entityType","observations"}`` or
``{"type":"relation","from","to","relationType"}``, entities first, compact, joined by ``\\n``
with no trailing newline (an empty graph is an empty file). Blank lines are skipped on reading,
like the official server does; unlike it (it silently drops them), lines of another type and
malformed lines are errors here, because an import must not lose anything quietly.

A file of JSON lines is read as a stream (:func:`open_lines`): checked whole first, then read
again a kind at a time while it is imported, so an import holds a chunk of it, not the file.

The same graph as one JSON document, ``{"entities": [...], "relations": [...]}`` with records
lacking ``type``, is read too: the legacy ``memory.json``, server-noonien's ``noonien export``
(pretty printed), and the text of ``read_graph`` (the official server's and noon's).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noon.kg.text import compact
from noon.transfer import jsontext
from noon.transfer.errors import TransferError


@dataclass
class OfficialGraph:
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, str]] = field(default_factory=list)

    def add(self, kind: str, record: dict[str, Any]) -> None:
        (self.entities if kind == "entity" else self.relations).append(record)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _record(obj: object) -> tuple[str, dict[str, Any]] | str:
    """A validated record, or what is wrong with it."""
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    kind = obj.get("type")
    if kind == "entity":
        if not isinstance(obj.get("name"), str):
            return "entity without a string 'name'"
        if not isinstance(obj.get("entityType"), str):
            return f"entity {obj['name']!r} without a string 'entityType'"
        observations = obj.get("observations", [])
        if not _strings(observations):
            return f"entity {obj['name']!r}: 'observations' must be a list of strings"
        return "entity", {
            "name": obj["name"],
            "entityType": obj["entityType"],
            "observations": list(observations),
        }
    if kind == "relation":
        for key in ("from", "to", "relationType"):
            if not isinstance(obj.get(key), str):
                return f"relation without a string {key!r}"
        return "relation", {k: obj[k] for k in ("from", "to", "relationType")}
    return f"unknown record type {kind!r} (expected 'entity' or 'relation')"


READ_BYTES = 1 << 20
BOM = b"\xef\xbb\xbf"


class Records:
    """One kind of record of a JSON lines file, read from the file each time it is iterated
    (after :func:`open_lines` checked every line): only the lines from the first to the last of
    that kind are decoded again (the official server writes every entity, then every
    relation)."""

    def __init__(self, path: Path, kind: str, count: int, lines: tuple[int, int]) -> None:
        self.path, self.kind, self.count = path, kind, count
        self.first, self.last = lines

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for no, line in _text_lines(self.path, str(self.path)):
            if no < self.first or not line.strip():
                continue
            if no > self.last:
                return
            try:
                rec = _record(jsontext.loads(line))
            except json.JSONDecodeError:
                rec = "not JSON"
            if isinstance(rec, str):  # it was checked: the file changed since
                raise TransferError(f"{self.path}: line {no} changed during the import: {rec}")
            if rec[0] == self.kind:
                yield rec[1]


@dataclass
class OfficialLines:
    """A checked file of JSON lines, its entities and relations read as they are imported."""

    entities: Records
    relations: Records


def open_lines(path: Path, source: str) -> OfficialLines | None:
    """Check every line of a JSON lines file, holding one line at a time; raise
    :class:`TransferError` as :func:`parse` does. None when the file's first non-blank line is
    not a record with a ``type`` (a JSON document, or broken): :func:`parse` reads it whole,
    which gives the same answer for a JSON lines file."""
    counts = {"entity": 0, "relation": 0}
    spans = {"entity": (0, 0), "relation": (0, 0)}
    """The first and the last line of each kind."""
    problems: list[tuple[int, str]] = []
    first = True
    for no, line in _text_lines(path, source):
        if not line.strip():
            continue
        try:
            obj = jsontext.loads(line)
        except json.JSONDecodeError as exc:
            if first:
                return None
            problems.append((no, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        if first and not (isinstance(obj, dict) and "type" in obj):
            return None
        first = False
        rec = _record(obj)
        if isinstance(rec, str):
            problems.append((no, rec))
        else:
            counts[rec[0]] += 1
            spans[rec[0]] = (spans[rec[0]][0] or no, no)
    if problems:
        raise TransferError.lines(source, problems)
    return OfficialLines(
        *(Records(path, kind, counts[kind], spans[kind]) for kind in ("entity", "relation"))
    )


def _text_lines(path: Path, source: str) -> Iterator[tuple[int, str]]:
    """(number, text) of every line, split at ``\\n`` as :func:`parse` splits, decoded as
    UTF-8 after a leading BOM; undecodable bytes raise the error ``noon import`` gives for a
    file that is not UTF-8 text (at the same offset)."""
    with open(path, "rb") as f:
        if f.read(len(BOM)) != BOM:
            f.seek(0)
        carry, offset, no = b"", 0, 0
        while True:
            data = f.read(READ_BYTES)
            parts = (carry + data).split(b"\n")
            carry = parts.pop() if data else b""
            for raw in parts:
                no += 1
                try:
                    yield no, raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    at = offset + exc.start
                    raise TransferError(
                        f"{source}: not UTF-8 text ({exc.reason} at byte {at})"
                    ) from None
                offset += len(raw) + 1
            if not data:
                return


def parse(text: str, source: str) -> OfficialGraph:
    """Parse a whole file; raise :class:`TransferError` listing every bad line or item.

    A file that is one JSON document ``{"entities": [...], "relations": [...]}``, compact or
    pretty printed (the legacy ``memory.json``, server-noonien's ``export``, and what
    ``read_graph`` returns), is read as a whole; anything else as JSON lines."""
    if text.lstrip().startswith("{"):
        try:
            whole = jsontext.loads(text)
        except json.JSONDecodeError:
            whole = None  # JSON lines (or broken): read line by line below
        if (
            isinstance(whole, dict)
            and "type" not in whole
            and ("entities" in whole or "relations" in whole)
        ):
            return _parse_document(whole, source)
    graph = OfficialGraph()
    problems: list[tuple[int, str]] = []
    for no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = jsontext.loads(line)
        except json.JSONDecodeError as exc:
            problems.append((no, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        rec = _record(obj)
        if isinstance(rec, str):
            problems.append((no, rec))
        else:
            graph.add(*rec)
    if problems:
        raise TransferError.lines(source, problems)
    return graph


def _parse_document(doc: dict[str, Any], source: str) -> OfficialGraph:
    graph = OfficialGraph()
    problems: list[str] = []
    unknown = sorted(set(doc) - {"entities", "relations"})
    if unknown:
        problems.append(f"unknown key(s) {', '.join(map(repr, unknown))} in the document")
    for kind, key in (("entity", "entities"), ("relation", "relations")):
        items = doc.get(key, [])
        if not isinstance(items, list):
            problems.append(f"{key!r} must be a list")
            continue
        for i, item in enumerate(items):
            rec = _record({**item, "type": kind} if isinstance(item, dict) else item)
            if isinstance(rec, str):
                problems.append(f"{key}[{i}]: {rec}")
            else:
                graph.add(*rec)
    if problems:
        raise TransferError.listing(source, problems)
    return graph


def render(graph: dict[str, Any]) -> str:
    """The file the official server would write for ``graph`` (``read_graph`` shape)."""
    lines = [
        compact({"type": "entity", **{k: e[k] for k in ("name", "entityType", "observations")}})
        for e in graph["entities"]
    ]
    lines += [
        compact({"type": "relation", **{k: r[k] for k in ("from", "to", "relationType")}})
        for r in graph["relations"]
    ]
    return "\n".join(lines)
