"""The read model's change log: which element keys each generation's fold touched (the
``changes`` table), so that every process of the machine can tell what changed since it last
looked, whichever process folded it. Subscriptions, the vectorizer and read_graph's kept answer
read it; a process too far behind, or behind a rebuild or a large fold, treats everything as
changed."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from dataclasses import dataclass, field

from noon.core.ops import Key
from noon.store.readmodel.rows import key_of
from noon.store.readmodel.unfolded import Meta, meta_int, read_meta, read_metas

KEEP_GENERATIONS = 2000
"""Generations of touched keys kept; a process further behind treats every key as touched."""
RESET_KEYS = 1_000
"""A fold touching more keys than this logs one reset instead of every key (what listens for
touched keys treats more than a few hundred as everything anyway)."""


@dataclass
class Touched:
    """The keys the read model's folds touched since this process last looked, whichever process
    folded them."""

    keys: set[Key] = field(default_factory=set)
    ops: int = 0
    reset: bool = False
    """Treat every key as changed (a rebuild, or this process fell too far behind)."""

    def __bool__(self) -> bool:
        return bool(self.keys or self.ops or self.reset)


def current_generation(conn: sqlite3.Connection) -> int:
    """The generation of the last fold that changed something (0 for a new file)."""
    return int(read_meta(conn, "generation", 0))  # type: ignore[call-overload]


def log_fold(conn: sqlite3.Connection, keys: Collection[str], before: int) -> None:
    """Inside the fold's transaction: start a new generation after ``before`` (the one the
    transaction found) touching ``keys`` (key texts), and forget generations older than the
    log keeps."""
    gen = before + 1
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?)", (gen,))
    if len(keys) > RESET_KEYS:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('reset', ?)", (gen,))
    else:
        conn.executemany("INSERT INTO changes (gen, key) VALUES (?, ?)", ((gen, k) for k in keys))
    conn.execute("DELETE FROM changes WHERE gen < ?", (gen - KEEP_GENERATIONS,))


def changed_since(
    conn: sqlite3.Connection, since: int, meta: Meta | None = None
) -> set[Key] | None:
    """The keys the folds after generation ``since`` (of this connection's file) touched; None
    when that is no longer known: a rebuild or a reset since, or more generations ago than the
    log keeps. ``meta``: its ``generation`` and ``reset`` as just read, if they were."""
    meta = read_metas(conn) if meta is None else meta
    now = meta_int(meta, "generation")
    if since < 0 or since > now or now - since > KEEP_GENERATIONS:
        return None
    if meta_int(meta, "reset") > since:
        return None
    return {
        key_of(k)
        for (k,) in conn.execute("SELECT DISTINCT key FROM changes WHERE gen > ?", (since,))
    }


def touched_since(conn: sqlite3.Connection, seen: int, meta: Meta) -> tuple[Touched, int]:
    """What changed since generation ``seen``, and the generation it was read at (``meta``
    holding ``generation`` and ``reset`` as just read)."""
    now = meta_int(meta, "generation")
    if now == seen:
        return Touched(), now
    keys = changed_since(conn, seen, meta)
    if keys is None:
        return Touched(reset=True), now
    return Touched(keys, len(keys)), now
