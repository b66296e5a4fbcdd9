"""The machine's read model: every shard of ``NOON_DIR`` folded once into a SQLite file that
every process of the machine shares.

Whichever process reads first after a shard grew folds the new complete batches, in one write
transaction (SQLite lets one writer in at a time; readers keep reading the last committed state
meanwhile). A read after one remote op costs that op; an idle refresh costs a directory listing,
one ``stat`` per shard and one small query. The shards stay the only truth, and the file always
shows what they justify:
- a shard that was rewritten (compaction, a collection, a replica re-fetched or truncated) is
  read again, and the ops it no longer holds leave the model;
- a shard that vanished takes its ops with it;
- while a collection's journal exists (:mod:`noon.store.cut`), its ops are left out, whatever
  mix of old and new shard files a reader meets;
- two different ops with one identity are a fork: nothing of the transaction is kept, the fork
  is reported (and again on every refresh until the shard files change), never merged.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from noon.core.fold import ForkError
from noon.core.gcpause import paused
from noon.core.hlc import Clock
from noon.core.ops import Key, Op
from noon.names import shard_file, shard_node
from noon.store.cut import ReadCut
from noon.store.errors import ForkDetected
from noon.store.readmodel import cursors, documents, schema
from noon.store.readmodel.apply import Transaction
from noon.store.readmodel.behind import Behind, full
from noon.store.readmodel.cursors import Cursor, Progress, cursor_of, reader_at, record_corrupt
from noon.store.readmodel.decoder import WORTH, Decoder, Polls, polls, start_of
from noon.store.readmodel.documents import PENDING, Dirty
from noon.store.readmodel.shardcheck import describe_fork
from noon.store.readmodel.touched import (
    Touched,
    changed_since,
    current_generation,
    log_fold,
    touched_since,
)
from noon.store.readmodel.unfolded import (
    SHARDS,
    FileIds,
    Meta,
    cut_mark,
    file_ids,
    fork_record,
    meta_int,
    read_metas,
    size_of,
    unchanged,
    unfolded_bytes,
)
from noon.store.shard import ShardReader, list_shards

log = logging.getLogger("noon.readmodel")

CHUNK_OPS = 50_000
"""Ops folded per transaction while catching up: others see progress, memory stays bounded."""
POLL_BYTES = 16 << 20


class Unshared(Exception):
    """The machine's read model cannot be written here (and no fallback was wanted)."""


class Unsettled(NamedTuple):
    """What a fold found to do: the shards and their identities now, the fork found last
    (None: none), the saved cursors (:data:`~.unfolded.SHARDS`'s rows) and the ``meta`` table
    (a fold reads ``fork``, ``journal``, ``clock`` and ``generation`` of it), read once."""

    names: list[str]
    seen: FileIds
    forked: tuple[str, str, FileIds] | None
    rows: list[tuple[Any, ...]]
    meta: dict[str, object]


