"""A Nocturne Memory database built with its schema (reference/nocturne.md §3, as its SQLAlchemy
models and migrations create it), in SQLite or in PostgreSQL, for the import tests.

The same rows go into either engine: four nodes (one deleted long ago), a three-version memory,
an alias in another domain, a second namespace, glossary keywords and, unless told otherwise, a
``presets`` table whose active row holds the boot list (v2.5.3; older installs keep it in
``config.json`` or ``.env``, see :func:`write_config` and :func:`write_dotenv`).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from noon.transfer.nocturne import ROOT_UUID

SQLITE_DDL = """
CREATE TABLE nodes (uuid VARCHAR(36) PRIMARY KEY, created_at DATETIME,
                    last_accessed_at DATETIME);
CREATE TABLE memories (id INTEGER PRIMARY KEY AUTOINCREMENT, node_uuid VARCHAR(36),
                       content TEXT NOT NULL, deprecated BOOLEAN DEFAULT 0,
                       migrated_to INTEGER, created_at DATETIME);
CREATE TABLE edges (id INTEGER PRIMARY KEY, parent_uuid VARCHAR(36),
                    child_uuid VARCHAR(36), name VARCHAR(256), priority INTEGER DEFAULT 0,
                    disclosure TEXT, created_at DATETIME, UNIQUE(parent_uuid, child_uuid));
CREATE TABLE paths (namespace VARCHAR(64) DEFAULT '', domain VARCHAR(64) DEFAULT 'core',
                    path VARCHAR(512), edge_id INTEGER, node_uuid VARCHAR(36),
                    created_at DATETIME, PRIMARY KEY (namespace, domain, path));
CREATE TABLE glossary_keywords (id INTEGER PRIMARY KEY, keyword TEXT,
                                node_uuid VARCHAR(36), namespace VARCHAR(64) DEFAULT '',
                                created_at DATETIME);
"""
SQLITE_PRESETS = """
CREATE TABLE presets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
                      boot_uris TEXT NOT NULL DEFAULT '{}', path_masks TEXT,
                      is_active BOOLEAN NOT NULL DEFAULT 0,
                      created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                      updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE UNIQUE INDEX uq_presets_active ON presets (is_active) WHERE is_active = 1;
"""
POSTGRES_DDL = """
CREATE TABLE nodes (uuid VARCHAR(36) PRIMARY KEY, created_at TIMESTAMP,
                    last_accessed_at TIMESTAMP);
CREATE TABLE memories (id SERIAL PRIMARY KEY, node_uuid VARCHAR(36) REFERENCES nodes(uuid),
                       content TEXT NOT NULL, deprecated BOOLEAN DEFAULT FALSE,
                       migrated_to INTEGER, created_at TIMESTAMP);
CREATE TABLE edges (id SERIAL PRIMARY KEY, parent_uuid VARCHAR(36) NOT NULL REFERENCES nodes(uuid),
                    child_uuid VARCHAR(36) NOT NULL REFERENCES nodes(uuid),
                    name VARCHAR(256) NOT NULL, priority INTEGER DEFAULT 0, disclosure TEXT,
                    created_at TIMESTAMP, CONSTRAINT uq_edge_parent_child
                    UNIQUE (parent_uuid, child_uuid));
CREATE TABLE paths (namespace VARCHAR(64) DEFAULT '', domain VARCHAR(64) DEFAULT 'core',
                    path VARCHAR(512), edge_id INTEGER REFERENCES edges(id),
                    node_uuid VARCHAR(36) REFERENCES nodes(uuid), created_at TIMESTAMP,
                    PRIMARY KEY (namespace, domain, path));
CREATE TABLE glossary_keywords (id SERIAL PRIMARY KEY, keyword TEXT NOT NULL,
                                node_uuid VARCHAR(36) NOT NULL
                                REFERENCES nodes(uuid) ON DELETE CASCADE,
                                namespace VARCHAR(64) NOT NULL DEFAULT '', created_at TIMESTAMP,
                                CONSTRAINT uq_glossary_keyword_node
                                UNIQUE (keyword, node_uuid, namespace));
