"""The store: every shard of ``NOON_DIR`` folded into one state, and the node's own shard
written safely by any number of processes.

Reads are incremental (:class:`~noon.store.shard.ShardReader`): ``refresh`` costs a directory
listing and one ``stat`` per shard when nothing changed, and otherwise decodes only new lines.
Writes go through :meth:`Store.write`, which holds the own shard's lock while it repairs the
tail, catches up with every shard, lets the caller plan its ops against that fresh state,
stamps them, appends them in one write and fsyncs before returning. Planning under the lock is
what makes "expected version" checks and conflict heads exact even with several writers of one
node on one machine.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from noon.config import Settings
from noon.core.fold import Fold, ForkError
from noon.core.hlc import Clock
from noon.core.ops import AUTO, Draft, Key, Op, OpId, decode, encode
from noon.errors import NoonError
from noon.names import shard_file, shard_node
from noon.store import snapshot
from noon.store.compact import compact_dir
from noon.store.cut import ReadCut
from noon.store.shard import Corrupt, ShardReader, fsync_dir, locked, repair_tail, write_all

log = logging.getLogger("noon.store")

SNAPSHOT_MIN_OPS = 10_000
"""Save a snapshot after folding at least this many ops from the shards."""


def wall_ms() -> int:
    """Wall clock in ms. ``NOON_CLOCK_OFFSET_MS`` shifts it: a test hook only (the fault suite
    skews and jumps writers' clocks with it); read on every call so nothing caches it."""
    offset = os.environ.get("NOON_CLOCK_OFFSET_MS")
    return time.time_ns() // 1_000_000 + (int(offset) if offset else 0)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Bulk decoding creates millions of objects and no cycles; the cyclic collector would
    rescan them over and over (it triples the time of a cold fold)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class StoreError(NoonError):
    """A store problem a person must act on. The message says what to do."""


class ForkDetected(StoreError):
    """Two different ops share one identity: a shard was forked (restored backup, reused id)."""


class ShardBehind(StoreError):
    """The own shard holds fewer ops than a copy of it elsewhere: writing would reuse seqs."""


@dataclass
class Changes:
    keys: set[Key] = field(default_factory=set)
    ops: int = 0
    reset: bool = False
    """The state was rebuilt from scratch (a shard vanished): treat every key as changed."""

    def __bool__(self) -> bool:
        return bool(self.keys or self.ops or self.reset)


class Store:
    """The folded state of one ``NOON_DIR``, and writer of this node's shard. Thread-safe."""

    def __init__(self, settings: Settings, *, clock_ms: Callable[[], int] = wall_ms) -> None:
        self.settings = settings
        self.dir = settings.dir
        self.node = settings.node_id
        self.own = self.dir / shard_file(self.node)
        self.snapshot_path = self.dir / ".noon" / "snapshot"
        self.now = clock_ms
        self.clock = Clock(max_skew_ms=settings.max_skew_ms)
        self.fold = Fold()
        self.readers: dict[str, ShardReader] = {}
        self.corrupt: dict[tuple[str, int], Corrupt] = {}
        self.fork: ForkDetected | None = None
        self.listeners: list[Callable[[Changes], None]] = []
        self.lock = threading.RLock()
        """Held by every refresh and write; hold it to read ``fold`` consistently."""
        self._since_snapshot = 0
        self._compacting: threading.Thread | None = None
        self._cut = ReadCut(self.dir)
        """Held shared while reading every shard; its journal hides the ops of a collection
        under way: see :mod:`noon.store.cut`."""
        self.compaction_failures = 0
        self.dir.mkdir(parents=True, exist_ok=True)
        self.snapshot_loaded = settings.snapshot and self._load_snapshot()
        self.refresh()
        if settings.snapshot and self._since_snapshot >= SNAPSHOT_MIN_OPS:
            self.save_snapshot()

    # -- reading -------------------------------------------------------------------------

    def _load_snapshot(self) -> bool:
        with paused_gc():
            loaded = snapshot.load(self.snapshot_path, self.dir)
        if loaded is None:
            return False
        snap, readers = loaded
        self.fold, self.readers = snap.fold, readers
        self.clock.last = max(self.clock.last, snap.clock)
        return True

    def shard_names(self) -> list[str]:
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        return sorted(n for n in names if shard_node(n) is not None)

    def refresh(self) -> Changes:
        """Fold in whatever the shards gained since the last call."""
        with self.lock, self._cut.held():
            changes = self._refresh()
            if changes:
                for listener in list(self.listeners):
                    listener(changes)
            return changes

    def _refresh(self) -> Changes:
        if self.fork is not None:
            # Stay broken until the operator fixes the files; then rebuild from scratch.
            self.fork = None
            self._reset()
            changes = self._catch_up()
            changes.reset = True
            return changes
        names = set(self.shard_names())
        if any(name not in names for name in self.readers):
            self._reset()
            changes = self._catch_up()
            changes.reset = True
            return changes
        return self._catch_up()

    def _reset(self) -> None:
        self.fold = Fold()
        self.readers = {}
        self.corrupt = {}

    def _catch_up(self) -> Changes:
        with paused_gc():
            return self._apply_new()

    def _apply_new(self) -> Changes:
        changes = Changes()
        now = self.now()
        for name in self.shard_names():
            reader = self.readers.get(name)
            if reader is None:
                reader = self.readers[name] = ShardReader(self.dir / name)
            try:
                polled = reader.poll()
            except FileNotFoundError:
                continue  # removed between listing and reading: the next refresh resets
            if polled.rewritten:
                self.corrupt = {k: v for k, v in self.corrupt.items() if k[0] != name}
            for bad in polled.corrupt:
                if (bad.shard, bad.line) not in self.corrupt:
                    log.warning("corrupt line skipped: %s", bad)
                    self.corrupt[(bad.shard, bad.line)] = bad
            hidden = self._cut.hidden
            for op in polled.ops:
                if op.id in hidden:
                    continue  # a collection under way removes it (noon/store/cut.py)
                self.clock.observe(op.hlc, now)
                try:
                    if self.fold.apply(op) and op.known:
                        changes.keys.add(op.el)
                except ForkError as exc:
                    self.fork = self._describe_fork(exc)
                    raise self.fork from None
            changes.ops += len(polled.ops)
        self._since_snapshot += changes.ops
        return changes

    def _describe_fork(self, exc: ForkError) -> ForkDetected:
        places = []
        for name in self.shard_names():
            try:
                text = (self.dir / name).read_bytes()
            except FileNotFoundError:
                continue
            for no, raw in enumerate(text.split(b"\n"), 1):
                if f'"seq":{exc.seq}'.encode() not in raw:
                    continue
                try:
                    op = decode(raw)
                except ValueError:
                    continue
                if op.id == (exc.node, exc.seq):
                    places.append(f"{name}:{no} (digest {op.digest:016x})")
        return ForkDetected(
            f"forked shard: operation {exc.node}:{exc.seq} exists in two different versions, "
            f"at {' and '.join(places) or 'unknown places'}. Two writers used node id "
            f"{exc.node!r} (a restored backup or a copied NOON_NODE_ID). Stop them, keep the "
            "shard that is right, move the other out of NOON_DIR, and give every machine its "
            "own NOON_NODE_ID. noon refuses to merge until then."
        )

    # -- writing -------------------------------------------------------------------------

    def write(self, plan: Callable[[Fold], Sequence[Draft]], *, client: str = "cli") -> list[Op]:
        """Plan ops against the fresh state and append them as one batch, durably.

        ``plan`` runs under the own shard's lock with the state caught up with every shard; it
        may raise to abort (nothing is written). Returns the ops as written.
        """
        with self.lock, self._cut.held(), locked(self.own):
            created = not self.own.exists()
            fd = os.open(self.own, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
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
                last_seq = tail.last.seq if tail.last else 0
                if self.fold.max_seq(self.node) > last_seq:
                    raise ShardBehind(
                        f"{self.own.name} ends at seq {last_seq} but seq "
                        f"{self.fold.max_seq(self.node)} of node {self.node!r} exists: this "
                        "shard is behind a copy of itself (restored from a backup?). Writing "
                        "would reuse seqs. Recover the shard from a peer (noond does this) "
                        "before writing."
                    )
                drafts = list(plan(self.fold))
                if not drafts:
                    return []
                lines = self._stamp(drafts, last_seq, client)
                write_all(fd, b"".join(line + b"\n" for line in lines))
                if self.settings.fsync:
                    os.fsync(fd)
                    if created:
                        fsync_dir(self.dir)
            finally:
                os.close(fd)
            self.refresh()
        ops = [decode(line) for line in lines]
        if self.compaction_due(ops):
            self._compact_in_background()
        return ops

    def _stamp(self, drafts: list[Draft], last_seq: int, client: str) -> list[bytes]:
        now = self.now()
        last = last_seq + len(drafts)
        bat = last if len(drafts) > 1 else None
        written: dict[Key, OpId] = {}
        lines = []
        for i, d in enumerate(drafts, 1):
            seq = last_seq + i
            if d.prev != AUTO:
                prev = d.prev
            elif d.el in written:  # a second write on one key in a batch replaces the first
                prev = (written[d.el],)
            else:
                prev = self.current_heads(d.el)
            written[d.el] = (self.node, seq)
            lines.append(
                encode(
                    node=self.node,
                    seq=seq,
                    hlc=self.clock.tick(now),
                    el=list(d.el),  # type: ignore[arg-type]
                    val=d.val,
                    prev=prev,  # type: ignore[arg-type]
                    by=client[:128],
                    bat=bat,
                )
            )
        return lines

    def current_heads(self, key: Key) -> tuple[OpId, ...] | None:
        el = self.fold.elements.get(key)
        if el is None or not el.heads:
            return None
        return tuple(sorted(el.heads))

    def compaction_due(self, ops: Sequence[Op]) -> bool:
        """True when a batch just written crossed a multiple of ``compact_after`` in seq. The
        trigger lives in the shard itself, so it survives restarts and fires once per crossing
        whichever process wrote."""
        every = self.settings.compact_after
        if not every or not ops:
            return False
        return ops[-1].seq // every > (ops[0].seq - 1) // every

    def _compact_in_background(self) -> None:
        """Online compaction runs beside the writers: appends wait only for its final copy of
        the appended tail and rename, never for the planning."""
        if self._compacting is not None and self._compacting.is_alive():
            return

        def run() -> None:
            try:
                compact_dir(self.dir, [self.own.name], history=self.settings.history)
            except Exception:  # a failed compaction loses nothing; the next trigger retries
                log.exception("online compaction of %s failed", self.own.name)
                self.compaction_failures += 1

        self._compacting = threading.Thread(target=run, name="noon-compact", daemon=True)
        self._compacting.start()

    def wait_compaction(self) -> None:
        if self._compacting is not None:
            self._compacting.join()

    # -- snapshot ------------------------------------------------------------------------

    def save_snapshot(self) -> None:
        with self.lock:
            try:
                snapshot.save(self.snapshot_path, self.fold, self.readers, self.clock.last)
            except OSError as exc:  # the snapshot is an optimisation: never fail a read for it
                log.warning("could not save the snapshot: %s", exc)
                return
            self._since_snapshot = 0

    def close(self) -> None:
        self.wait_compaction()
        if self.settings.snapshot and self._since_snapshot >= 1000:
            self.save_snapshot()

    def shard_path(self, name: str) -> Path:
        if shard_node(name) is None:
            raise StoreError(f"not a valid shard name: {name!r}")
        return self.dir / name
