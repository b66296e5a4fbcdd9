"""A Nocturne Memory database built with its schema, for the import tests."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from noon.transfer.nocturne import ROOT_UUID


def nocturne_db(path: Path) -> dict[str, str]:
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE nodes (uuid VARCHAR(36) PRIMARY KEY, created_at DATETIME,
                            last_accessed_at DATETIME);
        CREATE TABLE memories (id INTEGER PRIMARY KEY AUTOINCREMENT, node_uuid VARCHAR(36),
                               content TEXT NOT NULL, deprecated BOOLEAN DEFAULT 0,
                               migrated_to INTEGER, created_at DATETIME);
        CREATE TABLE edges (id INTEGER PRIMARY KEY, parent_uuid VARCHAR(36),
                            child_uuid VARCHAR(36), name VARCHAR(256), priority INTEGER DEFAULT 0,
                            disclosure TEXT, created_at DATETIME,
                            UNIQUE(parent_uuid, child_uuid));
        CREATE TABLE paths (namespace VARCHAR(64) DEFAULT '', domain VARCHAR(64) DEFAULT 'core',
                            path VARCHAR(512), edge_id INTEGER, node_uuid VARCHAR(36),
                            created_at DATETIME, PRIMARY KEY (namespace, domain, path));
        CREATE TABLE glossary_keywords (id INTEGER PRIMARY KEY, keyword TEXT,
                                        node_uuid VARCHAR(36), namespace VARCHAR(64) DEFAULT '',
                                        created_at DATETIME);
        CREATE TABLE presets (id INTEGER PRIMARY KEY, name TEXT UNIQUE, boot_uris TEXT,
                              path_masks TEXT, is_active BOOLEAN, created_at DATETIME,
                              updated_at DATETIME);
        """
    )
    u = {
        k: f"{i:08d}-0000-4000-8000-000000000000"
        for i, k in enumerate(["agent", "identity", "notes", "gone"], 1)
    }
    db.execute("INSERT INTO nodes VALUES (?, '2026-01-01', NULL)", (ROOT_UUID,))
    for uuid in u.values():
        db.execute("INSERT INTO nodes VALUES (?, '2026-01-01', NULL)", (uuid,))
    mems = [
        (1, u["agent"], "Agent v1", 1, 2, "2026-01-01 00:00:01"),
        (2, u["agent"], "Agent v2", 1, 3, "2026-01-01 00:00:02"),
        (3, u["agent"], "Agent v3 (current)", 0, None, "2026-01-01 00:00:03"),
        (4, u["identity"], "I am the agent.", 0, None, "2026-01-01 00:00:04"),
        (5, u["notes"], "Notes ✓", 0, None, "2026-01-01 00:00:05"),
        (6, u["gone"], "deleted long ago", 1, None, "2026-01-01 00:00:06"),
    ]
    db.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?)", mems)
    edges = [
        (1, ROOT_UUID, u["agent"], "agent", 0, "always", None),
        (2, u["agent"], u["identity"], "identity", 1, "when asked who you are", None),
        (3, ROOT_UUID, u["notes"], "notes", 5, None, None),
        (4, u["agent"], u["notes"], "my_notes", 2, "alias of notes", None),
    ]
    db.executemany("INSERT INTO edges VALUES (?, ?, ?, ?, ?, ?, ?)", edges)
    paths = [
        ("", "core", "agent", 1, u["agent"]),
        ("", "core", "agent/identity", 2, u["identity"]),
        ("", "writer", "notes", 3, u["notes"]),
        ("", "core", "agent/my_notes", 4, u["notes"]),
        ("team", "core", "agent", 1, u["agent"]),
    ]
    db.executemany("INSERT INTO paths VALUES (?, ?, ?, ?, ?, NULL)", paths)
    db.executemany(
        "INSERT INTO glossary_keywords VALUES (?, ?, ?, ?, NULL)",
        [(1, "Salem", u["identity"], ""), (2, "notes", u["notes"], "")],
    )
    db.execute(
        "INSERT INTO presets VALUES (1, 'default', ?, NULL, 1, NULL, NULL)",
        (json.dumps({"": ["core://agent", "core://agent/identity"]}),),
    )
    db.commit()
    db.close()
    return u
