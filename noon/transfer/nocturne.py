"""Reading a Nocturne Memory database (schema: reference/nocturne.md §3), SQLite or PostgreSQL,
into noon's URI graph elements.

- Every node with an active (non-deprecated) memory becomes a noon node. Its id derives from the
  Nocturne uuid (:func:`node_id`), so a re-import addresses the same nodes. Its content versions
  are written oldest first with the active version last: the content register's history. Each
  version keeps when Nocturne wrote it (``memories.created_at``), see :class:`Version`.
- Every edge some path uses becomes a placement ``edge(ns, parent, name)``; a top-level edge (parent
  ROOT) hangs off the root of the path's domain (``@<domain>``). Priority and disclosure are kept.
  Aliases are simply further edges to the same node.
- Glossary keywords become ``keyword(ns, keyword, node)``. The boot list is configuration in
  Nocturne, not graph data: the active preset read here is one of its sources, resolved with the
  others by :mod:`noon.transfer.nocturne_boot`.
- Nocturne's default namespace ``""`` maps to the target namespace of the import. Databases from
  before namespaces (no ``namespace`` column) are all in ``""``.

The queries are plain SQL both engines run; a :class:`Database` hides the one difference (how
tables and columns are listed).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from noon.transfer import jsontext
from noon.transfer.errors import TransferError

ROOT_UUID = "00000000-0000-0000-0000-000000000000"
ROOT_PREFIX = "@"
NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
DOMAIN = re.compile(r"^[a-z_][a-z0-9_]{0,31}$")
REQUIRED = ("nodes", "memories", "edges", "paths")


class Database(Protocol):
    """A read-only connection to a Nocturne database."""

    def tables(self) -> set[str]: ...

    def columns(self, table: str) -> set[str]: ...

    def rows(self, sql: str) -> list[tuple[Any, ...]]: ...


READ_TABLES = (*REQUIRED, "glossary_keywords", "presets")
MAX_VALUE_BYTES = 64 << 20
"""The longest text or blob a foreign SQLite file may hand over (SQLITE_LIMIT_LENGTH)."""
HEAP_BYTES = 256 << 20
"""What SQLite may allocate while reading one (its hard heap limit, for the read)."""


class SqliteDatabase:
    """A foreign SQLite file, read without evaluating anything it defines: only ordinary
    tables are read (a view or virtual table named like one is not a table here), a table
    with generated columns is refused before any of its rows is (their expressions would run
    on every read: a 24 KB file reached 1.5 GB), triggers never fire on reads, and every
    value and the heap are bounded."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA trusted_schema = OFF")

    def tables(self) -> set[str]:
        return {
            name
            for name, sql in self.rows("SELECT name, sql FROM sqlite_master WHERE type='table'")
            if not str(sql or "").lstrip().upper().startswith("CREATE VIRTUAL")
        }

    def generated(self, table: str) -> list[str]:
        """The generated columns of ``table`` (``table_xinfo``'s hidden 2 and 3)."""
        return [r[1] for r in self.conn.execute(f"PRAGMA table_xinfo({table})") if r[6] in (2, 3)]

    def columns(self, table: str) -> set[str]:
        return {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql).fetchall()


