"""Relay figures (PROTOCOL.md §14) on one S3 server on loopback, beside server-noonien's
whole-shard rewrite with If-Match on the same server as the anchor.

    python -m bench.relay [--server moto|seaweedfs] [--ops 2000] [--anchor-ops 300]
                          [--catch-up 20000]

- writes in a row: 4 machines, each writing one-op batches as fast as its store takes them
  while its relay uploads every second (``NOOND_RELAY_FLUSH``); ops/s until the last op is in
  the bucket (bound by the local stores here: 4 writers share 2 cores), and PUTs and sealed
  bytes per op;
- the same 4 writers with no relay (the local stores alone), as the ceiling of the above;
- through the relay: 4 machines' one-op batches uploaded at once and taken by a fifth machine,
  verified and appended: ops/s from the first upload to the last op stored at the reader;
- the anchor: 4 writers each appending one op at a time to its own shard object the way
  server-noonien's S3 backend does (GET the object, PUT it whole with ``If-Match``);
- catch-up: a machine that wakes up and takes N ops of one author from the bucket (segments
  as they were uploaded, 500 ops each), verified and appended; beside it the anchor's reader,
  one GET of a plaintext shard of the same N ops.

Every machine here has a certified signing key and verifies what it takes, as a real mesh does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.s3 import CREDENTIALS, S3Server, moto_server, seaweed_server
from noon import certs
from noon.config import Settings
from noon.core.ops import Draft
from noon.store import signing
from noon.store.store import Store
from noond.metrics import Metrics
from noond.relay.link import RelaySettings
from noond.relay.opener import open_backend
from noond.relay.sync import Relay
from noond.shards import Holdings
from noond.signers import Signers
from tests.harness.mesh import Pki
from tests.harness.stores import plan_of

WRITERS = 4


def machine(name: str, base: Path, pki: Pki, url: str, mesh: certs.MeshKey) -> Relay:
    directory = base / name
    directory.mkdir(parents=True)
    pki.install_signing(name, directory)
    signers = Signers(directory, certs.ca_certificate(pki.node(name)[2]))
    signers.add(pki.signing(name)[1].read_bytes(), name)
    return Relay(
        open_backend(url),
        mesh,
        node=name,
        holdings=Holdings(directory, name, set),
        signers=signers,
        sign=signing.load(Settings(dir=directory, node_id=name, fsync=False)),
        revoked=set,
        metrics=Metrics(),
        settings=RelaySettings(flush=1.0, head_every=30.0, fsync=False),
    )


def requests(relay: Relay, op: str) -> float:
    value = relay.link.metrics.registry.get_sample_value(
        "noond_relay_requests_total", {"relay": relay.url, "op": op}
    )
    return value or 0.0


def text(i: int) -> str:
    return f"memory {i}: " + "a line an agent might keep about its work " * 4


def write_ops(directory: Path, node: str, n: int, done: threading.Event) -> None:
    store = Store(Settings(dir=directory, node_id=node, fsync=False))
    try:
        for i in range(n):
            store.write(plan_of([Draft(("content", "default", f"{node}.{i}"), {"text": text(i)})]))
    finally:
        store.close()
        done.set()


async def writes_in_a_row(
    base: Path, pki: Pki, url: str, mesh: certs.MeshKey, n: int
) -> dict[str, Any]:
    relays = [machine(f"w{i}", base, pki, url, mesh) for i in range(WRITERS)]
    done = [threading.Event() for _ in relays]
    t0 = time.perf_counter()
    for relay, flag in zip(relays, done, strict=True):
        threading.Thread(
            target=write_ops, args=(relay.holdings.dir, relay.link.node, n, flag), daemon=True
        ).start()

    async def upload(relay: Relay, flag: threading.Event) -> None:
        while True:
            finished = flag.is_set()
            await relay.up.upload()
            if finished:
                await relay.up.write_heads(force=True)
                return
            await asyncio.sleep(relay.settings.flush)

    await asyncio.gather(*(upload(r, f) for r, f in zip(relays, done, strict=True)))
    seconds = time.perf_counter() - t0
    total = WRITERS * n
    puts = sum(requests(r, "put") for r in relays)
    sealed = sum(r.stats.bytes_up for r in relays)
    return {
        "writers": WRITERS,
        "ops": total,
        "seconds": round(seconds, 2),
        "ops_per_s": round(total / seconds, 1),
        "segment_puts_per_op": round(puts / total, 4),
        "head_puts_per_op": round(sum(requests(r, "put_head") for r in relays) / total, 4),
        "sealed_bytes_per_op": round(sealed / total, 1),
    }


def local_writes(base: Path, pki: Pki, n: int) -> dict[str, Any]:
    """The same 4 writers with no relay at all: what the local stores take on this machine
    (the ceiling of writes in a row, measured beside them)."""
    dirs = []
    for i in range(WRITERS):
        directory = base / f"l{i}"
        directory.mkdir(parents=True)
        pki.install_signing(f"l{i}", directory)
        dirs.append(directory)
    flags = [threading.Event() for _ in dirs]
    threads = [
        threading.Thread(target=write_ops, args=(d, f"l{i}", n, flag), daemon=True)
        for i, (d, flag) in enumerate(zip(dirs, flags, strict=True))
    ]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - t0
    return {
        "writers": WRITERS,
        "ops": WRITERS * n,
        "seconds": round(seconds, 2),
        "ops_per_s": round(WRITERS * n / seconds, 1),
    }


async def through(base: Path, pki: Pki, url: str, mesh: certs.MeshKey, n: int) -> dict[str, Any]:
    relays = [machine(f"t{i}", base, pki, url, mesh) for i in range(WRITERS)]
    for relay in relays:
        write_ops(relay.holdings.dir, relay.link.node, n, threading.Event())
    reader = machine("reader", base, pki, url, mesh)
    t0 = time.perf_counter()
    await asyncio.gather(*(r.up.upload() for r in relays))
    await asyncio.gather(*(r.up.write_heads(force=True) for r in relays))
    up = time.perf_counter() - t0
    taken = await reader.down.read()
    seconds = time.perf_counter() - t0
    total = WRITERS * n
    assert taken == total, f"took {taken} of {total}"
    return {
        "writers": WRITERS,
        "ops": total,
        "upload_seconds": round(up, 2),
        "seconds": round(seconds, 2),
        "ops_per_s": round(total / seconds, 1),
        "requests_per_op": round(
            (sum(r.stats.requests for r in relays) + reader.stats.requests) / total, 4
        ),
    }


def anchor_writes(server: S3Server, n: int) -> dict[str, Any]:
    """server-noonien's S3 append: GET the shard object, PUT it whole with If-Match."""
    line = json.dumps({"text": text(0), "node": "w", "seq": 1}).encode() + b"\n"
    stats = {"gets": 0, "puts": 0, "bytes": 0}
    lock = threading.Lock()

    def writer(w: int) -> None:
        client = server.client()
        key = f"noonien/w{w}.jsonl"
        for _ in range(n):
            try:
                got = client.get_object(Bucket=server.bucket, Key=key)
                body, cond = got["Body"].read(), {"IfMatch": got["ETag"]}
            except client.exceptions.NoSuchKey:
                body, cond = b"", {"IfNoneMatch": "*"}
            client.put_object(Bucket=server.bucket, Key=key, Body=body + line, **cond)
            with lock:
                stats["gets"] += 1
                stats["puts"] += 1
                stats["bytes"] += 2 * len(body) + len(line)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    total = WRITERS * n
    return {
        "writers": WRITERS,
        "ops": total,
        "seconds": round(seconds, 2),
        "ops_per_s": round(total / seconds, 1),
        "puts_per_op": round(stats["puts"] / total, 4),
        "bytes_per_op": round(stats["bytes"] / total, 1),
        "note": f"O(shard) per op: bytes per op at a shard of {n} ops, growing with it",
    }


