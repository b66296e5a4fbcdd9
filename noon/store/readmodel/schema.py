"""The read model's SQLite file: its tables, how it is opened, and when it is thrown away.

The file is derived from the shards and nothing else, so it is never trusted over them: a file
from another schema version, one whose schema differs in any way from the one written here (an
extra trigger or view planted in it), one that is not a regular file, or one SQLite reports as
damaged is deleted and rebuilt from the shards. It is never replicated.

Tables, by job:
- ``meta``: schema version, the change generation, the clock high-water mark, a fork report.
- ``shards``: per shard file, the cursor (inode, byte offset, line, marks) up to which it has
  been folded, and the size and mtime seen last (an unchanged file costs one ``stat``).
- ``highwater``: per author, the highest seq ever folded: never lowered by a shard that shrank,
  so a node whose own shard was restored from an old backup cannot reuse seqs.
- ``ops``: every op folded, by identity, with its digest (a duplicate and a fork tell themselves
  apart by it), its namespace, its element's id ``eid`` (the key text is ``elements.key``,
  never repeated per op; NULL for an op of a kind this version does not know) and its value,
  or, for a long one, where its line starts in its author's shard (``at``, see :mod:`.rows`
  and :mod:`.shardvalues`): the op log, history and rollback. ``child`` is the
  memory a placement op places (indexed): every placement a memory ever had.
- ``elements`` / ``heads``: per element key, the winner and the heads that :mod:`noon.core.fold`
  decided (``heads`` rows only when there are several: a conflict).
- ``changes``: the element keys each generation touched, so every process can tell what
  changed since it last looked, whoever folded it.
- the URI graph: ``memories``, ``placements``, ``keywords``, ``boot``, ``memory_fts`` (and
  ``memory_vocab``, its words: what a prefix expands to). ``memory_fts`` is contentless: it
  keeps the index, not a second copy of the texts; ``memory_docs`` holds the three short
  columns of each indexed memory, its text is ``memories.text`` (:mod:`.documents`).
- the knowledge graph: ``entities``, ``observations``, ``relations``, ``entity_fts``. An
  observation's text is its key part ``obs``; ``long_text`` holds only a long one's, keyed by
  its digest (:data:`OBS_TEXT`).
- ``reviews``: the review state of the web page's queue (live ``review`` elements).
- ``vectors``: per memory (``memories.id``), its text's embedding as the version ``w_node,
  w_seq`` held it (:mod:`.vectors`), filled off the write path by :mod:`.vectorizer`; ``stamp``
  grows with every row written, so a process's in-memory index reads only what is new.
- ``corrupt``: complete lines of a shard that are not valid ops (reported, skipped).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from noon.store.private import FILE_MODE, create_file, make_dir
from noon.store.readmodel.behind import full
from noon.store.readmodel.shardvalues import register

log = logging.getLogger("noon.readmodel")

SCHEMA_VERSION = 11
FILE_NAME = "readmodel.sqlite3"

ENTITIES_BY_NAME = "sqlite_autoindex_entities_1"
"""The index SQLite makes for ``UNIQUE (ns, name)`` of ``entities`` (its documented name for
a table's first such constraint). Asked for several names, the planner would rather read the
whole namespace through ``entities_in_order``, which covers the columns: 2 ms for 500 names at
10k entities, growing with the graph, against 0.6 ms by name."""
OBS_TEXT = "coalesce(long_text, obs)"
"""An observation's text in SQL. Its key part ``obs`` is the text itself but for a long one
(keyed by its digest, :func:`noon.kg.graph.obs_id`), whose text alone ``long_text`` holds:
the text is stored once in the row and once in ``observations_in_order``, which covers it."""
NUMBERED = "key_name GLOB '[1-9]*' AND key_name NOT GLOB '*[^0-9]*'"
"""Child names that count as numbers (:func:`noon.graph.reader.is_number_name`), in SQL."""

TABLES = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE shards (
    name TEXT PRIMARY KEY, inode INTEGER, offset INTEGER, line INTEGER,
    tail_mark BLOB, head_mark BLOB, seen_size INTEGER, seen_mtime INTEGER
) WITHOUT ROWID;
CREATE TABLE corrupt (
    shard TEXT, line INTEGER, reason TEXT, excerpt TEXT, PRIMARY KEY (shard, line)
) WITHOUT ROWID;
CREATE TABLE highwater (node TEXT PRIMARY KEY, seq INTEGER) WITHOUT ROWID;
CREATE TABLE ops (
    node TEXT, seq INTEGER, digest INTEGER, hlc INTEGER, ns TEXT, tomb INTEGER,
    val TEXT, at INTEGER, prev TEXT, client TEXT, bat INTEGER, via TEXT, eid INTEGER, child TEXT,
    PRIMARY KEY (node, seq)
) WITHOUT ROWID;
CREATE INDEX ops_by_element ON ops (eid) WHERE eid IS NOT NULL;
CREATE INDEX ops_by_child ON ops (ns, child) WHERE child IS NOT NULL;
CREATE INDEX ops_by_time ON ops (ns, hlc);
CREATE TABLE elements (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, kind TEXT, ns TEXT, w_node TEXT,
    w_seq INTEGER, w_hlc INTEGER, deleted INTEGER, nheads INTEGER
);
CREATE INDEX elements_conflicted ON elements (ns, kind) WHERE nheads > 1;
CREATE TABLE heads (eid INTEGER, node TEXT, seq INTEGER, PRIMARY KEY (eid, node, seq))
    WITHOUT ROWID;
CREATE TABLE changes (gen INTEGER, key TEXT);
CREATE INDEX changes_by_gen ON changes (gen);
CREATE TABLE memories (
    id INTEGER PRIMARY KEY, ns TEXT, node TEXT, deleted INTEGER, text TEXT,
    w_node TEXT, w_seq INTEGER, w_hlc INTEGER, UNIQUE (ns, node)
);
CREATE INDEX memories_recent ON memories (ns, deleted, w_hlc);
CREATE TABLE placements (
    ns TEXT, parent TEXT, name TEXT, key_name TEXT, child TEXT, priority INTEGER,
    disclosure TEXT, PRIMARY KEY (ns, parent, name)
) WITHOUT ROWID;
CREATE INDEX placements_by_child ON placements (ns, child);
CREATE INDEX placements_by_key ON placements (ns, parent, key_name);
CREATE INDEX placements_numbered ON placements (ns, parent, length(key_name), key_name)
    WHERE {NUMBERED};
CREATE TABLE keywords (ns TEXT, keyword TEXT, node TEXT, PRIMARY KEY (ns, keyword, node))
    WITHOUT ROWID;
CREATE INDEX keywords_by_node ON keywords (ns, node);
CREATE TABLE glossary (ns TEXT PRIMARY KEY, version INTEGER) WITHOUT ROWID;
CREATE TABLE boot (ns TEXT, node TEXT, PRIMARY KEY (ns, node)) WITHOUT ROWID;
CREATE TABLE memory_docs (id INTEGER PRIMARY KEY, uri TEXT, disclosure TEXT, keywords TEXT);
CREATE VIRTUAL TABLE memory_fts USING fts5 (
    text, uri, disclosure, keywords, content = '',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE memory_vocab USING fts5vocab (memory_fts, 'row');
CREATE TABLE reviews (
    ns TEXT, subject TEXT, reviewer TEXT, val TEXT, w_node TEXT, w_seq INTEGER, w_hlc INTEGER,
    PRIMARY KEY (ns, subject, reviewer)
) WITHOUT ROWID;
CREATE TABLE entities (
    id INTEGER PRIMARY KEY, ns TEXT, name TEXT, type TEXT, after INTEGER,
    w_hlc INTEGER, w_node TEXT, w_seq INTEGER, UNIQUE (ns, name)
);
CREATE INDEX entities_in_order ON entities (ns, w_hlc, w_node, w_seq, name, type, after);
CREATE TABLE observations (
    ns TEXT, entity TEXT, obs TEXT, slot TEXT, long_text TEXT,
    w_hlc INTEGER, w_node TEXT, w_seq INTEGER, PRIMARY KEY (ns, entity, obs, slot)
) WITHOUT ROWID;
CREATE INDEX observations_in_order ON observations (ns, entity, w_hlc, w_node, w_seq, long_text);
CREATE TABLE relations (
    ns TEXT, src TEXT, dst TEXT, rtype TEXT, slot TEXT,
    w_hlc INTEGER, w_node TEXT, w_seq INTEGER, PRIMARY KEY (ns, src, dst, rtype, slot)
) WITHOUT ROWID;
CREATE INDEX relations_by_dst ON relations (ns, dst, w_hlc, w_node, w_seq);
CREATE INDEX relations_in_order ON relations (ns, w_hlc, w_node, w_seq, src, dst, rtype);
CREATE VIRTUAL TABLE entity_fts USING fts5 (doc, tokenize = 'trigram case_sensitive 1');
CREATE TABLE vectors (
    stamp INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER NOT NULL UNIQUE, w_node TEXT,
    w_seq INTEGER, vec BLOB
);
"""

FTS_PENDING = 4 << 20
"""Bytes of new index terms each full-text index gathers in memory before it writes them as a
segment (FTS5's ``hashsize``, 1 MiB by default). Fewer, larger segments leave less merging to
do: inserting the trigram documents of 100k entities, 10k a transaction, took 1.40 CPU s with
the default and 1.12-1.16 s with 4 MiB (8 and 16 MiB gain nothing more). Only a transaction
writing that much holds it: a catch-up, a rebuild, an import."""


CHECKPOINT_PAGES = 1024
"""WAL pages (about 4 MiB) after which the commit that took the WAL past them copies it back into
the file (SQLite's automatic checkpoint, ``wal_autocheckpoint``), and the next writer starts it
again from its first page: the bound the WAL keeps, a full disk included. That checkpoint runs
inside the commit (with ``synchronous = NORMAL`` it syncs the WAL and the file), and so does the
sync of the new WAL's header by the commit after it: every 256 pages, about one small write in
six paid the first and the next one the second (an ``fdatasync`` of 3 ms on average on a busy
disk). A thread of the process checkpointing off the writes' path measured no better than
checkpointing less often: a write begins before the thread's syncs end, so the WAL still starts
again mostly at the bound (bench/measured_apart.md, "A write's tail")."""
WAL_KEPT = 2 * CHECKPOINT_PAGES * (4096 + 24)
"""Bytes of WAL file kept when the WAL starts again (``journal_size_limit``; past them the file
is cut back): a WAL at :data:`CHECKPOINT_PAGES` and the commit that crossed them fit, so the file
is reused rather than cut back and grown again each time (an ``ftruncate`` of about 1.3 ms on a
write's path at 4 MiB)."""


class Damaged(Exception):
    """The file cannot be trusted: it is rebuilt from the shards."""


def _statements() -> list[str]:
    return [s.strip() for s in TABLES.split(";") if s.strip()]


def _normalise(sql: str) -> str:
    return " ".join(sql.split())


def _expected_schema() -> set[str]:
    """What ``sqlite_master`` must hold, read back from a scratch database (FTS5 adds shadow
    tables of its own; they are part of what is expected)."""
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.executescript(TABLES)
        rows = scratch.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    finally:
        scratch.close()
    return {f"{t}|{n}|{_normalise(s or '')}" for t, n, s in rows}


_EXPECTED: set[str] | None = None


def _check(conn: sqlite3.Connection) -> None:
    global _EXPECTED
    if _EXPECTED is None:
        _EXPECTED = _expected_schema()
    rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    found = {f"{t}|{n}|{_normalise(s or '')}" for t, n, s in rows}
    if found != _EXPECTED:
        raise Damaged("its schema is not the one this version of noon writes")
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if version is None or version[0] != SCHEMA_VERSION:
        raise Damaged(f"schema version {version[0] if version else None}, not {SCHEMA_VERSION}")


def _configure(conn: sqlite3.Connection, shards: Path | None) -> None:
    register(conn, shards)
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("PRAGMA busy_timeout = 600000")
    conn.execute("PRAGMA cache_size = -16000")
    conn.execute("PRAGMA temp_store = MEMORY")  # reads need no disk space: a full disk serves
    conn.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
    conn.execute(f"PRAGMA journal_size_limit = {WAL_KEPT}")


@contextmanager
def locked(path: Path | None) -> Iterator[None]:
    """The read model's lock, ``flock`` on ``<file>.lock``: one process at a time folds into
    the file or turns a new one to WAL, queued by the kernel. SQLite's busy handler polls with
    sleeps of up to 100 ms, and is never asked while a journal mode changes: two processes
    creating the file at once had one fail with 'database is locked'. ``None`` (a private
    in-memory model) needs no lock."""
    if path is None:
        yield
        return
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _create_if_missing(conn: sqlite3.Connection, path: Path | None) -> bool:
    """Create the tables unless another process did first (under SQLite's write lock); whether
    this connection created them."""
    if conn.execute("PRAGMA journal_mode").fetchone()[0] not in ("memory", "wal"):
        with locked(path):  # only a new file: WAL is kept in the file once set
            conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        created = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None
        if created:
            for statement in _statements():
                conn.execute(statement)
            for index in ("memory_fts", "entity_fts"):  # kept in the file with the index
                conn.execute(
                    f"INSERT INTO {index} ({index}, rank) VALUES ('hashsize', ?)", (FTS_PENDING,)
                )
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("schema", SCHEMA_VERSION), ("generation", 0), ("clock", 0)],
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return created


