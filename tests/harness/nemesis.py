"""The nemesis: a cluster of real ``noond`` daemons and writer processes on loopback, and the
faults it injects into them while they work.

Every daemon listens on 127.0.0.1 and binds its outgoing connections to its own loopback IP
(``NOOND_SOURCE_IP=127.0.0.<10+i>``); peers know it only by the address of its listener in the
test's :class:`~tests.harness.proxy.Proxy` (seeds and ``NOOND_ADVERTISE``), so every exchange
crosses the proxy and obeys partitions, loss and delay. Writers are separate processes
(:mod:`tests.harness.fault_writer`) whose acknowledgements feed the
:class:`~tests.harness.checker.History`.

Everything random comes from one seed (``NOON_SEED``); a failing run prints it, and running
again with it replays the same schedule of faults (the timing of processes still varies).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness.checker import History, Replica, Report, check, read_replica, visible
from tests.harness.mesh import ROOT, Node, Pki, free_port, wait_until
from tests.harness.proxy import Link, Proxy


def seed_from_env(default: int | None = None) -> int:
    raw = os.environ.get("NOON_SEED")
    if raw:
        return int(raw)
    return default if default is not None else random.SystemRandom().randrange(1 << 31)


@dataclass
class Writer:
    node: Node
    tag: str
    proc: subprocess.Popen[str] | None = None
    reader: threading.Thread | None = None
    offset_ms: int = 0


@dataclass
class Config:
    nodes: int = 3
    keys: int = 12
    """Size of the key space: small, so writes conflict and deletes hit."""
    steps: int = 20
    """Faults injected in one run."""
    step_seconds: tuple[float, float] = (0.2, 0.8)
    writer_pause_ms: int = 60
    compact_every: int = 15
    converge_timeout: float = 90.0
    relay_compaction: bool = True
    """Also run ``noon compact`` (every shard, replicas too), killed at random, as a fault."""
    disk_damage: bool = True
    """Also delete or truncate replica shards (a machine crash that loses part of its disk):
    the node pulls them again without showing what it had collected from them
    (:mod:`noon.store.forgotten`)."""
    daemon_env: dict[str, str] = field(default_factory=dict)


class Cluster:
    def __init__(self, base: Path, pki: Pki, seed: int, config: Config) -> None:
        self.base = base
        self.pki = pki
        self.seed = seed
        self.config = config
        self.rng = random.Random(seed)
        self.history = History()
        self.faults: Counter[str] = Counter()
        self.log: list[str] = []
        self.proxy = Proxy(seed)
        self.nodes: list[Node] = []
        self.source_ip: dict[str, str] = {}
        self.writers: dict[str, Writer] = {}
        self.gen = 0
        self.pending: list[Callable[[], None]] = []
        """Undo actions of the last fault (restarts, healing), run a few steps later."""
        self._lock = threading.Lock()
        for i in range(config.nodes):
            node = Node(f"n{i}", base, pki)
            self.nodes.append(node)
            self.source_ip[node.name] = f"127.0.0.{10 + i}"
            self.proxy.add(node.name, self.source_ip[node.name], (node.host, node.port))

    # -- processes ------------------------------------------------------------------------

    def proxied(self, node: Node) -> str:
        return f"127.0.0.1:{self.proxy.ports[node.name]}"

    def start_daemon(self, node: Node, *, wait: bool = True) -> None:
        """Start ``node``'s daemon unless it runs (two faults may both schedule a restart)."""
        if node.proc is not None and node.proc.poll() is None:
            return
        peers = [f"{m.name}@{self.proxied(m)}" for m in self.nodes if m is not node]
        env = {
            "NOOND_SOURCE_IP": self.source_ip[node.name],
            "NOOND_ADVERTISE": self.proxied(node),
            "NOOND_INTERVAL": "0.4",
            "NOOND_TIMEOUT": "1.5",
            "NOOND_SUSPECT_AFTER": "2",
            "NOOND_DEAD_AFTER": "4",
            "NOOND_DEAD_RETRY": "1",
            "NOOND_WATCH_INTERVAL": "0.05",
            **self.config.daemon_env,
        }
        for attempt in range(3):
            node.start(peers, wait=False, **env)
            if not wait:
                return
            try:
                node.wait_healthy()
                return
            except AssertionError:
                if attempt == 2 or "already in use" not in node.log.read_text()[-2000:]:
                    raise
            # Something took its port while it was down: move it (peers reach it through
            # the proxy, whose address does not change).
            node.port = free_port()
            self.proxy.targets[node.name] = (node.host, node.port)

    def start_writer(self, node: Node, offset_ms: int = 0) -> None:
        self.gen += 1
        tag = f"{node.name}w{self.gen}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NOON_", "NOOND_"))}
        env.update(PYTHONPATH=str(ROOT), NOON_CLOCK_OFFSET_MS=str(offset_ms))
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.harness.fault_writer",
                str(node.dir),
                node.name,
                tag,
                str(self.seed),
                str(self.config.keys),
                str(self.config.writer_pause_ms),
                str(self.config.compact_every),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=open(  # noqa: SIM115
                self.base / f"{tag}.log", "ab"
            ),
            stdin=subprocess.DEVNULL,
            text=True,
        )
        writer = Writer(node, tag, proc, offset_ms=offset_ms)
        writer.reader = threading.Thread(target=self._read_acks, args=(proc,), daemon=True)
        writer.reader.start()
        self.writers[node.name] = writer

    def _read_acks(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._lock:
                self.history.ack_line(line)

    def kill_writer(self, node: Node) -> None:
        writer = self.writers.pop(node.name, None)
        if writer is None or writer.proc is None:
            return
        writer.proc.send_signal(signal.SIGKILL)
        writer.proc.wait(timeout=10)
        if writer.reader is not None:
            writer.reader.join(timeout=10)  # every ack it printed is recorded
        with self._lock:
            self.history.scan_unacked(node.dir / f"{node.name}.jsonl")

    def start(self) -> None:
        for node in self.nodes:
            self.start_daemon(node, wait=False)
        for node in self.nodes:
            node.wait_healthy()
        for node in self.nodes:
            self.start_writer(node)

    def close(self) -> None:
        for node in self.nodes:
            self.kill_writer(node)
            node.stop()
        self.proxy.close()

    def note(self, fault: str, text: str) -> None:
        self.faults[fault] += 1
        self.log.append(f"{time.monotonic():.2f} {fault}: {text}")

    # -- faults -----------------------------------------------------------------------------

    def fault_kill_daemon(self) -> None:
        node = self.rng.choice(self.nodes)
        node.kill()
        self.note("kill-daemon", node.name)
        self.pending.append(lambda: self.start_daemon(node))

    def fault_kill_writer(self) -> None:
        node = self.rng.choice(self.nodes)
        self.kill_writer(node)
        self.note("kill-writer", node.name)
        self.start_writer(node, offset_ms=self._offset(node))

    def _offset(self, node: Node) -> int:
        writer = self.writers.get(node.name)
        return writer.offset_ms if writer else 0

    def fault_clock(self) -> None:
        """Restart a writer with its clock skewed, or jumped back or forward (beyond the
        60 s the HLC clamps at, sometimes)."""
        node = self.rng.choice(self.nodes)
        offset = self.rng.choice((-90_000, -5_000, 0, 2_000, 30_000, 75_000))
        self.kill_writer(node)
        self.start_writer(node, offset_ms=offset)
        self.note("clock", f"{node.name} offset {offset} ms")

    def fault_partition(self) -> None:
        names = [n.name for n in self.nodes]
        self.rng.shuffle(names)
        cut = self.rng.randrange(1, len(names))
        left, right = set(names[:cut]), set(names[cut:])
        mode = self.rng.choice(("refuse", "blackhole"))
        for a in left:
            for b in right:
                self.proxy.set(a, b, Link(mode=mode))
                self.proxy.set(b, a, Link(mode=mode))
        self.note("partition", f"{sorted(left)} | {sorted(right)} ({mode})")
        self.pending.append(self.proxy.heal)

    def fault_flaky_links(self) -> None:
        for a in self.nodes:
            for b in self.nodes:
                if a is not b and self.rng.random() < 0.5:
                    self.proxy.set(
                        a.name,
                        b.name,
                        Link(
                            loss=self.rng.choice((0.3, 0.6)),
                            delay=self.rng.choice((0.0, 0.05, 0.3)),
                        ),
                    )
        self.note("loss-delay", "random links")
        self.pending.append(self.proxy.heal)

    def fault_compact(self) -> None:
        """``noon compact`` on a node, killed at a random moment (or left to finish)."""
        node = self.rng.choice(self.nodes)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NOON_", "NOOND_"))}
        env.update(PYTHONPATH=str(ROOT), NOON_DIR=str(node.dir), NOON_NODE_ID=node.name)
        proc = subprocess.Popen(
            [sys.executable, "-m", "noon", "compact", "--history", str(self.rng.choice((0, 1, 2)))],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        kill_after = self.rng.choice((None, 0.3, 0.6, 0.9))
        try:
            proc.wait(timeout=kill_after or 60)
            self.note("compact", f"{node.name} finished rc={proc.returncode}")
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
            self.note("compact-killed", f"{node.name} after {kill_after}s")

    def fault_kill_mid_collection(self) -> None:
        """Kill a daemon right as a round ends: it collects tombstones after every round, so
        the kill lands in (or next to) a collection pass."""
        node = self.rng.choice(self.nodes)
        if node.proc is None:
            return
        try:
            rounds = node.metric("noond_rounds_total")
            wait_until(
                lambda: node.metric("noond_rounds_total") > rounds, timeout=5, what="a round to end"
            )
        except (AssertionError, OSError):
            pass  # partitioned or slow: kill it anyway
        node.kill()
        self.note("kill-daemon-collecting", node.name)
        self.pending.append(lambda: self.start_daemon(node))

    def fault_replica_damage(self) -> None:
        """The machine crashes and its disk loses another author's shard, or that shard's
        tail: daemon and writer die, the file is deleted or truncated, both start again."""
        node = self.rng.choice(self.nodes)
        replicas = [p for p in node.dir.glob("*.jsonl") if p.name != f"{node.name}.jsonl"]
        if not replicas:
            return
        shard = self.rng.choice(sorted(replicas))
        offset = self._offset(node)
        self.kill_writer(node)
        node.kill()
        if self.rng.random() < 0.5:
            shard.unlink()
            self.note("shard-deleted", f"{node.name}/{shard.name}")
        else:
            size = shard.stat().st_size
            keep = self.rng.randrange(size) if size else 0
            with open(shard, "r+b") as f:
                f.truncate(keep)
            self.note("shard-truncated", f"{node.name}/{shard.name} at {keep} of {size}")
        self.start_writer(node, offset_ms=offset)
        self.pending.append(lambda: self.start_daemon(node))

    FAULTS: tuple[tuple[str, float], ...] = (
        ("fault_kill_daemon", 3),
        ("fault_kill_writer", 2),
        ("fault_clock", 2),
        ("fault_partition", 3),
        ("fault_flaky_links", 2),
        ("fault_compact", 2),
        ("fault_kill_mid_collection", 1),
        ("fault_replica_damage", 1),
    )

    # -- a run ------------------------------------------------------------------------------

    def run_faults(self) -> None:
        """Inject ``steps`` faults; each is undone one to three steps later."""
        undo: list[tuple[int, Callable[[], None]]] = []
        faults = [
            (n, w)
            for n, w in self.FAULTS
            if (self.config.relay_compaction or n != "fault_compact")
            and (self.config.disk_damage or n != "fault_replica_damage")
        ]
        names = [n for n, _ in faults]
        weights = [w for _, w in faults]
        for step in range(self.config.steps):
            getattr(self, self.rng.choices(names, weights)[0])()
            undo += [(step + self.rng.randrange(1, 4), fn) for fn in self.pending]
            self.pending = []
            for due, fn in [u for u in undo if u[0] <= step]:
                fn()
                undo.remove((due, fn))
            time.sleep(self.rng.uniform(*self.config.step_seconds))  # let the fault bite
        for _, fn in undo:
            fn()

    def heal(self) -> float:
        """Stop every writer, heal the network, start every daemon; return the seconds until
        every replica holds the same history and folds to the same state."""
        for node in self.nodes:
            self.kill_writer(node)
        self.proxy.heal()
        for node in self.nodes:
            if node.proc is None or node.proc.poll() is not None:
                self.start_daemon(node)
        start = time.monotonic()
        wait_until(
            self._converged,
            timeout=self.config.converge_timeout,
            what=f"convergence after healing (seed {self.seed})",
        )
        return time.monotonic() - start

    def _converged(self) -> bool:
        roots = {n.get("/shards/digest")[1]["root"] for n in self.nodes}
        if len(roots) != 1:
            return False
        states = [read_replica(n.name, n.dir).observable() for n in self.nodes]
        return all(s == states[0] for s in states[1:])

    def reported_forks(self) -> set[str]:
        forks: set[str] = set()
        for node in self.nodes:
            forks |= {f.shard for f in node.status().forks}
        return forks

    def settled(self, report: Report) -> list[str]:
        """After anomalies: keep every directory as it was (``<base>/at-verify``), stop the
        daemons, and check again, so a reader's view torn by a daemon working meanwhile and a
        state that stays wrong tell themselves apart in the output."""
        keep = self.base / "at-verify"
        for node in self.nodes:
            (keep / node.name).mkdir(parents=True, exist_ok=True)
            for shard in node.dir.glob("*.jsonl"):
                with contextlib.suppress(FileNotFoundError):  # renamed meanwhile: it is gone
                    shutil.copy2(shard, keep / node.name / shard.name)
        forks = self.reported_forks()
        for node in self.nodes:
            node.stop()
        replicas = [read_replica(n.name, n.dir) for n in self.nodes]
        again = check(self.acknowledged(), replicas, forks).anomalies
        return [
            f"{len(again)} of {len(report.anomalies)} remain with every daemon stopped "
            f"(directories as verified: {keep})"
        ] + [f"stopped: {a}" for a in again[:20]]

    def acknowledged(self) -> History:
        """The history so far, copied under the lock: writers still running keep adding to
        it from their reader threads."""
        with self._lock:
            return self.history.copy()

    def verify(self) -> tuple[Report, list[Replica]]:
        replicas = [read_replica(n.name, n.dir) for n in self.nodes]
        return check(self.acknowledged(), replicas, self.reported_forks()), replicas


@dataclass
class Outcome:
    seed: int
    faults: Counter[str]
    writes: int
    deletes: int
    checked: int
    anomalies: list[str]
    convergence: float
    visible: int
    log: list[str] = field(default_factory=list)
    """The faults injected, in order, with times (printed when something is wrong)."""
    nodes: int = 0


def run_once(base: Path, pki: Pki, seed: int, config: Config) -> Outcome:
    """One nemesis run: start, write under faults, heal, check. Never raises on anomalies:
    the caller decides (and prints the seed)."""
    cluster = Cluster(base, pki, seed, config)
    try:
        cluster.start()
        wait_until(lambda: cluster.history.writes >= 3, what="first acknowledged writes")
        cluster.run_faults()
        problems: list[str] = []
        try:
            convergence = cluster.heal()
        except AssertionError as exc:
            convergence = float("inf")
            problems.append(f"no convergence: {exc}")
        report, replicas = cluster.verify()
        if report.anomalies:
            problems += cluster.settled(report)
        history = cluster.history
        return Outcome(
            seed,
            cluster.faults,
            history.writes,
            history.deletes,
            report.checked,
            problems + report.anomalies,
            convergence,
            len(visible(replicas[0].state)),
            cluster.log,
            config.nodes,
        )
    finally:
        cluster.close()