"""
POSTGRES_PRESETS = """
CREATE TABLE presets (id SERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                      boot_uris TEXT NOT NULL DEFAULT '{}', path_masks TEXT,
                      is_active BOOLEAN NOT NULL DEFAULT FALSE,
                      created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                      updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE UNIQUE INDEX uq_presets_active ON presets (is_active) WHERE is_active = true;
"""

UUIDS = {
    k: f"{i:08d}-0000-4000-8000-000000000000"
    for i, k in enumerate(["agent", "identity", "notes", "gone"], 1)
}
PRESET_BOOT = {"": ["core://agent", "core://agent/identity"]}
VERSION_TIMES = {
    1: "2026-01-01 00:00:01",
    2: "2026-01-01 00:00:02",
    3: "2026-01-01 00:00:03",
    4: "2026-01-01 00:00:04",
    5: "2026-01-01 00:00:05.250000",
    6: "2026-01-01 00:00:06",
}
"""``memories.created_at`` per row id, as SQLAlchemy writes a naive ``datetime.now()``."""


def rows() -> dict[str, list[tuple[Any, ...]]]:
    u = UUIDS
    t = VERSION_TIMES
    return {
        "nodes": [(uuid, "2026-01-01 00:00:00", None) for uuid in [ROOT_UUID, *u.values()]],
        "memories": [
            (1, u["agent"], "Agent v1", True, 2, t[1]),
            (2, u["agent"], "Agent v2", True, 3, t[2]),
            (3, u["agent"], "Agent v3 (current)", False, None, t[3]),
            (4, u["identity"], "I am the agent.", False, None, t[4]),
            (5, u["notes"], "Notes ✓", False, None, t[5]),
            (6, u["gone"], "deleted long ago", True, None, t[6]),
        ],
        "edges": [
            (1, ROOT_UUID, u["agent"], "agent", 0, "always", None),
            (2, u["agent"], u["identity"], "identity", 1, "when asked who you are", None),
            (3, ROOT_UUID, u["notes"], "notes", 5, None, None),
            (4, u["agent"], u["notes"], "my_notes", 2, "alias of notes", None),
        ],
        "paths": [
            ("", "core", "agent", 1, u["agent"], None),
            ("", "core", "agent/identity", 2, u["identity"], None),
            ("", "writer", "notes", 3, u["notes"], None),
            ("", "core", "agent/my_notes", 4, u["notes"], None),
            ("team", "core", "agent", 1, u["agent"], None),
        ],
        "glossary_keywords": [
            (1, "Salem", u["identity"], "", None),
            (2, "notes", u["notes"], "", None),
        ],
    }


def _fill(conn: Any, mark: str, presets: dict[str, list[str]] | None) -> None:
    cur = conn.cursor()
    for table, values in rows().items():
        holes = ", ".join([mark] * len(values[0]))
        cur.executemany(f"INSERT INTO {table} VALUES ({holes})", values)
    if presets is not None:
        cur.execute(
            f"INSERT INTO presets (name, boot_uris, is_active) VALUES ({mark}, {mark}, {mark})",
            ("default", json.dumps(presets), True),
        )
    conn.commit()


def nocturne_db(
    path: Path, presets: dict[str, list[str]] | None = PRESET_BOOT, *, presets_table: bool = True
) -> dict[str, str]:
    """The fixture as a SQLite file. ``presets_table=False`` builds an install from before
    v2.5.3 (its boot list lives in ``config.json`` or ``.env``)."""
    db = sqlite3.connect(path)
    db.executescript(SQLITE_DDL + (SQLITE_PRESETS if presets_table else ""))
    _fill(db, "?", presets if presets_table else None)
    db.close()
    return dict(UUIDS)


def nocturne_postgres(conn: Any, presets: dict[str, list[str]] | None = PRESET_BOOT) -> None:
    """The fixture in a PostgreSQL database (a psycopg connection), as Nocturne's Docker
    deployment holds it; the serial sequences are advanced past the explicit ids."""
    with conn.cursor() as cur:
        cur.execute(POSTGRES_DDL + POSTGRES_PRESETS)
    _fill(conn, "%s", presets)
    with conn.cursor() as cur:
        for table in ("memories", "edges", "glossary_keywords"):
            cur.execute(f"SELECT setval('{table}_id_seq', (SELECT max(id) FROM {table}))")
    conn.commit()


def write_config(directory: Path, boot: dict[str, list[str]]) -> Path:
    """A ``config.json`` as Nocturne writes it (before presets held the boot list)."""
    path = directory / "config.json"
    config = {
        "database_url": f"sqlite+aiosqlite:///{directory / 'nocturne_data.db'}",
        "valid_domains": ["core", "writer", "game", "notes", "narrative"],
        "boot_uris": boot,
        "host": "127.0.0.1",
        "web_port": 8233,
    }
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_dotenv(directory: Path, uris: list[str], **per_namespace: list[str]) -> Path:
    """A ``.env`` of the oldest installs: ``CORE_MEMORY_URIS`` (and ``CORE_MEMORY_URIS__<ns>``)."""
    path = directory / ".env"
    lines = [
        "# Nocturne Memory",
        "DATABASE_URL=sqlite+aiosqlite:///./nocturne_data.db",
        "VALID_DOMAINS=core,writer,game,notes",
        f'CORE_MEMORY_URIS="{",".join(uris)}"',
    ]
    lines += [f"CORE_MEMORY_URIS__{ns}={','.join(u)}" for ns, u in per_namespace.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
