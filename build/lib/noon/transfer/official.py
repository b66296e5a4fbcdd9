"""The official memory server's file: ``memory.jsonl`` (and the legacy ``memory.json``).

One JSON object per line, ``{"type":"entity","name","entityType","observations"}`` or
``{"type":"relation","from","to","relationType"}``, entities first, compact, joined by ``\\n``
with no trailing newline (an empty graph is an empty file). Blank lines are skipped on reading,
like the official server does; unlike it (it silently drops them), lines of another type and
malformed lines are errors here, because an import must not lose anything quietly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from noon.kg.text import compact
from noon.transfer.errors import TransferError


@dataclass
class OfficialGraph:
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, str]] = field(default_factory=list)


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


def parse(text: str, source: str) -> OfficialGraph:
    """Parse a whole file; raise :class:`TransferError` listing every bad line."""
    stripped = text.lstrip()
    if stripped.startswith("{") and "\n" not in stripped.strip():
        # one line: either a one-record JSONL file or a whole-graph JSON document
        try:
            whole = json.loads(stripped)
        except json.JSONDecodeError:
            whole = None
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
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append((no, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        rec = _record(obj)
        if isinstance(rec, str):
            problems.append((no, rec))
        elif rec[0] == "entity":
            graph.entities.append(rec[1])
        else:
            graph.relations.append(rec[1])
    if problems:
        raise TransferError.lines(source, problems)
    return graph


def _parse_document(doc: dict[str, Any], source: str) -> OfficialGraph:
    """``{"entities": [...], "relations": [...]}``, as some older versions and tools wrote."""
    graph = OfficialGraph()
    problems: list[tuple[int, str]] = []
    lists = (("entity", doc.get("entities", [])), ("relation", doc.get("relations", [])))
    for kind, items in lists:
        if not isinstance(items, list):
            raise TransferError(f"{source}: '{kind}' list expected in the JSON document")
        for i, item in enumerate(items):
            rec = _record({**item, "type": kind} if isinstance(item, dict) else item)
            if isinstance(rec, str):
                problems.append((1, f"{kind} #{i + 1}: {rec}"))
            elif rec[0] == "entity":
                graph.entities.append(rec[1])
            else:
                graph.relations.append(rec[1])
    if problems:
        raise TransferError.lines(source, problems)
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
