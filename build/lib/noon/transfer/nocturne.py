"""Reading a Nocturne Memory SQLite database (schema: reference/nocturne.md §3) into noon's URI
graph elements.

- Every node with an active (non-deprecated) memory becomes a noon node. Its id derives from the
  Nocturne uuid (:func:`node_id`), so a re-import addresses the same nodes. Its content versions
  are written oldest first with the active version last: the content register's history.
- Every edge some path uses becomes a placement ``edge(ns, parent, name)``; a top-level edge (parent
  ROOT) hangs off the root of the path's domain (``@<domain>``). Priority and disclosure are kept.
  Aliases are simply further edges to the same node.
- Glossary keywords become ``keyword(ns, keyword, node)``; the active preset's boot URIs (or none)
  become ``boot(ns, node)``.
- Nocturne's default namespace ``""`` maps to the target namespace of the import.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from noon.transfer.errors import TransferError

ROOT_UUID = "00000000-0000-0000-0000-000000000000"
ROOT_PREFIX = "@"
NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
DOMAIN = re.compile(r"^[a-z_][a-z0-9_]{0,31}$")
REQUIRED = ("nodes", "memories", "edges", "paths")


def node_id(uuid: str) -> str:
    """The noon node id of a Nocturne node: stable, so re-imports find what they wrote."""
    return hashlib.sha256(f"nocturne:{uuid}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Placement:
    namespace: str
    parent: str
    """A noon node id or a domain root ``@domain``."""
    name: str
    child: str
    priority: int
    disclosure: str


@dataclass
class NocturneData:
    versions: dict[str, list[str]] = field(default_factory=dict)
    """noon node id -> content versions, oldest first, the active one last."""
    placements: list[Placement] = field(default_factory=list)
    keywords: list[tuple[str, str, str]] = field(default_factory=list)
    """(namespace, keyword, node id)"""
    boot: list[tuple[str, str]] = field(default_factory=list)
    """(namespace, node id)"""


def is_sqlite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(16) == b"SQLite format 3\x00"


def read(path: Path, default_namespace: str) -> NocturneData:
    source = str(path)
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise TransferError(f"{source}: cannot open as SQLite: {exc}") from None
    try:
        return _read(db, source, default_namespace)
    except sqlite3.Error as exc:
        raise TransferError(f"{source}: not a readable Nocturne database: {exc}") from None
    finally:
        db.close()


def _read(db: sqlite3.Connection, source: str, default_ns: str) -> NocturneData:
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = [t for t in REQUIRED if t not in tables]
    if missing:
        raise TransferError(
            f"{source}: not a Nocturne Memory database (missing tables: {', '.join(missing)})"
        )
    problems: list[str] = []

    def namespace(raw: str | None) -> str:
        ns = raw or ""
        if ns == "":
            return default_ns
        if not NAMESPACE.match(ns):
            problems.append(f"namespace {ns!r} is not a valid noon namespace")
        return ns

    data = NocturneData()
    rows = db.execute(
        "SELECT node_uuid, content, deprecated, id FROM memories ORDER BY created_at, id"
    ).fetchall()
    by_node: dict[str, list[tuple[str, bool, int]]] = {}
    for uuid, content, deprecated, mem_id in rows:
        if not isinstance(content, str):
            problems.append(f"memories row {mem_id}: content is not text")
            continue
        by_node.setdefault(uuid, []).append((content, bool(deprecated), mem_id))
    for uuid, mems in by_node.items():
        active = [m for m in mems if not m[1]]
        if not active:
            continue  # deleted in Nocturne: only deprecated versions remain
        if len(active) > 1:
            problems.append(f"node {uuid}: {len(active)} active memories (expected one)")
        history = [m[0] for m in mems if m[1]] + [active[-1][0]]
        data.versions[node_id(uuid)] = history

    edge_rows = db.execute(
        "SELECT id, parent_uuid, child_uuid, name, priority, disclosure FROM edges"
    )
    edges = {r[0]: r[1:] for r in edge_rows}
    seen: set[tuple[str, str, str]] = set()
    path_nodes: dict[tuple[str, str, str], str] = {}
    for ns_raw, domain, path, edge_id in db.execute(
        "SELECT namespace, domain, path, edge_id FROM paths ORDER BY namespace, domain, path"
    ):
        ns = namespace(ns_raw)
        if not DOMAIN.match(domain or ""):
            problems.append(f"paths row {domain}://{path}: domain is not a valid noon domain")
            continue
        if edge_id is None:
            continue
        edge = edges.get(edge_id)
        if edge is None:
            problems.append(f"paths row {domain}://{path}: edge {edge_id} does not exist")
            continue
        parent_uuid, child_uuid, name, priority, disclosure = edge
        path_nodes[(ns, domain, path)] = child_uuid
        if node_id(child_uuid) not in data.versions:
            problems.append(f"{domain}://{path}: its node {child_uuid} has no active memory")
            continue
        parent = ROOT_PREFIX + domain if parent_uuid == ROOT_UUID else node_id(parent_uuid)
        if (ns, parent, name) in seen:
            continue
        seen.add((ns, parent, name))
        data.placements.append(
            Placement(ns, parent, name, node_id(child_uuid), int(priority or 0), disclosure or "")
        )

    if "glossary_keywords" in tables:
        for keyword, uuid, ns_raw in db.execute(
            "SELECT keyword, node_uuid, namespace FROM glossary_keywords ORDER BY id"
        ):
            if node_id(uuid) in data.versions:
                data.keywords.append((namespace(ns_raw), keyword, node_id(uuid)))

    if "presets" in tables:
        row = db.execute("SELECT boot_uris FROM presets WHERE is_active").fetchone()
        if row and row[0]:
            try:
                boot = json.loads(row[0])
            except json.JSONDecodeError:
                boot = None
                problems.append("presets: boot_uris is not JSON")
            for ns_raw, uris in (boot or {}).items():
                ns = namespace(ns_raw)
                for uri in uris:
                    domain, _, path = str(uri).partition("://")
                    uuid = path_nodes.get((ns, domain, path.strip("/")))
                    if uuid is not None:
                        data.boot.append((ns, node_id(uuid)))
    if problems:
        shown = "\n".join(f"  {p}" for p in problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise TransferError(
            f"{source}: {len(problems)} problem(s); nothing was imported:\n{shown}{more}"
        )
    return data
