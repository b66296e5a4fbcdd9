"""Replication figures on a loopback mesh of real noond processes with real mTLS.

    python -m bench.noond_mesh [--nodes 3 5] [--writes 200] [--catch-up 100000]
    python -m bench.noond_mesh --push-vs-poll --nodes 5 10 --writes 100

Every node sits behind a byte-counting TCP proxy that the other nodes dial (its advertised
address), so the byte figures are what crosses the wire: TLS records, HTTP headers and bodies.

- latency: a one-op write on one node (round robin) until every other node's copy of that
  shard holds it, with rounds every 30 s so what is measured is the push path;
- wire bytes per op during those writes, per receiving node;
- on 3 nodes, server-noonien's propagation run: a client writing through MCP on one node, and
  when each peer holds every op;
- catch-up: a fresh node pulling N ops from one that holds them;
- bytes of one idle exchange (digest compare) when every node holds 10 and 100 shards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bench.core import generate
from bench.floors import sdk_import, sdk_server_import
from bench.kg_latency import noon_client
from bench.propagation import Arrivals, Proxies, Writers
from bench.stats import (
    TreeMemory,
    cpu_seconds,
    percentiles,
    rss_mib,
    sched_seconds,
    workers_cpu_seconds,
)
from noon.core.ops import Draft, encode
from noon.store.serve import Summaries
from noon.store.store import read_model_path
from tests.harness.mesh import Node, Pki, wait_until
from tests.harness.stores import plan_of


def mesh(base: Path, pki: Pki, proxies: Proxies, n: int, **env: str) -> list[Node]:
    nodes = [Node(f"n{i}", base, pki) for i in range(n)]
    fronts = [proxies.add(node.port) for node in nodes]
    for i, node in enumerate(nodes):
        node.env = {"NOOND_ADVERTISE": f"127.0.0.1:{fronts[i]}", **env}
    for i, node in enumerate(nodes):
        others = [f"{m.name}@127.0.0.1:{fronts[j]}" for j, m in enumerate(nodes) if j != i]
        node.start(others, wait=False)
    for node in nodes:
        # Ten daemons starting at once on 2 shared cores: each spends seconds importing alone.
        node.wait_healthy(timeout=180)
    wait_until(
        lambda: all(len(m.peers().peers) == n - 1 for m in nodes),
        timeout=60,
        what="full membership",
    )
    return nodes


TRAFFIC = (
    "noond_http_requests",
    "noond_pushes",
    "noond_streams_closed",
    "noond_exchanges",
    "noond_rounds",
)
"""The counters (without ``_total``) that say which path carried a run's bytes."""


def traffic(nodes: list[Node]) -> dict[str, float]:
    """The :data:`TRAFFIC` counters summed over ``nodes``, one key per metric and labels."""
    out: dict[str, float] = {}
    for m in nodes:
        status, _, body = m.request("GET", "/metrics")
        assert status == 200, f"{m.name} /metrics answered {status}"
        for family in text_string_to_metric_families(body.decode()):
            if family.name not in TRAFFIC:
                continue
            for sample in family.samples:
                if not sample.name.endswith("_total") or sample.labels.get("route") == "/metrics":
                    continue  # the bench's own readings of /metrics are not the run's traffic
                labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                key = f"{family.name}{{{labels}}}"
                out[key] = out.get(key, 0.0) + sample.value
    return out