async def catch_up(
    base: Path, pki: Pki, url: str, mesh: certs.MeshKey, n: int, server: S3Server
) -> dict[str, Any]:
    author = machine("history", base, pki, url, mesh)
    store = Store(Settings(dir=author.holdings.dir, node_id="history", fsync=False))
    try:
        for start in range(0, n, 500):
            for b in range(start, min(n, start + 500), 100):
                store.write(
                    plan_of(
                        [
                            Draft(("content", "default", f"h.{i}"), {"text": text(i)})
                            for i in range(b, min(n, b + 100))
                        ]
                    )
                )
            await author.up.upload()  # as uploaded over time: a segment per 500 ops
    finally:
        store.close()
    await author.up.write_heads(force=True)
    shard = (author.holdings.dir / "history.jsonl").read_bytes()
    reader = machine("wakes", base, pki, url, mesh)
    t0 = time.perf_counter()
    taken = await reader.down.read()
    seconds = time.perf_counter() - t0
    assert taken == n, f"took {taken} of {n}"
    client = server.client()
    client.put_object(Bucket=server.bucket, Key="noonien/history.jsonl", Body=shard)
    t1 = time.perf_counter()
    body = client.get_object(Bucket=server.bucket, Key="noonien/history.jsonl")["Body"].read()
    anchor = time.perf_counter() - t1
    assert body == shard
    return {
        "ops": n,
        "seconds": round(seconds, 2),
        "ops_per_s": round(n / seconds, 1),
        "requests": reader.stats.requests,
        "bytes_down": reader.stats.bytes_down,
        "anchor_one_get_seconds": round(anchor, 3),
        "anchor_note": "server-noonien's reader: one GET of the plaintext shard, nothing verified",
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="noon-bench-relay-"))
    pki = Pki(base / "pki")
    mesh = certs.create_relay_key(base / "relay.key")
    os.environ.update(CREDENTIALS)
    start = moto_server if args.server == "moto" else seaweed_server
    with start(base) as server:
        os.environ["AWS_ENDPOINT_URL"] = server.endpoint
        out: dict[str, Any] = {"server": args.server, "cpus": os.cpu_count()}
        out["relay_writes"] = await writes_in_a_row(
            base / "w", pki, server.url("bench"), mesh, args.ops
        )
        out["local_writes"] = await asyncio.to_thread(local_writes, base / "l", pki, args.ops)
        out["relay_through"] = await through(base / "t", pki, server.url("through"), mesh, args.ops)
        out["anchor_writes"] = await asyncio.to_thread(anchor_writes, server, args.anchor_ops)
        out["catch_up"] = await catch_up(
            base / "c", pki, server.url("catchup"), mesh, args.catch_up, server
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=["moto", "seaweedfs"], default="seaweedfs")
    parser.add_argument("--ops", type=int, default=2000, help="ops per writer")
    parser.add_argument("--anchor-ops", type=int, default=300, help="ops per anchor writer")
    parser.add_argument("--catch-up", type=int, default=20000, help="ops a waking machine takes")
    print(json.dumps(asyncio.run(main_async(parser.parse_args())), indent=1))


if __name__ == "__main__":
    main()
