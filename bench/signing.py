"""Signed shards (PROTOCOL.md §13), side by side with signing off, in one run:

- catch-up: a replica takes a shard page by page (1 MiB pages) through what noond does with a
  pulled page (``receive.parse_ops`` then ``receive.append``), with the author's signature
  verified on every page, and without;
- import: ``Store.write`` in batches of 100 memories (what ``noon import`` does), with a key and
  without;
- bytes added per op: a lone write (one op, its own batch: it carries a signature) and a write
  of 20 ops in one batch (one signature for all), as stored and sent;
- signing cost per write: the whole ``Store.write`` of a lone memory with a key and without, and
  the signing step alone (chain head, signature, head record);
- time to converge after a partition: three real daemons (mTLS, signing on); one is frozen
  (SIGSTOP: its peers' connections time out, as behind a black hole) for ``--partition``
  seconds while all three keep writing (the frozen one's writer does not need its daemon),
  then thawed; the time until all three fold the same state.

Run: ``.venv/bin/python -m bench.signing [--ops 50000] [--partition 60]``.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path

from noon import certs
from noon.config import Settings
from noon.core import chain
from noon.core.ops import Draft, decode, encode
from noon.store import chainstate, receive, serve
from noon.store.store import Store
from tests.harness.mesh import Node, Pki, converged, start_all, wait_until
from tests.harness.stores import plan_of

TEXT = (
    "The deploy script reads NOON_DIR from the environment; on the laptop it is ~/.noon and on "
    "the desktop /srv/noon. Remember to run noon doctor after moving it."
)
"""A memory of a typical length (about 150 characters)."""


def _keys(root: Path) -> tuple[Path, certs.Signer]:
    certs.init_ca(root / "ca")
    paths = certs.issue_signing_cert(root / "ca", "author", root / "keys")
    return paths.key, certs.read_signer(paths.cert, root / "ca" / "ca.crt")


def _shard(n: int, sign: chain.Sign | None) -> bytes:
    """``n`` lone writes of the author, signed or not."""
    lines = []
    link = chain.genesis("author")
    for seq in range(1, n + 1):
        line = [
            encode(
                node="author",
                seq=seq,
                hlc=(1_700_000_000_000 << 16) + seq,
                el=("content", "default", f"m{seq}"),
                val={"text": TEXT},
                by="claude-code",
            )
        ]
        if sign is not None:
            link = chain.sign_batch(link, line, seq, sign)
        lines.append(line[0])
    return b"".join(line + b"\n" for line in lines)


def catch_up(root: Path, n: int, key: Path, signer: certs.Signer) -> dict[str, float]:
    from cryptography.hazmat.primitives import serialization

    private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    out: dict[str, float] = {}
    runs = [("off", None, None), ("on", private.sign, signer.verify)]  # type: ignore[union-attr]
    for run, (label, sign, check) in enumerate(runs * 3):  # alternated, best of three
        source = root / f"src-{label}"
        if not source.exists():
            source.mkdir()
            (source / "author.jsonl").write_bytes(_shard(n, sign))  # type: ignore[arg-type]
        target = root / f"dst-{label}-{run}"
        target.mkdir()
        t0 = time.perf_counter()
        after = 0
        while True:
            page = serve.read_after(source / "author.jsonl", after, max_bytes=1 << 20)
            if not page.ops:
                break
            ops = receive.parse_ops(page.body, "author", max_ops=1_000_000)
            receive.append(target, "author", ops, fsync=False, check=check)
            after = page.last
        out[label] = max(out.get(label, 0.0), n / (time.perf_counter() - t0))
    return out


def _store(d: Path, key: Path | None) -> Store:
    return Store(
        Settings(dir=d, node_id="author", fsync=False, compact_after=0, signing_key=key),
        shared=False,
    )


def import_rate(root: Path, n: int, key: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for run, (label, k) in enumerate([("off", None), ("on", key)] * 3):  # alternated, best of 3
        s = _store(root / f"import-{label}-{run}", k)
        t0 = time.perf_counter()
        for start in range(0, n, 100):
            s.write(
                plan_of(
                    [
                        Draft(("content", "default", f"i{i}"), {"text": TEXT})
                        for i in range(start, start + 100)
                    ]
                ),
                client="import",
            )
        out[label] = max(out.get(label, 0.0), n / (time.perf_counter() - t0))
        s.close()
    return out


def per_write(root: Path, key: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, k in (("off", None), ("on", key)):
        s = _store(root / f"lone-{label}", k)
        times = []
        for i in range(300):
            t0 = time.perf_counter()
            s.write(plan_of([Draft(("content", "default", f"l{i}"), {"text": TEXT})]))
            times.append(time.perf_counter() - t0)
        out[f"write_{label}_ms"] = statistics.median(times) * 1000
        lone = (s.dir / "author.jsonl").read_bytes().splitlines()[-1]
        s.write(
            lambda _g: [Draft(("content", "default", f"r{i}"), {"text": TEXT}) for i in range(20)]
        )
        row = (s.dir / "author.jsonl").read_bytes().splitlines()[-20:]
        out[f"lone_bytes_{label}"] = len(lone) + 1
        out[f"row_bytes_{label}"] = sum(len(x) + 1 for x in row) / 20
        if k is not None and s.signer is not None:
            last = decode((s.dir / "author.jsonl").read_bytes().splitlines()[-1])
            line = encode(
                node="author",
                seq=last.seq + 1,
                hlc=1,
                el=("content", "default", "x"),
                val={"text": TEXT},
            )
            sign_times = []
            for _ in range(300):
                t0 = time.perf_counter()
                at = chainstate.head(s.dir, "author", (last.seq, last.digest))
                assert at.chain is not None
                lines = [line]
                after = chain.sign_batch(at.chain, lines, last.seq + 1, s.signer)
                chainstate.remember(s.dir, "author", chain.Head(last.seq + 1, after), 1)
                sign_times.append(time.perf_counter() - t0)
                chainstate.remember(s.dir, "author", at, last.digest)  # as the shard still ends
            out["sign_ms"] = statistics.median(sign_times) * 1000
        s.close()
    return out


def partition(root: Path, seconds: float) -> dict[str, float]:
    pki = Pki(root / "pki")
    nodes = [Node(n, root / "mesh", pki) for n in ("a", "b", "c")]
    a, _b, c = nodes
    try:
        start_all(*((n, [m for m in nodes if m is not n]) for n in nodes))
        a.write(("start", "before"))
        wait_until(lambda: converged(nodes, expect=1), what="the mesh", timeout=60)
        assert c.proc is not None
        os.kill(c.proc.pid, signal.SIGSTOP)
        t_end = time.monotonic() + seconds
        i = 0
        while time.monotonic() < t_end:
            for n in nodes:
                n.write((f"{n.name}{i}", "written during the partition"))
            i += 1
            time.sleep(1.0)
        os.kill(c.proc.pid, signal.SIGCONT)
        t0 = time.monotonic()
        wait_until(lambda: converged(nodes, expect=1 + 3 * i), what="healing", timeout=300)
        return {"converge_s": time.monotonic() - t0, "partition_s": seconds, "writes": 3 * i}
    finally:
        for n in nodes:
            if n.proc is not None:
                os.kill(n.proc.pid, signal.SIGCONT)
            n.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=50_000)
    parser.add_argument("--import-ops", type=int, default=10_000)
    parser.add_argument("--partition", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        key, signer = _keys(root)
        cu = catch_up(root, args.ops, key, signer)
        imp = import_rate(root, args.import_ops, key)
        pw = per_write(root, key)
        print(
            f"catch-up ({args.ops} lone writes, 1 MiB pages): signing off {cu['off']:,.0f} ops/s,"
            f" on {cu['on']:,.0f} ops/s ({100 * (cu['on'] / cu['off'] - 1):+.1f}%)"
        )
        print(
            f"import ({args.import_ops} ops, batches of 100): off {imp['off']:,.0f} ops/s, on "
            f"{imp['on']:,.0f} ops/s ({100 * (imp['on'] / imp['off'] - 1):+.1f}%)"
        )
        lone_add = pw["lone_bytes_on"] - pw["lone_bytes_off"]
        row_add = pw["row_bytes_on"] - pw["row_bytes_off"]
        print(
            f"bytes per op: lone write {pw['lone_bytes_off']:.0f} -> {pw['lone_bytes_on']:.0f} "
            f"(+{lone_add:.0f}, {100 * lone_add / pw['lone_bytes_off']:.1f}%); 20 ops in one "
            f"batch {pw['row_bytes_off']:.0f} -> {pw['row_bytes_on']:.0f} (+{row_add:.1f}, "
            f"{100 * row_add / pw['row_bytes_off']:.1f}%)"
        )
        print(
            f"lone write (median of 300): off {pw['write_off_ms']:.2f} ms, on "
            f"{pw['write_on_ms']:.2f} ms; the signing step alone {pw['sign_ms']:.3f} ms"
        )
        if args.partition > 0:
            p = partition(root, args.partition)
            print(
                f"converged {p['converge_s']:.1f} s after a {p['partition_s']:.0f} s partition "
                f"({p['writes']:.0f} writes made meanwhile on the three nodes)"
            )


if __name__ == "__main__":
    main()