class ReadModel:
    """One process's handle on the machine's read model. Not thread-safe: the store serialises
    access with its lock."""

    def __init__(
        self,
        directory: Path,
        path: Path | None,
        clock: Clock,
        now_ms: Callable[[], int],
        *,
        memory_fallback: bool = True,
    ) -> None:
        """``memory_fallback=False``: where the file cannot be written (a full disk, a
        read-only directory), raise instead of folding into this process's memory."""
        self.dir = directory
        self.path = path
        self.clock = clock
        self.now_ms = now_ms
        try:
            self.conn, self.inode = schema.connect(path, directory)
        except (sqlite3.DatabaseError, OSError) as exc:
            if path is None or not full(exc, path.parent) or not memory_fallback:
                raise
            log.warning(
                "no space left on the disk to open the read model %s: this process folds the "
                "shards into its own memory instead",
                path,
            )
            self.path = None
            self.conn, self.inode = schema.connect(None, directory)
        if path is not None and self.inode is None and not memory_fallback:
            self.conn.close()
            raise Unshared(f"cannot write the read model {path}")
        self.cut = ReadCut(directory)
        self.behind: Behind | None = None
        """Set while a full disk keeps the fold from committing (see :mod:`.behind`)."""
        self.shown_ms = now_ms()
        """When the read model last held everything the shards did."""
        self.seen = self.generation
        self._progress = Progress(0, 0, None)
        self.on_progress: Callable[[int, int], None] | None = None
        """Called with (bytes folded, bytes to fold) while catching up (``noon reindex``)."""
        self.chunk_ops = CHUNK_OPS
        """Ops folded per transaction while catching up (what the fold holds at most)."""
        self.poll_bytes = POLL_BYTES
        """Shard bytes decoded at a time."""
        self._slice: int | None = None
        self.partial = False
        """The last refresh stopped after a slice (``slice_ops``): the shards hold more."""

    # -- meta ------------------------------------------------------------------------------

    def _set_meta(self, key: str, value: object) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @property
    def generation(self) -> int:
        return current_generation(self.conn)

    # -- refresh ---------------------------------------------------------------------------

    def refresh(self, *, slice_ops: int | None = None, grown: bool = False) -> Touched:
        """Fold whatever the shards gained; report what changed since this process last
        looked, whichever process folded it. A damaged file is thrown away and rebuilt. On a
        full disk the committed state stays readable and :attr:`behind` says why it is not
        current; the fold is tried again as :meth:`Behind.due` allows.

        ``slice_ops``: stop after the first committed chunk past this many ops, leaving
        :attr:`partial` set (a background folder calls again, releasing the locks between
        slices so a collection waiting for the cut is not held up by a long catch-up).

        ``grown``: the caller knows a shard grew (it just appended to it), so the fold does not
        look at the shards before taking the fold's lock; it looks once, under it."""
        self.partial = False
        if self.behind is not None and not self.behind.due():
            self.behind.pending = unfolded_bytes(self.conn, self.dir)
            return self._since_seen()
        for attempt in range(2):
            self._slice = slice_ops
            try:
                with self.cut.held():
                    meta = self._fold(grown)
                    if meta is None:
                        meta = read_metas(self.conn)
                    self.clock.last = max(self.clock.last, meta_int(meta, "clock"))
                    touched = self._since_seen(meta)
            except (sqlite3.DatabaseError, OSError) as exc:
                if full(exc, self.dir):
                    return self._fell_behind()
                if attempt or not isinstance(exc, sqlite3.DatabaseError) or not damaged(exc):
                    raise
                log.warning("the read model is damaged (%s): rebuilding it from the shards", exc)
                self._reopen()
                continue
            self.shown_ms = self.now_ms()
            if self.behind is not None:
                log.warning("the read model caught up with the shards: the disk has space again")
                self.behind = None
            return touched
        raise AssertionError("unreachable")

    def _fell_behind(self) -> Touched:
        with contextlib.suppress(sqlite3.Error):
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
        first = self.behind is None
        where = self.path if self.path is not None else "this process's copy of it"
        self.behind = Behind.start(
            self.dir,
            f"the disk holding the read model ({where}) is full",
            self.shown_ms,
            unfolded_bytes(self.conn, self.dir),
        )
        if first:
            log.warning(
                "no space left for the read model %s: reads show it as it was, writes are "
                "refused, and the fold is tried again as space returns",
                where,
            )
        return self._since_seen()

    def _reopen(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self.conn.close()
        if self.path is not None:
            schema.remove(self.path, self.inode)
        self.conn, self.inode = schema.connect(self.path, self.dir)
        self.seen = -1

    def _fold(self, grown: bool) -> Meta | None:
        """Fold what the shards gained. Returns ``meta`` as the look read it when it found
        nothing to fold (nothing was folded since: the refresh need not read it again), None
        when it took the fold's lock."""
        if not grown:
            found, meta = self._unsettled()
            if found is None:
                return meta
        with schema.locked(self.path), paused():
            self._fold_locked()
        return None

    def _unsettled(self) -> tuple[Unsettled | None, Meta]:
        """What there is to fold, None when nothing (every shard is where its cursor says), and
        ``meta`` as read for the look. Raises the fork found last while the shard files are
        still the ones it was found in."""
        names = list_shards(self.dir)
        seen = file_ids(self.dir, names)
        meta = read_metas(self.conn)
        rows = self.conn.execute(SHARDS).fetchall()
        forked = fork_record(meta)
        if forked is not None:
            if forked[2] == seen:
                raise ForkDetected(forked[1])
        elif PENDING not in meta and unchanged(rows, seen, meta, cut_mark(self.cut)):
            return None, meta
        return Unsettled(names, seen, forked, rows, meta), meta

    def _fold_locked(self) -> None:
        """Under the fold's lock: look at the shards once more, inside the write transaction
        (so what it read of the read model stays true until the commit), and fold."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            found = self._unsettled()[0]
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        if found is None:
            self.conn.execute("ROLLBACK")
            return  # another process folded it while this one waited
        journal = cut_mark(self.cut)
        tx = Transaction(self.conn, Dirty(everything=PENDING in found.meta))
        try:
            if found.forked is not None:
                self._forget_node(tx, found.forked[0])
                found = found._replace(rows=self.conn.execute(SHARDS).fetchall())
            tx = self._catch_up(tx, found, journal)
            self._commit(tx, found.meta)
        except ForkError as exc:
            self.conn.execute("ROLLBACK")
            message = describe_fork(self.dir, exc)
            self.conn.execute("BEGIN IMMEDIATE")
            self._set_meta("fork", orjson.dumps([exc.node, message, found.seen]).decode())
            self._documents(tx.docs, found.meta)  # those of the transactions committed before
            self.conn.execute("COMMIT")
            raise ForkDetected(message) from None
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def _forget_node(self, tx: Transaction, node: str) -> None:
        """The forked shard changed: read it again from scratch, trusting nothing held of it."""
        tx.remove_ops(node, tx.held_seqs(node))
        self.conn.execute("DELETE FROM shards WHERE name = ?", (shard_file(node),))
        self.conn.execute("DELETE FROM corrupt WHERE shard = ?", (shard_file(node),))
        self.conn.execute("DELETE FROM meta WHERE key = 'fork'")

    # -- catching up -----------------------------------------------------------------------

    def _catch_up(self, tx: Transaction, found: Unsettled, journal: str) -> Transaction:
        """Fold what each shard gained. A shard whose file is the one its cursor saw last, at
        the size and time it saw (the identity the idle refresh trusts), is not read again,
        unless the collection journal changed since; so a fold costs the shards that moved,
        not every shard of the mesh."""
        names, seen, meta = found.names, found.seen, found.meta
        same_journal = str(meta.get("journal", "")) == journal
        if not same_journal:
            self._leave_out_journal(tx)
            self._set_meta("journal", journal)
        saved: dict[str, Cursor] = {}
        folded: set[str] = set()
        for row in found.rows:
            saved[row[0]] = cursor_of(row)
            if same_journal and seen.get(row[0]) == (row[1], row[6], row[7]):
                folded.add(row[0])
        for gone in sorted(set(saved) - set(names)):
            node = shard_node(gone)
            if node is not None:
                tx.remove_ops(node, tx.held_seqs(node))
            cursors.forget(self.conn, gone)
        sizes = {n: size_of(self.dir, n) for n in names}
        self._progress = Progress(
            sum(sizes.values()),
            sum(int(c[2]) for c in saved.values() if c[0] in names),
            self.on_progress,
        )
        todo = [n for n in names if n not in folded]
        readers = {n: reader_at(self.dir, n, saved.get(n)) for n in todo}
        ahead = sum(max(sizes[n] - readers[n].offset, 0) for n in todo)
        decoder = Decoder() if ahead >= WORTH and self._slice is None else None
        try:
            asked = (
                {}
                if decoder is None
                else {n: decoder.ask(start_of(readers[n]), self.poll_bytes) for n in todo}
            )
            for name in todo:
                reader = readers[name]
                taken = (
                    polls(reader, self.poll_bytes)
                    if decoder is None
                    else decoder.polls(reader, self.poll_bytes, asked[name])
                )
                tx = self._shard(tx, name, reader, taken, meta)
                if self.partial:
                    break
        finally:
            if decoder is not None:
                decoder.close()
        return tx

    def _leave_out_journal(self, tx: Transaction) -> None:
        by_node: dict[str, list[int]] = {}
        for node, seq in self.cut.hidden:
            by_node.setdefault(node, []).append(seq)
        for node, seqs in sorted(by_node.items()):
            tx.remove_ops(node, seqs)

    def _shard(
        self,
        tx: Transaction,
        name: str,
        reader: ShardReader,
        taken: Polls,
        meta: dict[str, object],
    ) -> Transaction:
        """Fold the polls ``taken`` of the shard ``reader`` reads (each one has moved it);
        ``meta`` holds the ``clock`` and ``generation`` the open transaction found."""
        node = shard_node(name)
        assert node is not None
        kept: set[int] | None = None
        size = 0
        for polled, start, edge, _ in taken:
            if polled is None:
                return tx  # removed meanwhile: the next refresh finds it gone
            size = polled.size
            if polled.rewritten:
                kept = set()
                self.conn.execute("DELETE FROM corrupt WHERE shard = ?", (name,))
            record_corrupt(self.conn, polled.corrupt)
            if kept is not None:
                kept.update(op.seq for op in polled.ops if op.node == node and not op.stub)
            tx.add(self._own(tx, name, node, polled.ops), polled.at)
            self._progress.advance(reader.offset - start)
            if edge and kept is None and tx.added >= self.chunk_ops:
                cursors.save(self.conn, self.dir, name, reader, size, partway=True)
                self._commit(tx, meta, last=False)
                self.conn.execute("BEGIN IMMEDIATE")
                meta.update(read_metas(self.conn))
                if self._slice is not None:
                    self._slice -= tx.added
                tx = Transaction(self.conn, tx.docs)
                if self._slice is not None and self._slice <= 0:
                    self.partial = True
                    return tx
        if kept is not None:
            tx.remove_ops(node, [s for s in tx.held_seqs(node) if s not in kept])
        cursors.save(self.conn, self.dir, name, reader, size)
        return tx

    def _own(self, tx: Transaction, name: str, node: str, ops: list[Op]) -> list[Op]:
        """The shard's own ops, minus those a collection under way removes. Ops of another
        author in a shard (a backup copied in under another name, a hand edit) are not folded,
        but one that differs from the op held under its identity is a fork, reported."""
        hidden = self.cut.hidden
        own, foreign = [], []
        for op in ops:
            if op.stub:
                continue  # what compaction left of dropped ops: nothing to read
            if op.node != node:
                foreign.append(op)
            elif not hidden or op.id not in hidden:
                own.append(op)
        if foreign:
            log.warning("%s holds %d op(s) of other nodes: not folded", name, len(foreign))
            tx.check(foreign)
        return own

    def _commit(self, tx: Transaction, meta: dict[str, object], *, last: bool = True) -> None:
        """Finish ``tx`` and commit; ``meta`` holds the ``clock`` and ``generation`` this
        transaction found. The fold's ``last`` transaction writes the search documents every
        one of its transactions left (:class:`.documents.Dirty`); one before it that leaves
        some says so in ``meta`` (:data:`.documents.PENDING`)."""
        keys = tx.finish()
        if tx.newest:
            self.clock.observe(tx.newest, self.now_ms())
        self._set_meta("clock", max(meta_int(meta, "clock"), self.clock.last))
        if keys or tx.removed:
            log_fold(self.conn, keys, meta_int(meta, "generation"))
        if last:
            self._documents(tx.docs, meta)
        elif PENDING not in meta and tx.docs.left():
            self._set_meta(PENDING, 1)
        self.conn.execute("COMMIT")

    def _documents(self, docs: Dirty, meta: dict[str, object]) -> None:
        """Write the search documents ``docs`` holds, and the ``meta`` saying some were left."""
        documents.refresh(self.conn, docs)
        if PENDING in meta:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (PENDING,))

    def _since_seen(self, meta: Meta | None = None) -> Touched:
        """``meta``: its ``generation`` and ``reset`` as just read, if they were."""
        if meta is None:
            meta = read_metas(self.conn)
        touched, self.seen = touched_since(self.conn, self.seen, meta)
        return touched

    def changed_since(self, generation: int) -> set[Key] | None:
        """The keys the folds after ``generation`` touched (:func:`.touched.changed_since`)."""
        return changed_since(self.conn, generation)

    # -- rebuild ---------------------------------------------------------------------------

    def rebuild(self) -> None:
        """Throw the file away and fold every shard again (``noon reindex``)."""
        self._reopen_empty()
        self.refresh()

    def _reopen_empty(self) -> None:
        self.conn.close()
        if self.path is not None:
            schema.remove(self.path)
        self.conn, self.inode = schema.connect(self.path, self.dir)
        self.seen = -1

    def close(self) -> None:
        self.conn.close()


def damaged(exc: sqlite3.DatabaseError) -> bool:
    """SQLite says the file is not a database or is corrupt (not: busy, full, read-only)."""
    return type(exc) is sqlite3.DatabaseError or isinstance(exc, sqlite3.IntegrityError)
