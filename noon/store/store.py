"""The store: one process's handle on the machine's memory. It reads through the read model
every process of the machine shares (:mod:`noon.store.readmodel`) and writes this node's shard,
safely from any number of processes.

A write plans first, against a fresh read, *without* the shard's lock: planning can cost (a
quote edit searches a long text) and other writers of the machine must not wait for it. Then,
under the lock, it repairs the shard's tail and folds what arrived meanwhile; if anything did,
the plan is made again there (it is a pure function of what it reads, with a bounded cost), so
"expected version" checks and conflict heads are exact even with several writers of one node.
The ops are stamped, appended in one write and fsync'd before the call returns.

A write is reported done exactly when its batch is durable in the shard: an append that fails
(a full disk) is taken back and raises :class:`DiskFull`; a read model that cannot fold the
batch afterwards falls behind (:mod:`noon.store.readmodel.behind`) without turning the durable
write into a failure, and refuses the next writes until it caught up.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from noon.config import Settings
from noon.core import chain
from noon.core.hlc import Clock
from noon.core.ops import AUTO, MAX_CLIENT, Draft, Key, Op, OpId, encode_batch, line_digest
from noon.names import shard_file
from noon.store import chainstate, checkpoints, retries, signing
from noon.store.compact import compact_dir
from noon.store.errors import AlreadyWritten, DiskFull, ForkDetected, ShardBehind, StoreError
from noon.store.lines import clean_end
from noon.store.private import make_dir
from noon.store.readmodel.behind import Behind, full
from noon.store.readmodel.graph import SqlGraph
from noon.store.readmodel.kg import SqlKg
from noon.store.readmodel.model import ReadModel
from noon.store.readmodel.schema import FILE_NAME
from noon.store.readmodel.search import Search
from noon.store.readmodel.state import FoldView, head_ids
from noon.store.readmodel.touched import Touched
from noon.store.readmodel.vectorizer import Vectorizer
from noon.store.shard import (
    Corrupt,
    append_all,
    fsync_dir,
    locked,
    mapped,
    open_regular,
    repair_tail,
    written,
)

__all__ = [
    "AlreadyWritten",
    "DiskFull",
    "ForkDetected",
    "ShardBehind",
    "Store",
    "StoreError",
    "Touched",
]

log = logging.getLogger("noon.store")

Plan = Callable[[SqlGraph], Sequence[Draft]]


def wall_ms() -> int:
    """Wall clock in ms. ``NOON_CLOCK_OFFSET_MS`` shifts it: a test hook only (the fault suite
    skews and jumps writers' clocks with it); read on every call so nothing caches it."""
    offset = os.environ.get("NOON_CLOCK_OFFSET_MS")
    return time.time_ns() // 1_000_000 + (int(offset) if offset else 0)


def read_model_path(directory: Path) -> Path:
    return directory / ".noon" / FILE_NAME


class Store:
    """The memory of one ``NOON_DIR`` as this process reads and writes it. Thread-safe: every
    read and write holds :attr:`lock`."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock_ms: Callable[[], int] = wall_ms,
        shared: bool = True,
        fold_now: bool = True,
    ) -> None:
        """``shared=False`` keeps the read model in this process's memory instead of the
        machine's file (a check that trusts nothing); ``fold_now=False`` leaves the first fold
        to the first read (``noon reindex`` rebuilds instead)."""
        self.settings = settings
        self.dir = settings.dir
        self.node = settings.node_id
        self.own = self.dir / shard_file(self.node)
        self.now = clock_ms
        self.clock = Clock(max_skew_ms=settings.max_skew_ms)
        self.lock = threading.RLock()
        make_dir(self.dir)
        self.model = ReadModel(
            self.dir, read_model_path(self.dir) if shared else None, self.clock, clock_ms
        )
        self.fold = FoldView(self.model)
        """The folded state (elements, frontier), read from the read model."""
        self.graph = SqlGraph(self.model)
        self.search = Search(self.model)
        self.vectorizer = Vectorizer(self.model, self.lock)
        """Embeds memories for semantic search; started by serving processes."""
        self.listeners: list[Callable[[Touched], None]] = [self.vectorizer.wake]
        self.signer = signing.load(settings)
        self._compacting: threading.Thread | None = None
        self._recent = retries.Recent()
        """The request keys of the own shard's recent writes, read once (under :attr:`lock`)."""
        if fold_now:
            self.refresh()

    def kg(self, namespace: str) -> SqlKg:
        return SqlKg(self.model, namespace)

    # -- reading -------------------------------------------------------------------------

    def refresh(self, *, grown: bool = False) -> Touched:
        """Fold in whatever the shards gained; tell listeners what changed since this process
        last looked (whoever folded it). ``grown``: this process just appended to a shard
        (:meth:`ReadModel.refresh`)."""
        with self.lock:
            touched = self.model.refresh(grown=grown)
            if touched:
                for listener in list(self.listeners):
                    listener(touched)
            return touched

    def rebuild(self) -> None:
        """Throw the read model away and fold every shard again."""
        with self.lock:
            self.model.rebuild()

    @property
    def corrupt(self) -> list[Corrupt]:
        """Complete lines of the shards that are not valid ops (skipped, reported)."""
        with self.lock:
            return [
                Corrupt(*row)
                for row in self.model.conn.execute(
                    "SELECT shard, line, reason, excerpt FROM corrupt ORDER BY shard, line"
                )
            ]

    # -- writing -------------------------------------------------------------------------

    def write(
        self,
        plan: Plan,
        *,
        client: str = "cli",
        via: str = "cli",
        meanwhile: Callable[[], None] | None = None,
    ) -> list[Op]:
        """Plan ops against the fresh state and append them as one batch, durably. ``via`` is
        the edge writing (:data:`noon.core.ops.EDGES`, chosen by that edge's code), ``client``
        the name it was told (shown only). ``meanwhile`` (which must not raise) runs while the
        batch is fsync'd, under the store's lock, the read model as it was before the batch (a
        read that need not see it); it does not run when nothing is written or fsync'd.

        ``plan`` reads the graph it is given (the read model, one consistent snapshot) and may
        raise to abort: nothing is written then. It can run twice (see the module docstring).
        Returns the ops as written.

        Inside :func:`~noon.store.retries.requesting`, a retry of a call this node wrote
        recently and that still stands raises :class:`AlreadyWritten` instead (nothing is
        planned or written), and the batch written records the call's key."""
        request = retries.pending()
        with self.lock:
            self.refresh()
            self._check_current()
            if request is not None:
                self._check_not_retried(request.key)
            with self.graph.reading():
                planned_at = self.model.generation
                drafts = list(plan(self.graph))
        if not drafts:
            return []
        with self.lock, self.model.cut.held(), locked(self.own):
            created = not self.own.exists()
            fd = open_regular(self.own, os.O_RDWR | os.O_CREAT | os.O_APPEND)
            try:
                tail = repair_tail(fd, self.node)
                if tail.torn_bytes or tail.dropped_batch:
                    log.warning(
                        "repaired %s: dropped a torn tail of %d bytes and %d ops of an "
                        "unfinished batch",
                        self.own.name,
                        tail.torn_bytes,
                        tail.dropped_batch,
                    )
                self.refresh()
                self._check_current()
                if tail.last is not None:
                    self.clock.follow(tail.last.hlc)  # another process may have written it
                last_seq = tail.last.seq if tail.last else 0
                self._check_not_behind(last_seq)
                if request is not None and self.model.generation != planned_at:
                    self._check_not_retried(request.key)  # the same call, from another process?
                with self.graph.reading():
                    if self.model.generation != planned_at:
                        drafts = list(plan(self.graph))
                    if not drafts:
                        return []
                    key = request.key if request is not None else None
                    lines, ops = self._stamp(drafts, last_seq, client, via, key)
                lines = self._sign(lines, tail.last)
                for op, line in zip(ops, lines, strict=True):
                    op.digest = line_digest(line)  # of the line as signed
                written(lines, ops)  # the fold below takes them instead of decoding the lines
                self._append(fd, b"".join(line + b"\n" for line in lines), meanwhile)
                if self.settings.fsync and created:
                    fsync_dir(self.dir)
            finally:
                os.close(fd)
            if request is not None:
                request.written = True
            self.refresh(grown=True)  # on a full disk the read model falls behind: durable
        if self.compaction_due(ops) and self.behind is None and not self._one_op_each():
            self._compact_in_background()
        return ops

    @property
    def behind(self) -> Behind | None:
        """Set while the read model cannot fold what the shards gained (a full disk): reads
        show its last committed state, writes are refused."""
        return self.model.behind

    def _check_current(self) -> None:
        if self.model.behind is not None:
            raise DiskFull(self.model.behind.refusal())

    def _append(self, fd: int, data: bytes, meanwhile: Callable[[], None] | None = None) -> None:
        try:
            append_all(fd, data, fsync=self.settings.fsync, meanwhile=meanwhile)
        except OSError as exc:
            if not full(exc):
                raise
            raise DiskFull(
                f"Not written: no space left on the disk for {self.own} ({exc.strerror}). "
                "Nothing was written (the partial append was taken back). Free space there and "
                "call again."
            ) from exc

    def _check_not_retried(self, key: str) -> None:
        """Raise :class:`AlreadyWritten` when this node wrote the call ``key`` names within the
        retry window and that batch still stands."""
        with mapped(self.own) as buf:
            since = self.now() - retries.WINDOW_MS
            try:
                st = self.own.stat()
            except FileNotFoundError:
                return
            file = (st.st_dev, st.st_ino)
            batch = self._recent.batch(buf, clean_end(buf), file, self.node, key, since)
        if batch is not None:
            with self.graph.reading():
                if retries.stands(self.model.conn, batch):
                    raise AlreadyWritten(batch)

    def _check_not_behind(self, last_seq: int) -> None:
        seen = self.fold.highwater(self.node)
        if seen > last_seq:
            raise ShardBehind(
                f"{self.own.name} ends at seq {last_seq} but seq {seen} of node {self.node!r} "
                "was seen here before: this shard is behind a copy of itself (restored from a "
                "backup?). Writing would reuse seqs. Recover the shard from a peer (noond does "
                "this) before writing; if the old ops are truly gone everywhere, `noon reindex` "
                "forgets what this machine saw."
            )

    def _stamp(
        self, drafts: list[Draft], last_seq: int, client: str, via: str, key: str | None
    ) -> tuple[list[bytes], list[Op]]:
        """The batch's lines and its ops, built from the drafts (already validated) rather than
        decoded back from the lines; their digests are set once the lines are signed."""
        n = len(drafts)
        first, bat = last_seq + 1, (last_seq + n if n > 1 else None)
        by = client[:MAX_CLIENT]
        written: dict[Key, OpId] = {}
        held = head_ids(self.model.conn, [d.el for d in drafts if d.prev == AUTO])
        items: list[tuple[Key, dict[str, Any] | None, tuple[OpId, ...] | None]] = []
        for seq, d in enumerate(drafts, first):
            prev: tuple[OpId, ...] | None
            if not isinstance(d.prev, str):  # named by the planner (AUTO is the one string)
                prev = d.prev
            elif d.el in written:  # a second write on one key in a batch replaces the first
                prev = (written[d.el],)
            else:
                prev = held.get(d.el)
            written[d.el] = (self.node, seq)
            items.append((d.el, d.val, prev))
        hlc = self.clock.tick_many(self.now(), n)
        lines = encode_batch(
            node=self.node, seq=first, hlc=hlc, items=items, by=by, bat=bat, via=via, req=key
        )
        ops = []
        for i, (el, val, prev) in enumerate(items):
            named = None if prev is None else tuple((str(p[0]), int(p[1])) for p in prev)
            ops.append(
                Op(self.node, first + i, hlc + i, tuple(el), val, named, by, bat, True, 0, via)
            )
        return lines, ops

    def _sign(self, lines: list[bytes], last: Op | None) -> list[bytes]:
        """Chain the batch onto the shard and sign its last line (PROTOCOL.md §13); the first
        time, sign a checkpoint over the shard's unsigned history first (§13.5). Unsigned when
        this node has no signing key, or when its shard has unsigned lines after signed ones
        and a gap between (its chain cannot cross it; a checkpoint is signed only once)."""
        if self.signer is None:
            return lines
        at = chainstate.head(self.dir, self.node, (last.seq, last.digest) if last else None)
        if not at.proven and checkpoints.make_own(self.dir, self.node, self.signer):
            at = chainstate.head(self.dir, self.node, (last.seq, last.digest) if last else None)
        if at.chain is None:
            log.warning(
                "%s has unsigned history with a gap: this write stays unsigned", self.own.name
            )
            return lines
        seq = at.seq + len(lines)
        after = chain.sign_batch(at.chain, lines, seq, self.signer)
        chainstate.remember(self.dir, self.node, chain.Head(seq, after), line_digest(lines[-1]))
        return lines

    def compaction_due(self, ops: Sequence[Op]) -> bool:
        """True when a batch just written crossed a multiple of ``compact_after`` in seq. The
        trigger lives in the shard itself, so it survives restarts and fires once per crossing
        whichever process wrote."""
        every = self.settings.compact_after
        if not every or not ops:
            return False
        return ops[-1].seq // every > (ops[0].seq - 1) // every

    def _one_op_each(self) -> bool:
        """True when the read model holds as many ops as elements, in one snapshot: every
        element has exactly one op then (each has at least one, and every op of a known kind
        names its element), which no other op can name, so no op is superseded and a
        compaction would drop nothing: a store only ever added to, as a fill of new entities
        makes it. SQLite counts a table's cells page by page: tens of µs at 30k ops, where
        starting the thread that would ask :meth:`_own_superseded` costs more. False whenever
        it cannot tell (the write it follows is durable already)."""
        try:
            with self.lock, self.graph.reading():
                conn = self.model.conn
                ops = conn.execute("SELECT count(*) FROM ops").fetchone()[0]
                return bool(ops == conn.execute("SELECT count(*) FROM elements").fetchone()[0])
        except sqlite3.Error:
            return False

    def _own_superseded(self) -> bool:
        """False when every op of this node is still a head of its element (its winner or one
        of the heads a conflict keeps), so a compaction of its shard would read every shard to
        drop nothing (it drops only superseded ops, :mod:`noon.core.compaction`). One pass over
        this node's ops in the read model (about 0.5 µs an op), on a read-only connection of
        its own: no lock of this process or of the shard is held meanwhile; True whenever it
        cannot tell. Asked only once :meth:`_one_op_each` could not tell."""
        if self.model.path is None:
            return True
        try:
            with closing(sqlite3.connect(f"{self.model.path.as_uri()}?mode=ro", uri=True)) as db:
                row = db.execute(
                    "SELECT 1 FROM ops o JOIN elements e ON e.id = o.eid WHERE o.node = ? "
                    "AND NOT (e.w_node = o.node AND e.w_seq = o.seq) AND NOT EXISTS "
                    "(SELECT 1 FROM heads h WHERE h.eid = o.eid AND h.node = o.node "
                    "AND h.seq = o.seq) LIMIT 1",
                    (self.node,),
                ).fetchone()
        except sqlite3.Error:
            return True
        return row is not None

    def _compact_in_background(self) -> None:
        """Online compaction runs beside the writers: appends wait only for its final copy of
        the appended tail and rename, never for the planning."""
        if self._compacting is not None and self._compacting.is_alive():
            return

        def run() -> None:
            try:
                if self._own_superseded():
                    compact_dir(self.dir, [self.own.name], history=self.settings.history)
            except DiskFull as exc:  # a small disk: said plainly, tried again next trigger
                log.warning("online compaction skipped: %s", exc)
            except Exception:  # a failed compaction loses nothing; the next trigger retries
                log.exception("online compaction of %s failed", self.own.name)

        self._compacting = threading.Thread(target=run, name="noon-compact", daemon=True)
        self._compacting.start()

    def wait_compaction(self) -> None:
        if self._compacting is not None:
            self._compacting.join()

    def close(self) -> None:
        self.vectorizer.stop()
        self.wait_compaction()
        with self.lock:
            self.model.close()
