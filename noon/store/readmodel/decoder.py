"""Reading and decoding shards on the other core while the fold writes (a two-stage pipeline).

A large fold (``noon reindex``, a fresh node's catch-up, a first session after many ops
arrived) spends about a sixth of its time reading shard lines and decoding and validating each
op (:meth:`noon.store.shard.ShardReader.poll`). Here a child process does that: it is told
which shards to read and from where (the folding process's cursors), polls them exactly as the
folding process would, and streams each poll back as plain tuples in :mod:`marshal`'s format,
which the folding process turns back into ops in about a third of the time decoding takes. The
child only reads: every write, every commit and every cursor stays with the folding process,
which applies each poll's reader position as it folds it, so a kill of either process leaves
what a kill of a fold always left (the next fold resumes from the last committed cursor).

If the child cannot start or stops answering (killed, out of memory), the folding process reads
the rest itself from where the last poll it folded ended: the same polls, only slower.
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from noon.core.ops import Op
from noon.store.readmodel.cursors import State, place, position
from noon.store.shard import Corrupt, Poll, ShardReader

log = logging.getLogger("noon.readmodel")

WORTH = 8 << 20
"""Shard bytes to fold from which a child is worth its start (about 0.1 s of CPU)."""

STEP = 1 << 20
"""Bytes the child reads a poll at a time: small polls keep both processes busy (the folding
one waits for the first poll only), however large the fold's own polls are."""

Start = tuple[str, int, int, int, bytes]
"""Where to read a shard from: (path, inode, offset, line, tail mark) of its reader."""
Polls = Iterator[tuple[Poll | None, int, bool, State]]
"""The polls of one shard: (the poll, or None when the file is gone; where it started; whether
the fold may commit after it; the reader's position after it)."""


def start_of(reader: ShardReader) -> Start:
    return (str(reader.path), reader.inode, reader.offset, reader.line, reader.tail_mark)


def polls(reader: ShardReader, cap: int, every: int = 0) -> Polls:
    """Every poll a fold of the shard makes, in order, read here. A batch larger than a poll is
    read again with twice the cap. A fold may commit after a poll that is not the shard's last
    and moved the reader, and, with ``every``, only where a poll of ``every`` bytes from where
    it last could would have ended: where the next poll would read past it."""
    since = reader.offset
    while True:
        before = reader.offset
        try:
            polled = reader.poll(cap)
        except FileNotFoundError:
            yield None, before, False, position(reader)
            return
        start = 0 if polled.rewritten else before
        last = start + cap >= polled.size
        moved = reader.offset != start
        edge = not last and moved and reader.offset + cap - since > every
        if edge or polled.rewritten:
            since = reader.offset
        yield polled, start, edge, position(reader)
        if last:
            return
        if not moved:
            cap *= 2


def _flat(polled: Poll) -> tuple[Any, ...]:
    return (
        [
            (
                o.node,
                o.seq,
                o.hlc,
                o.el,
                o.val,
                o.prev,
                o.by,
                o.bat,
                o.known,
                o.digest,
                o.via,
                o.stub,
            )
            for o in polled.ops
        ],
        [(c.shard, c.line, c.reason, c.excerpt) for c in polled.corrupt],
        polled.at,
        polled.rewritten,
        polled.size,
    )


def _unflat(flat: tuple[Any, ...]) -> Poll:
    ops, corrupt, at, rewritten, size = flat
    return Poll([Op(*o) for o in ops], [Corrupt(*c) for c in corrupt], at, rewritten, size)


def _send(out: IO[bytes], message: Any) -> None:
    data = marshal.dumps(message)
    out.write(len(data).to_bytes(8, "little") + data)


def _receive(source: IO[bytes]) -> Any:
    head = source.read(8)
    if len(head) != 8:
        raise EOFError("the decoder stopped")
    size = int.from_bytes(head, "little")
    data = source.read(size)
    if len(data) != size:
        raise EOFError("the decoder stopped mid-message")
    return marshal.loads(data)


def serve(requests: IO[bytes], out: IO[bytes]) -> None:
    """The child: for each shard asked, every poll of it (:data:`STEP` bytes at a time, a fold
    may commit every ``every`` bytes), then an end mark; each message numbered by its shard's
    place in the order asked."""
    asked = 0
    while True:
        try:
            (path, inode, offset, line, tail), every = _receive(requests)
        except EOFError:
            return
        reader = ShardReader(Path(path))
        place(reader, (inode, offset, line, tail))
        for polled, start, edge, state in polls(reader, min(STEP, every), every):
            _send(out, (asked, (None if polled is None else _flat(polled), start, edge, state)))
        _send(out, (asked, None))
        out.flush()
        asked += 1


class Decoder:
    """The folding process's end: shards asked up front, polls taken in order. Falls back to
    reading in this process when the child fails."""

    def __init__(self) -> None:
        self.asked = 0
        """Shards asked so far: the next one asked is number ``asked``."""
        self.proc: subprocess.Popen[bytes] | None = None
        with contextlib.suppress(OSError):
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "noon.store.readmodel.decoder"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # This process's import path (a checkout run in place too), not the directory
                # the fold was started from.
                env={
                    **os.environ,
                    "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
                    "PYTHONSAFEPATH": "1",
                },
            )

    def ask(self, start: Start, every: int) -> int:
        """Queue a shard (a fold may commit every ``every`` bytes of it): its polls come back
        after those of the shards asked before. Its number, to take them by."""
        self.asked += 1
        if self.proc is None:
            return self.asked - 1
        assert self.proc.stdin is not None
        try:
            _send(self.proc.stdin, (start, every))
            self.proc.stdin.flush()
        except OSError:
            self._lost("cannot be asked")
        return self.asked - 1

    def polls(self, reader: ShardReader, every: int, shard: int) -> Polls:
        """The polls of the shard asked as number ``shard`` (``reader`` at the position it was
        asked from), each applied to ``reader`` as it is taken. What is left of a shard asked
        before, which the fold did not read to its end (its file vanished), is passed over."""
        while self.proc is not None:
            assert self.proc.stdout is not None
            try:
                number, message = _receive(self.proc.stdout)
            except (EOFError, OSError, ValueError, TypeError):
                self._lost("stopped")
                break
            if number < shard:
                continue
            if message is None:
                return
            flat, start, edge, state = message
            place(reader, state)
            yield (None if flat is None else _unflat(flat)), start, edge, state
        yield from polls(reader, every, every)

    def _lost(self, why: str) -> None:
        log.warning("the shard decoder %s: this process reads the shards itself", why)
        self.close()

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(OSError):
            proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        serve(sys.stdin.buffer, sys.stdout.buffer)