def traffic_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What grew between two :func:`traffic` readings (counters only grow)."""
    return {k: v - before.get(k, 0.0) for k, v in sorted(after.items()) if v > before.get(k, 0.0)}


def latency(nodes: list[Node], proxies: Proxies, writes: int) -> dict[str, Any]:
    """One-op writes round robin, each through a store kept open (:class:`Writers`); time from
    the append until every other node's copy of the shard holds it (appended to the file) and
    until it is durable there (fsynced). Each node writes once first, unmeasured: that write
    opens its connections (and streams), which every later one finds open."""
    dirs = {m.name: m.dir for m in nodes}
    arrivals, writers = Arrivals(dirs), Writers(dirs)
    summaries = arrivals.summaries

    def one(w: Node, ident: str, text: str) -> tuple[float, float]:
        seq = summaries[w.name].get(w.name).seq + 1
        writers.start(w.name, ident, text)
        appended, held, durable = arrivals.wait(w.name, seq, [m for m in dirs if m != w.name])
        assert writers.done() == seq, f"the write on {w.name} was not one op"
        return max(held.values()) - appended, max(durable.values()) - appended

    try:
        for w in nodes:
            one(w, f"warm-{w.name}", "opens the connections")
        held = []
        durable = []
        counted = traffic(nodes)
        before = proxies.bytes
        for i in range(writes):
            at, safe = one(nodes[i % len(nodes)], f"lat{i}", f"latency probe {i}")
            held.append(at * 1000)
            durable.append(safe * 1000)
        moved = proxies.bytes - before
    finally:
        arrivals.close()
        writers.close()
    carried = traffic_delta(counted, traffic(nodes))  # /metrics is read past the proxies
    op_size = len((nodes[0].dir / "n0.jsonl").read_bytes().splitlines()[-1]) + 1
    return {
        **percentiles(held),
        "mean": statistics.mean(held),
        "durable": percentiles(durable),
        "wire_bytes_per_op_per_receiver": moved / (writes * (len(nodes) - 1)),
        "op_line_bytes": op_size,
        "noond_rss_mib": max(rss_mib(m.proc.pid)["rss"] for m in nodes if m.proc),
        "traffic": carried,
    }


def burst(nodes: list[Node], proxies: Proxies, writes: int) -> dict[str, float]:
    """Many one-op writes in a row on one node: pushes coalesce while one is in flight."""
    w = nodes[0]
    summaries = {m.name: Summaries(m.dir) for m in nodes}
    before = proxies.bytes
    t0 = time.perf_counter()
    store = w.store()
    for i in range(writes):
        store.write(plan_of([Draft(("content", "default", f"burst{i}"), {"text": f"burst {i}"})]))
    written = time.perf_counter() - t0
    seq = summaries[w.name].get(w.name).seq
    wait_until(
        lambda: all(summaries[m.name].get(w.name).seq >= seq for m in nodes),
        timeout=60,
        what="burst to reach every node",
    )
    return {
        "writes": writes,
        "write_s": written,
        "visible_all_s": time.perf_counter() - t0,
        "wire_bytes_per_op_per_receiver": (proxies.bytes - before) / (writes * (len(nodes) - 1)),
    }


def mcp_writes(nodes: list[Node], proxies: Proxies, calls: int) -> dict[str, Any]:
    """server-noonien's propagation run on noon: a client writes through MCP (create_entities,
    one entity with one observation per call) on one node; when is each peer complete?

    A watcher thread records when each peer's copy of the writer's shard reached each seq, so
    completion times are exact to the polling interval even while the client still writes."""
    w, peers = nodes[0], nodes[1:]
    summaries = {m.name: Summaries(m.dir) for m in nodes}
    seen: dict[str, list[tuple[float, int]]] = {m.name: [] for m in peers}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for m in peers:
                seq = summaries[m.name].get(w.name).seq
                if not seen[m.name] or seen[m.name][-1][1] != seq:
                    seen[m.name].append((time.perf_counter(), seq))
            stop.wait(0.005)

    client = noon_client(w.dir, node=w.name)
    base = Summaries(w.dir).get(w.name).seq
    before = proxies.bytes
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        t0 = time.perf_counter()
        for i in range(calls):
            client.call(
                "create_entities",
                {
                    "entities": [
                        {"name": f"mcp{i}", "entityType": "probe", "observations": [f"fact {i}"]}
                    ]
                },
            )
        written = time.perf_counter() - t0
        final = Summaries(w.dir).get(w.name).seq
        wait_until(
            lambda: all(seen[m.name] and seen[m.name][-1][1] >= final for m in peers),
            timeout=120,
            what="the MCP writes to reach every node",
        )
    finally:
        stop.set()
        watcher.join(5)
        client.close()
    complete = sorted(next(t for t, seq in seen[m.name] if seq >= final) - t0 for m in peers)
    ops = final - base
    return {
        "calls": calls,
        "ops": ops,
        "write_s": written,
        "ops_per_s": ops / written,
        "complete_s": complete,
        "wire_bytes_per_op_per_receiver": (proxies.bytes - before) / (ops * len(peers)),
        "op_line_bytes": _mean_line(w.dir / f"{w.name}.jsonl", ops),
    }


def _mean_line(path: Path, last: int) -> float:
    lines = path.read_bytes().splitlines()[-last:]
    return sum(len(line) + 1 for line in lines) / len(lines)


def read_model_state(directory: Path) -> tuple[int, dict[str, int]]:
    """The machine's read model's generation and each shard's folded offset, read only (no
    fold): -1 and nothing while there is no read model."""
    path = read_model_path(directory)
    if not path.exists():
        return -1, {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        cursors = dict(conn.execute("SELECT name, offset FROM shards").fetchall())
    finally:
        conn.close()
    return (int(row[0]) if row else 0), {str(k): int(v) for k, v in cursors.items()}


def read_model_holds(directory: Path, want: dict[str, int]) -> bool:
    """The read model has folded every shard of ``want`` (name: size) to its end."""
    try:
        _, cursors = read_model_state(directory)
    except sqlite3.Error:
        return False  # being created this very moment
    return all(cursors.get(name) == size for name, size in want.items())


def first_session(directory: Path, node: str) -> dict[str, Any]:
    """A new ``noon serve`` session's first answer (process start to a search_memory answer)
    and the CPU its threads had used by then, and whether it had to fold anything first (the
    read model's generation moved)."""
    before = read_model_state(directory)
    t0 = time.perf_counter()
    client = noon_client(directory, fsync=False, node=node, tools="uri", timeout=900)
    try:
        answer = client.call("search_memory", {"query": "memory text", "limit": 5})
        seconds = time.perf_counter() - t0
        cpu = sched_seconds(client.proc.pid)["on_cpu"]
    finally:
        client.close()
    if answer.get("isError") or not answer["structuredContent"]["results"]:
        raise RuntimeError(f"the first session found nothing: {str(answer)[:300]}")
    return {"s": seconds, "cpu_s": cpu, "folded": read_model_state(directory) != before}


def signed_store(directory: Path, pki: Pki, ops: int) -> dict[str, int]:
    """``ops`` generated ops of four authors in ``directory``, signed as their machines would
    have written them, their signers known there; each shard's size by file name."""
    generate(directory, ops)
    authors = [p.name.removesuffix(".jsonl") for p in directory.glob("*.jsonl")]
    for author in authors:
        pki.sign_shard(directory / f"{author}.jsonl", author)
    pki.know_signers(directory, *authors)
    return shard_sizes(directory)


def shard_sizes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in directory.glob("*.jsonl")}


