"""What the mesh benchmark (:mod:`bench.noond_mesh`) measures propagation with, each part kept
out of the others' way on a 2-core machine.

- :class:`Proxies`: byte-counting TCP relays in front of every daemon, in a process of their
  own. In the bench's process they waited for the GIL while the bench wrote (a write folds),
  and every frame of the write being measured passed through them.
- :class:`Writers`: a process that holds one open :class:`noon.store.store.Store` per node and
  writes on request, as a session does (a store opened per write folded every shard again).
- :class:`Arrivals`: when each node's copy of a shard holds an op (appended to the file) and
  when it is durable there (fsynced), told by inotify, so the bench sleeps while it waits
  instead of polling beside the daemons it measures. The writer's own shard is watched the
  same way, so a write is timed from its append, not from the return of the call that made it
  (which folds and answers after the append; the daemon pushes meanwhile).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import select
import time
from collections.abc import Awaitable, Callable, Iterable
from multiprocessing.connection import Connection
from pathlib import Path

import orjson

from noon.config import Settings
from noon.core.ops import Draft
from noon.store.serve import Summaries
from noon.store.store import Store
from noond.inotify import open_watch
from tests.harness.stores import plan_of

_SPAWN = multiprocessing.get_context("spawn")


def _relay(conn: Connection) -> None:
    """The relays' process: ``("add", target_port)`` starts one and answers its port,
    ``("bytes",)`` answers the bytes relayed so far."""
    loop = asyncio.new_event_loop()
    moved = [0]
    adding: set[asyncio.Task[None]] = set()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(1 << 16):
                moved[0] += len(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    def front(
        target: int,
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                ur, uw = await asyncio.open_connection("127.0.0.1", target)
            except OSError:
                w.close()
                return
            await asyncio.gather(pipe(r, uw), pipe(ur, w))

        return handle

    async def add(target: int) -> None:
        server = await asyncio.start_server(front(target), "127.0.0.1", 0)
        conn.send(server.sockets[0].getsockname()[1])

    def command() -> None:
        try:
            what = conn.recv()
        except EOFError:
            loop.stop()
            return
        if what[0] == "add":
            task = loop.create_task(add(what[1]))
            adding.add(task)
            task.add_done_callback(adding.discard)
        else:
            conn.send(moved[0])

    loop.add_reader(conn.fileno(), command)
    loop.run_forever()


class Proxies:
    """TCP relays, one per daemon, counting every byte in both directions (in their own
    process)."""

    def __init__(self) -> None:
        self._conn, theirs = _SPAWN.Pipe()
        self._proc = _SPAWN.Process(target=_relay, args=(theirs,), daemon=True)
        self._proc.start()
        theirs.close()

    def add(self, target_port: int) -> int:
        """A relay to ``target_port``; its port."""
        self._conn.send(("add", target_port))
        return int(self._conn.recv())

    @property
    def bytes(self) -> int:
        self._conn.send(("bytes",))
        return int(self._conn.recv())

    def close(self) -> None:
        self._conn.close()
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()


def _write(conn: Connection, nodes: dict[str, str]) -> None:
    """The writers' process: ``(node, ident, text)`` writes one content element on ``node``'s
    store and answers its seq."""
    stores = {
        name: Store(Settings(dir=Path(directory), node_id=name))
        for name, directory in nodes.items()
    }
    try:
        while True:
            try:
                node, ident, text = conn.recv()
            except EOFError:
                return
            store = stores[node]
            store.write(plan_of([Draft(("content", "default", ident), {"text": text})]))
            conn.send(Summaries(store.settings.dir).get(node).seq)
    finally:
        for store in stores.values():
            store.close()


class Writers:
    """Writes on any node through a store kept open, as a session's, in a process of its own."""

    def __init__(self, nodes: dict[str, Path]) -> None:
        self._conn, theirs = _SPAWN.Pipe()
        named = {name: str(directory) for name, directory in nodes.items()}
        self._proc = _SPAWN.Process(target=_write, args=(theirs, named), daemon=True)
        self._proc.start()
        theirs.close()

    def start(self, node: str, ident: str, text: str) -> None:
        """Begin a one-op write on ``node``; :meth:`done` answers its seq."""
        self._conn.send((node, ident, text))

    def done(self) -> int:
        return int(self._conn.recv())

    def close(self) -> None:
        self._conn.close()
        self._proc.join(30)
        if self._proc.is_alive():
            self._proc.kill()


class Arrivals:
    """When each node's copy of a shard held an op, and when it was durable there, told by
    inotify on every node's directory and its ``.noon``.

    Durable is read from the chain-head record (``.noon/<author>.chain``) that
    :func:`noon.store.receive.append` rewrites after its fsync, so it needs signed shards."""

    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs
        self.summaries = {name: Summaries(d) for name, d in dirs.items()}
        self.watches = []
        for directory in dirs.values():
            (directory / ".noon").mkdir(exist_ok=True)
            for where in (directory, directory / ".noon"):
                watch = open_watch(where)
                if watch is None:
                    raise SystemExit(f"this bench needs inotify on {where}")
                self.watches.append(watch)
        self.poller = select.poll()
        for watch in self.watches:
            self.poller.register(watch.fd, select.POLLIN)

    def close(self) -> None:
        for watch in self.watches:
            watch.close()

    def _durable(self, node: str, author: str) -> int:
        try:
            record = orjson.loads((self.dirs[node] / ".noon" / f"{author}.chain").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return 0
        return int(record["seq"])

    def wait(
        self, author: str, seq: int, readers: Iterable[str], timeout: float = 10.0
    ) -> tuple[float, dict[str, float], dict[str, float]]:
        """Until every one of ``readers`` holds ``author``'s op ``seq`` durably: when the
        author's shard held it, and when each reader held it and had it durable, as
        ``time.perf_counter()`` readings."""
        readers = list(readers)
        deadline = time.perf_counter() + timeout
        appended: float | None = None
        held: dict[str, float] = {}
        durable: dict[str, float] = {}
        while appended is None or len(durable) < len(readers):
            now = time.perf_counter()
            if appended is None and self.summaries[author].get(author).seq >= seq:
                appended = now
            for name in readers:
                if name not in held and self.summaries[name].get(author).seq >= seq:
                    held[name] = now
                if name not in durable and self._durable(name, author) >= seq:
                    durable[name] = now
                    held.setdefault(name, now)
            if appended is not None and len(durable) == len(readers):
                break
            if now > deadline:
                raise SystemExit(f"op {author}:{seq} not durable everywhere after {timeout} s")
            for fd, _ in self.poller.poll(50):
                os.read(fd, 1 << 16)  # drained: a change anywhere means look again
        return appended, held, durable