def remove(path: Path, inode: int | None = None) -> None:
    """Delete the read model's files; with ``inode``, only if ``path`` is still that file (a
    process that found its copy damaged must not delete the copy another one just rebuilt)."""
    if inode is not None:
        try:
            if os.lstat(path).st_ino != inode:
                return
        except FileNotFoundError:
            return
    for suffix in ("", "-wal", "-shm", "-journal"):
        name = f"{path}{suffix}"
        try:
            if os.path.isdir(name) and not os.path.islink(name):
                os.rmdir(name)
            else:
                os.unlink(name)
        except FileNotFoundError:
            pass


def _regular_or_absent(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    return stat.S_ISREG(st.st_mode)


def _writable(directory: Path) -> bool:
    try:
        make_dir(directory)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return False
        raise
    return os.access(directory, os.W_OK)


def connect(path: Path | None, shards: Path | None) -> tuple[sqlite3.Connection, int | None]:
    """A connection to the read model at ``path`` (created or rebuilt as needed) of the shards
    in ``shards`` (long values are read from them) and the inode it opened. ``None``, or a
    directory noon cannot write, gives a private in-memory model that this process alone
    fills from the shards: slower to start, the same answers."""
    if path is None or not _writable(path.parent):
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        _configure(conn, shards)
        _create_if_missing(conn, None)
        return conn, None
    for attempt in range(3):
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            if not _regular_or_absent(name):
                log.warning("%s is not a regular file: the read model is rebuilt", name)
                remove(path)
        create_file(path)  # 0600: SQLite keeps the mode and gives it to -wal and -shm
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=600)
        try:
            inode = os.lstat(path).st_ino
            _configure(conn, shards)
            # Tables this connection has just written in one transaction are the schema
            # itself: checking them against a scratch copy of it (about 1.5 ms of CPU, a new
            # session's first answer on an empty store pays it) could find nothing.
            if not _create_if_missing(conn, path):
                _check(conn)
            return conn, inode
        except (Damaged, sqlite3.DatabaseError) as exc:
            conn.close()
            if full(exc, path.parent):
                raise  # a full disk, not a damaged file: deleting it would lose what it holds
            if attempt == 2 or (isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)):
                raise
            log.warning("the read model %s is rebuilt from the shards: %s", path, exc)
            remove(path, inode)
        except FileNotFoundError:
            conn.close()
    raise Damaged(f"cannot open {path}")