def catch_up(
    base: Path,
    pki: Pki,
    ops: int,
    *,
    fold: bool = True,
    timing: dict[str, str] | None = None,
    held_only: bool = False,
    code: Path | None = None,
    store: Path | None = None,
) -> dict[str, Any]:
    """A fresh node joins one that holds ``ops`` ops: time until it holds every shard, until
    its read model holds them too (noond folds what it receives), and a first session's
    answer after that, beside the floor of any session's first answer. ``fold=False``: the
    daemon leaves the fold to the first session (``NOOND_FOLD=false``, as before noond folded).
    Memory: each noond's peak (VmHWM), and its worker processes' (the fold's, a large store's
    collection) sampled every 0.2 s, alone and with noond. ``timing``: settings of both
    daemons in place of the test harness's short round and timeout and its fsync off
    (``--default-timing``).
    ``held_only``: stop once the fresh node holds every shard (wall, CPU and memory so far).
    ``code``: both daemons run the noon and noond packages found in that directory (``git
    archive`` of another commit) instead of this checkout's. ``store``: a directory made by
    :func:`signed_store` to copy to the source instead of generating one."""
    proxies = Proxies()
    tag = ("" if fold else "nofold") + ("before" if code is not None else "")
    src, fresh = Node(f"src{tag}{ops}", base, pki), Node(f"fresh{tag}{ops}", base, pki)
    if store is not None:
        shutil.copytree(store, src.dir, dirs_exist_ok=True)
        want = shard_sizes(src.dir)
    else:
        want = signed_store(src.dir, pki, ops)
    # PYTHONSAFEPATH: ``python -m`` would otherwise put the checkout (its working directory)
    # ahead of ``code`` on the path.
    elsewhere = {"PYTHONPATH": str(code), "PYTHONSAFEPATH": "1"} if code is not None else {}
    front = [proxies.add(m.port) for m in (src, fresh)]
    # The source machine's read model is not what is measured (its sessions would have folded
    # what they wrote): its noond only serves.
    src.env = {
        "NOOND_ADVERTISE": f"127.0.0.1:{front[0]}",
        "NOOND_FOLD": "false",
        **(timing or {}),
        **elsewhere,
    }
    fresh.env = {
        "NOOND_ADVERTISE": f"127.0.0.1:{front[1]}",
        "NOOND_FOLD": str(fold).lower(),
        **(timing or {}),
        **elsewhere,
    }
    try:
        src.start([f"{fresh.name}@127.0.0.1:{front[1]}"])
        t0 = time.perf_counter()
        fresh.start([f"{src.name}@127.0.0.1:{front[0]}"], wait=False)
        trees = {m.name: TreeMemory(m.proc.pid) for m in (src, fresh) if m.proc is not None}
        fresh.wait_healthy(timeout=180)
        healthy = time.perf_counter() - t0

        def held() -> bool:
            for name, size in want.items():
                p = fresh.dir / name
                if not p.exists() or p.stat().st_size < size:
                    return False
            return True

        wait_until(held, timeout=600, what="the fresh node to hold every shard")
        elapsed = time.perf_counter() - t0
        holding = {
            "held_s": elapsed,
            "startup_s": healthy,
            "followed": fresh.metric("noond_exchanges_followed_total"),
            "rounds": fresh.metric("noond_rounds_total"),
            "rss_mib": {m.name: rss_mib(m.proc.pid) for m in (src, fresh) if m.proc},
            "cpu_s": {m.name: cpu_seconds(m.proc.pid) for m in (src, fresh) if m.proc},
            "workers_cpu_s": {
                m.name: workers_cpu_seconds(m.proc.pid) for m in (src, fresh) if m.proc
            },
            "load": os.getloadavg()[0],
            "sched_s": {m.name: sched_seconds(m.proc.pid) for m in (src, fresh) if m.proc},
        }
        # Said at once: a first session folding 1M ops on a loaded machine may time out.
        print(json.dumps(holding), file=sys.stderr, flush=True)
        got = sum(Summaries(fresh.dir).get(p[:-6]).seq for p in want)
        assert got == ops, f"fresh node holds {got} ops, wanted {ops}"
        if held_only:
            return holding
        if fold:
            wait_until(
                lambda: read_model_holds(fresh.dir, want),
                timeout=900,
                what="the fresh node's read model to hold every shard",
            )
        folded = time.perf_counter() - t0
        rss = {m.name: rss_mib(m.proc.pid) for m in (src, fresh) if m.proc}
        cpu = {
            m.name: {"noond": cpu_seconds(m.proc.pid), "workers": workers_cpu_seconds(m.proc.pid)}
            for m in (src, fresh)
            if m.proc
        }
        for name, tree in trees.items():  # its fold and collection workers
            rss[name].update(tree.stop())
        session = first_session(fresh.dir, fresh.name)
        idle = idle_cpu(fresh)
        return {
            "readmodel_s": folded,
            "first_session_s": session["s"],
            "first_session_cpu_s": session["cpu_s"],
            "first_session_folded": session["folded"],
            "session_floor_s": sdk_import(),
            "session_server_floor_s": sdk_server_import(),
            "ops": ops,
            "s": elapsed,
            "startup_s": healthy,
            "ops_per_s": ops / max(elapsed - healthy, 1e-3),
            "wire_bytes_per_op": proxies.bytes / ops,
            "bytes_on_disk_per_op": sum(want.values()) / ops,
            "noond_rss_mib": rss,
            "cpu_s_until_folded": cpu,
            "idle_cpu_s_per_round": idle,
        }
    finally:
        for m in (src, fresh):
            m.stop()
        proxies.close()


