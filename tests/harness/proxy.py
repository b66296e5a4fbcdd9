"""A userspace TCP proxy on loopback that the nemesis controls: one listener in front of every
daemon, so every byte between two daemons passes through it.

Each daemon binds its outgoing connections to its own loopback IP (``NOOND_SOURCE_IP``), so the
listener in front of ``dst`` knows the sender ``src`` of every connection from its peer address
and applies the policy of the directed link ``src -> dst``: pass, refuse (connection reset),
black hole (accepted, never answered: the caller times out), loss (the connection is cut after
a random number of bytes) and delay (each chunk waits a random time up to ``delay``).
Changing a link cuts its open connections, so pooled keep-alive connections obey partitions too.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

UPSTREAM_IP = "127.0.0.2"


@dataclass
class Link:
    mode: str = "pass"  # pass | refuse | blackhole
    loss: float = 0.0
    """Probability that a connection is cut somewhere in its first 64 KiB."""
    delay: float = 0.0
    """Upper bound of the random delay (seconds) before each forwarded chunk."""


@dataclass(eq=False)
class _Conn:
    src: str
    dst: str
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    def cut(self) -> None:
        for w in self.writers:
            with contextlib.suppress(Exception):
                w.transport.abort()


class Proxy:
    """Listeners for named destinations, run on a private event loop thread."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.links: dict[tuple[str, str], Link] = {}
        self.sources: dict[str, str] = {}
        """source IP -> node name"""
        self.targets: dict[str, tuple[str, int]] = {}
        self.ports: dict[str, int] = {}
        self.conns: set[_Conn] = set()
        self.stats = {"connections": 0, "refused": 0, "blackholed": 0, "cut": 0, "delayed": 0}
        self.loop = asyncio.new_event_loop()
        self._servers: list[asyncio.Server] = []
        self._thread = threading.Thread(
            target=self.loop.run_forever, daemon=True, name="nemesis-proxy"
        )
        self._thread.start()

    def _call(self, coro: Any) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout=30)

    def add(self, name: str, source_ip: str, target: tuple[str, int]) -> int:
        """Put a listener in front of ``target`` (the daemon ``name``); returns its port."""
        self.sources[source_ip] = name
        self.targets[name] = target

        async def start() -> int:
            server = await asyncio.start_server(
                lambda r, w: self._serve(name, r, w), "127.0.0.1", 0
            )
            self._servers.append(server)
            return int(server.sockets[0].getsockname()[1])

        self.ports[name] = self._call(start())
        return self.ports[name]

    def link(self, src: str, dst: str) -> Link:
        return self.links.setdefault((src, dst), Link())

    def set(self, src: str, dst: str, link: Link) -> None:
        """Change one directed link and cut its open connections."""

        def apply() -> None:
            self.links[(src, dst)] = link
            for conn in list(self.conns):
                if (conn.src, conn.dst) == (src, dst):
                    conn.cut()

        self.loop.call_soon_threadsafe(apply)

    def heal(self) -> None:
        names = list(self.targets)
        for a in names:
            for b in names:
                if a != b and self.links.get((a, b), Link()) != Link():
                    self.set(a, b, Link())

    def close(self) -> None:
        async def stop() -> None:
            for s in self._servers:
                s.close()
            for conn in list(self.conns):
                conn.cut()

        with contextlib.suppress(Exception):
            self._call(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)

    # -- one connection ---------------------------------------------------------------

    async def _serve(
        self, dst: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        src = self.sources.get(peer[0] if peer else "", "?")
        link = self.links.get((src, dst), Link())
        self.stats["connections"] += 1
        conn = _Conn(src, dst, [writer])
        if link.mode == "refuse":
            self.stats["refused"] += 1
            conn.cut()
            return
        self.conns.add(conn)
        try:
            if link.mode == "blackhole":
                self.stats["blackholed"] += 1
                while await reader.read(65536):  # swallow until the caller gives up
                    pass
                return
            host, port = self.targets[dst]
            try:
                # From another loopback IP than the daemons listen on, so a connection's
                # ephemeral port never takes the port of a daemon that is restarting.
                up_reader, up_writer = await asyncio.open_connection(
                    host, port, local_addr=(UPSTREAM_IP, 0)
                )
            except OSError:
                conn.cut()
                return
            conn.writers.append(up_writer)
            budget = self.rng.randrange(1, 65536) if self.rng.random() < link.loss else None
            counter = [budget]
            await asyncio.gather(
                self._pipe(reader, up_writer, link, counter, conn),
                self._pipe(up_reader, writer, link, counter, conn),
            )
        finally:
            self.conns.discard(conn)
            conn.cut()

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        link: Link,
        counter: list[int | None],
        conn: _Conn,
    ) -> None:
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    with contextlib.suppress(Exception):
                        writer.write_eof()
                    return
                if link.delay:
                    self.stats["delayed"] += 1
                    await asyncio.sleep(self.rng.random() * link.delay)
                left = counter[0]
                if left is not None:
                    if len(data) >= left:
                        writer.write(data[:left])
                        self.stats["cut"] += 1
                        conn.cut()
                        return
                    counter[0] = left - len(data)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError, RuntimeError):
            conn.cut()