def node_id(uuid: str) -> str:
    """The noon node id of a Nocturne node: stable, so re-imports find what they wrote."""
    return hashlib.sha256(f"nocturne:{uuid}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Version:
    text: str
    written_ms: int | None
    """When Nocturne wrote this version (ms since the epoch, UTC), if the row says. Nocturne
    stores naive local times (``datetime.now()``): they are read in this machine's time zone
    (``TZ``), which is right when the import runs where Nocturne ran."""


@dataclass(frozen=True)
class Placement:
    namespace: str
    parent: str
    """A noon node id or a domain root ``@domain``."""
    name: str
    child: str
    priority: int
    disclosure: str


@dataclass(frozen=True)
class BootEntry:
    namespace: str
    node: str
    uri: str
    """The URI the boot list named it by (a node with aliases boots under this one)."""


@dataclass
class NocturneData:
    versions: dict[str, list[Version]] = field(default_factory=dict)
    """noon node id -> content versions, oldest first, the active one last."""
    placements: list[Placement] = field(default_factory=list)
    keywords: list[tuple[str, str, str]] = field(default_factory=list)
    """(namespace, keyword, node id)"""
    boot: list[BootEntry] = field(default_factory=list)
    at: dict[tuple[str, str, str], str] = field(default_factory=dict)
    """(Nocturne namespace, domain, path) -> noon node id, for resolving boot URIs."""
    preset: dict[str, list[str]] | None = None
    """The active preset's boot lists (Nocturne namespace -> URIs), if the database has one."""
    undated: int = 0
    """Versions whose ``created_at`` is missing or unreadable (imported without a time)."""
    deprecated_only: list[str] = field(default_factory=list)
    """Nocturne node uuids with only deprecated versions: deleted there (Nocturne's soft delete
    deprecates a memory's last version), so not imported; the import says how many."""


def is_sqlite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(16) == b"SQLite format 3\x00"


_HEAP_LIMIT = threading.Lock()


def read_sqlite(path: Path, default_namespace: str) -> NocturneData:
    source = str(path)
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise TransferError(f"{source}: cannot open as SQLite: {exc}") from None
    # SQLite's heap limit is the process's: two reads at once would restore each other's
    # limit and leave it set for every connection after them
    _HEAP_LIMIT.acquire()
    heap = conn.execute("PRAGMA hard_heap_limit").fetchone()[0]
    try:
        conn.execute(f"PRAGMA hard_heap_limit = {HEAP_BYTES}")
        db = SqliteDatabase(conn)
        tables = db.tables()
        for table in READ_TABLES:
            columns = db.generated(table) if table in tables else []
            if columns:
                raise TransferError(
                    f"{source}: table {table} has generated columns ({', '.join(columns)}); "
                    "Nocturne's have none, and noon evaluates nothing in a file it imports. "
                    "Nothing was imported"
                )
        return read(db, source, default_namespace)
    except sqlite3.Error as exc:
        raise TransferError(f"{source}: not a readable Nocturne database: {exc}") from None
    finally:
        conn.execute(f"PRAGMA hard_heap_limit = {int(heap)}")
        _HEAP_LIMIT.release()
        conn.close()


def written_ms(raw: object) -> int | None:
    """``created_at`` as ms since the epoch: a datetime (PostgreSQL) or the text SQLite holds;
    naive values are local time."""
    when: dt.datetime | None = None
    if isinstance(raw, dt.datetime):
        when = raw
    elif isinstance(raw, str) and raw.strip():
        try:
            when = dt.datetime.fromisoformat(raw.strip())
        except ValueError:
            return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.astimezone()  # a naive time is this machine's local time
    return int(when.timestamp() * 1000)


def read(db: Database, source: str, default_ns: str) -> NocturneData:
    tables = db.tables()
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
    _read_versions(db, data, problems)
    _read_paths(db, data, problems, namespace)
    if "glossary_keywords" in tables:
        ns_col = "namespace" if "namespace" in db.columns("glossary_keywords") else "''"
        for keyword, uuid, ns_raw in db.rows(
            f"SELECT keyword, node_uuid, {ns_col} FROM glossary_keywords ORDER BY id"
        ):
            if node_id(uuid) in data.versions:
                data.keywords.append((namespace(ns_raw), keyword, node_id(uuid)))
    if "presets" in tables:
        active = db.rows("SELECT boot_uris FROM presets WHERE is_active")
        if active:
            data.preset = parse_boot_map(active[0][0], "presets: the active preset's boot_uris")
    if problems:
        raise TransferError.listing(source, problems)
    return data


def _read_versions(db: Database, data: NocturneData, problems: list[str]) -> None:
    rows = db.rows(
        "SELECT node_uuid, content, deprecated, id, created_at FROM memories ORDER BY id"
    )
    by_node: dict[str, list[tuple[Version, bool]]] = {}
    for uuid, content, deprecated, mem_id, created in rows:
        if not isinstance(content, str):
            problems.append(f"memories row {mem_id}: content is not text")
            continue
        when = written_ms(created)
        data.undated += when is None
        by_node.setdefault(uuid, []).append((Version(content, when), bool(deprecated)))
    for uuid, mems in by_node.items():
        active = [v for v, old in mems if not old]
        if not active:
            data.deprecated_only.append(uuid)  # deleted in Nocturne: only old versions remain
            continue
        if len(active) > 1:
            problems.append(f"node {uuid}: {len(active)} active memories (expected one)")
        data.versions[node_id(uuid)] = [v for v, old in mems if old] + [active[-1]]


def _read_paths(
    db: Database, data: NocturneData, problems: list[str], namespace: Callable[[Any], str]
) -> None:
    edge_rows = db.rows("SELECT id, parent_uuid, child_uuid, name, priority, disclosure FROM edges")
    edges = {r[0]: r[1:] for r in edge_rows}
    ns_col = "namespace" if "namespace" in db.columns("paths") else "''"
    seen: set[tuple[str, str, str]] = set()
    for ns_raw, domain, path, edge_id in db.rows(
        f"SELECT {ns_col}, domain, path, edge_id FROM paths ORDER BY 1, 2, 3"
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
        child = node_id(child_uuid)
        if child not in data.versions:
            problems.append(f"{domain}://{path}: its node {child_uuid} has no active memory")
            continue
        data.at[(ns_raw or "", domain, path)] = child
        parent = ROOT_PREFIX + domain if parent_uuid == ROOT_UUID else node_id(parent_uuid)
        if (ns, parent, name) in seen:
            continue
        seen.add((ns, parent, name))
        data.placements.append(
            Placement(ns, parent, name, child, int(priority or 0), disclosure or "")
        )


def parse_boot_map(raw: object, where: str) -> dict[str, list[str]]:
    """A boot map ``{namespace: [uri, ...]}`` (JSON text or already decoded)."""
    if isinstance(raw, str):
        try:
            raw = jsontext.loads(raw)
        except json.JSONDecodeError:
            raise TransferError(f"{where} is not JSON") from None
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(u, str) for u in v)
        for k, v in raw.items()
    ):
        raise TransferError(f"{where} must map namespaces to lists of URIs")
    return {k: list(v) for k, v in raw.items()}