def seed_shards(dirs: list[Path], count: int) -> None:
    """``count`` identical author shards in every directory (as after full convergence)."""
    for k in range(count):
        data = b"".join(
            encode(
                node=f"author{k}",
                seq=s,
                hlc=(1_700_000_000_000 << 16) + s,
                el=("content", "default", f"a{k}.{s}"),
                val={"text": "x"},
                prev=None,
                by="bench",
                bat=None,
            )
            + b"\n"
            for s in range(1, 4)
        )
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
            (d / f"author{k}.jsonl").write_bytes(data)


def idle_cpu(node: Node, rounds: int = 4) -> float:
    """CPU seconds a daemon spends per anti-entropy round once nothing changes any more."""
    assert node.proc is not None

    def count() -> float:
        return node.metric("noond_rounds_total")

    # Rounds come every NOOND_INTERVAL: 30 s with --default-timing, where four of them took
    # longer than the 120 s once allowed.
    per_round = 60 + 2 * float(node.env.get("NOOND_INTERVAL", "0.5"))
    start = count()
    wait_until(lambda: count() >= start + 2, timeout=2 * per_round, what="two more rounds")
    r0, c0 = count(), cpu_seconds(node.proc.pid)
    wait_until(lambda: count() >= r0 + rounds, timeout=rounds * per_round, what="idle rounds")
    return (cpu_seconds(node.proc.pid) - c0) / (count() - r0)


