"""server-noonien's files, written the way it writes them (reference/noonien-core.md §1, §4, §6):
shard lines with its key order (payload, then ``v,id,ts,hlc,node,seq``, then ``type``), its
directory layout with lock, temp and daemon files beside the shards, and its ``export``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

T0 = 1_767_225_600_000
"""2026-01-01T00:00:00.000Z in ms."""


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


ADA_TO_BOB: dict[str, Any] = {"from": "Ada", "to": "Bob"}
CAROL_TO_ADA: dict[str, Any] = {"from": "Carol", "to": "Ada"}
"""Relation ends (``from`` is a keyword, so they are passed as a mapping)."""


def op(
    node: str, seq: int, ms: int, counter: int, kind: str, *, legacy: bool = False, **payload: Any
) -> str:
    """One shard line. ``legacy``: an op from before the HLC (no ``hlc`` field)."""
    ts = iso(ms)
    obj: dict[str, Any] = {**payload, "v": 1, "id": f"{ts}|{node}|{seq}", "ts": ts}
    if not legacy:
        obj["hlc"] = f"{ms:015d}:{counter:06d}"
    obj |= {"node": node, "seq": seq, "type": kind}
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def noonien_dir(d: Path) -> dict[str, Any]:
    """A ``NOONIEN_DIR`` of two machines and an import, with what server-noonien shows for it.

    n1 creates Ada (``math`` twice: two occurrences), Bob and "Ada knows Bob"; n2 (whose first
    ops predate the HLC) creates Carol, deletes Bob the way ``delete_entities`` does (his
    observations and relations first), deletes Ada's ``math`` and adds it once more, re-creates
    Bob as a machine; the import shard holds Dan. A sync tool's conflicted copy of n1 repeats
    its first ops; n2's last line is torn by a crash."""
    d.mkdir(parents=True, exist_ok=True)
    n1 = [
        op("n1", 0, T0, 0, "entity.create", name="Ada", entityType="person"),
        op("n1", 1, T0, 1, "observation.add", entityName="Ada", content="math", slot=0),
        op("n1", 2, T0, 2, "observation.add", entityName="Ada", content="math", slot=1),
        op("n1", 3, T0 + 1000, 0, "entity.create", name="Bob", entityType="person"),
        op("n1", 4, T0 + 1000, 1, "relation.add", **ADA_TO_BOB,
           relationType="knows"),
        op("n1", 5, T0 + 2000, 0, "observation.add", entityName="Bob", content="likes tea ✓",
           slot=0),
        op("n1", 6, T0 + 2500, 0, "shard.compact", generation=1),
    ]  # fmt: skip
    n2 = [
        op("n2", 0, T0 + 500, 0, "entity.create", legacy=True, name="Carol", entityType="robot"),
        op("n2", 1, T0 + 600, 0, "observation.add", legacy=True, entityName="Carol",
           content="beeps"),
        op("n2", 2, T0 + 3000, 0, "observation.delete", entityName="Bob", content="likes tea ✓"),
        op("n2", 3, T0 + 3000, 1, "relation.delete", **ADA_TO_BOB,
           relationType="knows"),
        op("n2", 4, T0 + 3000, 2, "entity.delete", name="Bob"),
        op("n2", 5, T0 + 3500, 0, "relation.add", **CAROL_TO_ADA,
           relationType="built"),
        op("n2", 6, T0 + 4000, 0, "observation.delete", entityName="Ada", content="math"),
        op("n2", 7, T0 + 5000, 0, "observation.add", entityName="Ada", content="math", slot=0),
        op("n2", 8, T0 + 6000, 0, "entity.create", name="Bob", entityType="machine"),
    ]  # fmt: skip
    imported = [
        op("n1-import", 0, T0 + 7000, 0, "entity.create", name="Dan", entityType="person"),
        op("n1-import", 1, T0 + 7000, 1, "observation.add", entityName="Dan",
           content="from memory.jsonl", slot=0),
    ]  # fmt: skip
    (d / "n1.jsonl").write_text("\n".join(n1) + "\n", encoding="utf-8")
    (d / "n2.jsonl").write_text("\n".join(n2) + '\n{"name":"Ev', encoding="utf-8")
    (d / "n1-import.jsonl").write_text("\n".join(imported) + "\n", encoding="utf-8")
    (d / "n1.sync-conflict-20260101.jsonl").write_text("\n".join(n1[:3]) + "\n")
    # not shards: server-noonien's lock, compaction temp file and daemon state
    (d / "n1.jsonl.lock").write_text("0123456789abcdef")
    (d / "n2.jsonl.0123456789abcdef.tmp").write_text("{half a rewrite")
    (d / ".nooniend-peers.json").write_text('{"peers": {}}')
    return {
        "entities": [
            {"name": "Ada", "entityType": "person", "observations": ["math"]},
            {"name": "Bob", "entityType": "machine", "observations": []},
            {"name": "Carol", "entityType": "robot", "observations": ["beeps"]},
            {"name": "Dan", "entityType": "person", "observations": ["from memory.jsonl"]},
        ],
        "relations": [{"from": "Carol", "to": "Ada", "relationType": "built"}],
    }


def export_text(graph: dict[str, Any]) -> str:
    """``noonien export``: ``JSON.stringify(graph, null, 2) + "\\n"``."""
    return json.dumps(graph, indent=2, ensure_ascii=False) + "\n"
