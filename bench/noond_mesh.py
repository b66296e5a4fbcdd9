"""Replication figures on a loopback mesh of real noond processes with real mTLS.

    python bench/noond_mesh.py [--nodes 5] [--writes 200]

Every node sits behind a byte-counting TCP proxy that the other nodes dial (its advertised
address), so the byte figures are what crosses the wire: TLS records, HTTP headers and bodies.

- latency: a one-op write on one node (round robin) until every other node's copy of that
  shard holds it, with rounds every 30 s so what is measured is the push path;
- wire bytes per op during those writes, per receiving node;
- bytes of one idle exchange (digest compare) when every node holds 10 and 100 shards.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from noon.core.ops import Draft, encode
from noon.store.replica import Summaries
from tests.noond_harness import Node, Pki, free_port, wait_until


class Proxies:
    """TCP relays in a background event loop, counting every byte in both directions."""

    def __init__(self) -> None:
        self.bytes = 0
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def add(self, target_port: int) -> int:
        port = free_port()

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while data := await reader.read(1 << 16):
                    self.bytes += len(data)
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                writer.close()

        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                ur, uw = await asyncio.open_connection("127.0.0.1", target_port)
            except OSError:
                w.close()
                return
            await asyncio.gather(pipe(r, uw), pipe(ur, w))

        async def start() -> None:
            await asyncio.start_server(handle, "127.0.0.1", port)

        asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)
        return port


def mesh(base: Path, pki: Pki, proxies: Proxies, n: int, **env: str) -> list[Node]:
    nodes = [Node(f"n{i}", base, pki) for i in range(n)]
    fronts = [proxies.add(node.port) for node in nodes]
    for i, node in enumerate(nodes):
        node.env = {"NOOND_ADVERTISE": f"127.0.0.1:{fronts[i]}", **env}
    for i, node in enumerate(nodes):
        others = [f"{m.name}@127.0.0.1:{fronts[j]}" for j, m in enumerate(nodes) if j != i]
        node.start(others)
    wait_until(lambda: all(len(m.get("/peers")[1]["peers"]) == n - 1 for m in nodes),
               timeout=60, what="full membership")
    return nodes


def latency(nodes: list[Node], proxies: Proxies, writes: int) -> None:
    summaries = {m.name: Summaries(m.dir) for m in nodes}
    samples = []
    before = proxies.bytes
    for i in range(writes):
        w = nodes[i % len(nodes)]
        w.write((f"lat{i}", f"latency probe {i}"))
        seq = summaries[w.name].get(w.name).seq
        t0 = time.perf_counter()
        pending = [m for m in nodes if m is not w]
        while pending:
            pending = [m for m in pending if summaries[m.name].get(w.name).seq < seq]
            time.sleep(0.0005)  # leave the CPU to the daemons (2-core machines)
            if time.perf_counter() - t0 > 10:
                raise SystemExit(f"write {i} not visible after 10 s")
        samples.append(time.perf_counter() - t0)
    moved = proxies.bytes - before
    samples.sort()
    p = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] * 1000  # noqa: E731
    op_size = len((nodes[0].dir / "n0.jsonl").read_bytes().splitlines()[-1]) + 1
    print(f"write -> visible on all {len(nodes)} nodes over {writes} writes: "
          f"p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, max {samples[-1] * 1000:.1f} ms, "
          f"mean {statistics.mean(samples) * 1000:.1f} ms")
    per_copy = moved / (writes * (len(nodes) - 1))
    print(f"wire bytes per op per receiving node: {per_copy:.0f} "
          f"(op line {op_size} bytes; includes TLS, HTTP headers and the push response)")


def burst(nodes: list[Node], proxies: Proxies, writes: int) -> None:
    """Many one-op writes in a row on one node: pushes coalesce while one is in flight."""
    w = nodes[0]
    summaries = {m.name: Summaries(m.dir) for m in nodes}
    before = proxies.bytes
    t0 = time.perf_counter()
    store = w.store()
    for i in range(writes):
        store.write(lambda fold, i=i: [Draft(("content", "default", f"burst{i}"),
                                             {"text": f"burst {i}"})])
    seq = summaries[w.name].get(w.name).seq
    wait_until(lambda: all(summaries[m.name].get(w.name).seq >= seq for m in nodes),
               timeout=60, what="burst to reach every node")
    elapsed = time.perf_counter() - t0
    per_copy = (proxies.bytes - before) / (writes * (len(nodes) - 1))
    print(f"burst of {writes} one-op writes on one node: visible everywhere after "
          f"{elapsed * 1000:.0f} ms; wire bytes per op per receiving node: {per_copy:.0f}")


def seed_shards(dirs: list[Path], count: int) -> None:
    """``count`` identical author shards in every directory (as after full convergence)."""
    for k in range(count):
        data = b"".join(
            encode(node=f"author{k}", seq=s, hlc=(1_700_000_000_000 << 16) + s,
                   el=["content", "default", f"a{k}.{s}"], val={"text": "x"}, prev=None,
                   by="bench", bat=None) + b"\n"
            for s in range(1, 4)
        )
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
            (d / f"author{k}.jsonl").write_bytes(data)


def idle(base: Path, pki: Pki, shards: int) -> None:
    proxies = Proxies()
    probe = [Node(f"i{shards}x{i}", base, pki) for i in range(2)]
    seed_shards([m.dir for m in probe], shards)
    front = [proxies.add(m.port) for m in probe]
    for i, m in enumerate(probe):
        m.env = {"NOOND_ADVERTISE": f"127.0.0.1:{front[i]}", "NOOND_INTERVAL": "0.25"}
    probe[0].start([f"{probe[1].name}@127.0.0.1:{front[1]}"])
    probe[1].start([f"{probe[0].name}@127.0.0.1:{front[0]}"])
    try:
        def ok() -> float:
            return sum(m.metric("noond_exchanges_total", 'result="ok"') for m in probe)

        wait_until(lambda: ok() >= 8, what="a few idle exchanges")
        b0, e0 = proxies.bytes, ok()
        wait_until(lambda: ok() - e0 >= 200, timeout=120, what="200 idle exchanges")
        b1, e1 = proxies.bytes, ok()
        print(f"idle exchange with {shards} shards held: {(b1 - b0) / (e1 - e0):.0f} wire "
              "bytes (one GET /shards/digest on a kept-alive TLS connection)")
    finally:
        for m in probe:
            m.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--keep", action="store_true", help="keep the nodes' files and logs")
    ap.add_argument("--watch", type=float, default=0.02, help="NOOND_WATCH_INTERVAL")
    ap.add_argument("--no-idle", action="store_true", help="skip the idle-exchange figures")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="noond-bench-") as tmp:
        base = Path(tmp)
        if args.keep:
            base = Path(tempfile.mkdtemp(prefix="noond-bench-"))
            print(f"keeping files in {base}")
        pki = Pki(base / "pki")
        proxies = Proxies()
        nodes = mesh(base, pki, proxies, args.nodes, NOOND_INTERVAL="30",
                     NOOND_WATCH_INTERVAL=str(args.watch), NOON_FSYNC="true")
        try:
            latency(nodes, proxies, args.writes)
            burst(nodes, proxies, args.writes * 5)
        finally:
            for m in nodes:
                m.stop()
        if not args.no_idle:
            for count in (10, 100):
                idle(base, pki, count)


if __name__ == "__main__":
    main()