def idle(base: Path, pki: Pki, shards: int, exchanges: int = 200) -> float:
    """Wire bytes of one idle exchange (equal digests) between two nodes holding ``shards``."""
    proxies = Proxies()
    probe = [Node(f"i{shards}x{i}", base, pki) for i in range(2)]
    seed_shards([m.dir for m in probe], shards)
    front = [proxies.add(m.port) for m in probe]
    for i, m in enumerate(probe):
        m.env = {"NOOND_ADVERTISE": f"127.0.0.1:{front[i]}", "NOOND_INTERVAL": "0.25"}
    probe[0].start([f"{probe[1].name}@127.0.0.1:{front[1]}"], wait=False)
    probe[1].start([f"{probe[0].name}@127.0.0.1:{front[0]}"], wait=False)
    for m in probe:
        m.wait_healthy()
    try:

        def ok() -> float:
            return sum(m.metric("noond_exchanges_total", 'result="ok"') for m in probe)

        wait_until(lambda: ok() >= 8, what="a few idle exchanges")
        b0, e0 = proxies.bytes, ok()
        wait_until(lambda: ok() - e0 >= exchanges, timeout=120, what="idle exchanges")
        b1, e1 = proxies.bytes, ok()
        return (b1 - b0) / (e1 - e0)
    finally:
        for m in probe:
            m.stop()
        proxies.close()


def run(
    base: Path,
    sizes: list[int],
    writes: int,
    mcp_calls: int,
    catch_up_ops: int,
    idle_exchanges: int = 200,
    watch: float = 0.02,
) -> dict[str, Any]:
    """Every replication figure: per mesh size latency and bursts (and on 3 nodes the
    MCP propagation run), a fresh node's catch-up, idle exchange bytes."""
    pki = Pki(base / "pki")
    out: dict[str, Any] = {"watch_interval_s": watch, "meshes": {}}
    for n in sizes:
        proxies = Proxies()
        nodes = mesh(
            base / f"mesh{n}",
            pki,
            proxies,
            n,
            NOOND_INTERVAL="30",
            NOOND_WATCH_INTERVAL=str(watch),
            NOON_FSYNC="true",
        )
        try:
            entry = {
                "latency": latency(nodes, proxies, writes),
                "burst": burst(nodes, proxies, writes * 5),
            }
            if n == 3 and mcp_calls:
                entry["mcp_writes"] = mcp_writes(nodes, proxies, mcp_calls)
            out["meshes"][str(n)] = entry
        finally:
            for m in nodes:
                m.stop()
            proxies.close()
    out["catch_up"] = catch_up(base, pki, catch_up_ops)
    out["idle_bytes"] = {str(c): idle(base, pki, c, idle_exchanges) for c in (10, 100)}
    return out


MODES = {
    "poll": {"NOOND_INOTIFY": "false", "NOOND_STREAM": "false"},
    "inotify": {"NOOND_STREAM": "false"},
    "stream": {},
}
"""The ways a write can travel, as the settings that choose them (the rest are defaults)."""


def push_vs_poll(
    base: Path, sizes: list[int], writes: int, modes: tuple[str, ...] = tuple(MODES)
) -> dict[str, Any]:
    """Write → held on all with default settings (``NOOND_WATCH_INTERVAL`` 0.2 s,
    ``NOOND_TIMEOUT`` 10 s, not the test harness's), one mesh each, side by side in one run:
    the daemons told of a local write by polling alone (``NOOND_INOTIFY=false``, as before
    inotify) or by inotify, each pushing by POST (``NOOND_STREAM=false``, as before streams),
    and the default: inotify, and a push on the member's open stream (PROTOCOL.md §5.1).
    Anti-entropy rounds are an hour apart here: a round of ten nodes opens new TLS
    connections, and at 10 nodes under load one fell inside the measured writes and added half
    again to the stream's bytes per op (``traffic`` shows what ran in the window).
    """
    pki = Pki(base / "pki")
    out: dict[str, Any] = {}
    for n in sizes:
        for mode in modes:
            proxies = Proxies()
            nodes = mesh(
                base / f"{mode}{n}",
                pki,
                proxies,
                n,
                NOOND_INTERVAL="3600",
                NOOND_WATCH_INTERVAL="0.2",
                NOOND_TIMEOUT="10",
                NOON_FSYNC="true",
                **MODES[mode],
            )
            try:
                out.setdefault(str(n), {})[mode] = latency(nodes, proxies, writes)
            finally:
                for m in nodes:
                    m.stop()
                proxies.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, nargs="+", default=[3, 5])
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--mcp-calls", type=int, default=500)
    ap.add_argument(
        "--catch-up", "--ops", type=int, default=100_000, help="ops a fresh node catches up"
    )
    ap.add_argument("--keep", action="store_true", help="keep the nodes' files and logs")
    ap.add_argument("--watch", type=float, default=0.02, help="NOOND_WATCH_INTERVAL")
    ap.add_argument(
        "--push-vs-poll",
        action="store_true",
        help="only write → held on all, polling alone beside inotify, default watch interval",
    )
    ap.add_argument(
        "--modes",
        nargs="+",
        choices=list(MODES),
        default=list(MODES),
        help="with --push-vs-poll: which ways a write travels (default: all three)",
    )
    ap.add_argument(
        "--only-catch-up",
        action="store_true",
        help="only the catch-up figures, with noond folding and with NOOND_FOLD=false",
    )
    ap.add_argument(
        "--cases",
        nargs="+",
        choices=["noond_folds", "session_folds"],
        default=["noond_folds", "session_folds"],
        help="with --only-catch-up: which of its two cases run",
    )
    ap.add_argument(
        "--default-timing",
        action="store_true",
        help="with --only-catch-up: noond's defaults for rounds, timeouts and fsync "
        "(NOOND_INTERVAL 30 s, NOOND_TIMEOUT 10 s, NOON_FSYNC true), not the test harness's "
        "short rounds and fsync off",
    )
    ap.add_argument(
        "--held-only",
        action="store_true",
        help="with --only-catch-up: stop once the fresh node holds every shard "
        "(no read-model wait, first session or idle figures)",
    )
    ap.add_argument(
        "--before",
        type=Path,
        default=None,
        metavar="DIR",
        help="with --only-catch-up: each case also with the daemons of the noon and noond in "
        "DIR (git archive of another commit), before this checkout's, on a copy of one store",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="noond-bench-") as tmp:
        base = Path(tmp)
        if args.only_catch_up:
            pki = Pki(base / "pki")
            timing = (
                {"NOOND_INTERVAL": "30", "NOOND_TIMEOUT": "10", "NOON_FSYNC": "true"}
                if args.default_timing
                else {}
            )
            store = None
            codes: list[tuple[str, Path | None]] = [("", None)]
            if args.before is not None:
                codes.insert(0, ("_before", args.before))
                store = base / "store"
                store.mkdir()
                signed_store(store, pki, args.catch_up)
            cases = {
                f"{case}{label}": catch_up(
                    base,
                    pki,
                    args.catch_up,
                    fold=case == "noond_folds",
                    timing=timing,
                    held_only=args.held_only,
                    code=code,
                    store=store,
                )
                for case in args.cases
                for label, code in codes
            }
            print(json.dumps(cases, indent=1))
            return
        if args.push_vs_poll:
            print(
                json.dumps(push_vs_poll(base, args.nodes, args.writes, tuple(args.modes)), indent=1)
            )
            return
        if args.keep:
            base = Path(tempfile.mkdtemp(prefix="noond-bench-"))
            print(f"keeping files in {base}")
        res = run(base, args.nodes, args.writes, args.mcp_calls, args.catch_up, watch=args.watch)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
