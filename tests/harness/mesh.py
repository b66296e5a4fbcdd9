"""Real ``noond`` processes on loopback with real certificates, for the benchmarks and the
tests of the daemon.

Nothing here sleeps to synchronise: :func:`wait_until` polls a condition with a deadline.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from noon import certs
from noon.config import Settings
from noon.core import chain
from noon.core.ops import Draft
from noon.daemon_link import bodies
from noon.store.store import Store

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 30.0
START_DEADLINE = 120.0
"""How long a started daemon may take to answer ``/health``: ten of them starting at once at
load 19 took 32 s to listen, and a wait that fails says how far the start got."""


def subprocess_env(**extra: str) -> dict[str, str]:
    """This environment, with the checkout importable, plus ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def noon_command(command: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one ``noon`` subcommand (``certs``, ``peers``) in a fresh process through
    :func:`noon.cli.main` (which imports that command's module only, and says its errors on
    stderr as every command does)."""
    runner = "import sys\nfrom noon.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run(
        [sys.executable, "-c", runner, command, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


_T = TypeVar("_T")


def wait_until(cond: Callable[[], _T | None], timeout: float = DEADLINE, what: str = "") -> _T:
    """Poll ``cond`` until it returns something truthy (and return it); fail after ``timeout``
    seconds. Typed by what ``cond`` returns, so a caller misreading it fails mypy, not a run."""
    end = time.monotonic() + timeout
    delay = 0.02
    last_exc: Exception | None = None
    while True:
        try:
            value = cond()
            if value:
                return value
        except Exception as exc:  # conditions may race with startup
            last_exc = exc
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what or cond} (last error: {last_exc})")
        time.sleep(delay)  # polling interval of a bounded wait, not synchronisation
        delay = min(delay * 1.5, 0.2)


def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now, below the kernel's ephemeral range: a daemon binds it a moment later,
    and meanwhile no outgoing connection (every one takes an ephemeral port) can take it, as
    one did in a 10-node mesh whose daemons were all dialling each other while starting."""
    rnd = random.Random()
    top = max(_ephemeral_floor(), 20_001)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(200):
        port = rnd.randrange(20_000, top)
        with socket.socket(family) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port below {top} on {host}")


class Pki:
    """A private CA plus node certificates issued on demand (and a foreign CA)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        certs.init_ca(root / "ca")
        self._issued: set[str] = set()

    def node(self, node: str) -> tuple[Path, Path, Path]:
        out = self.root / "nodes"
        if node not in self._issued:
            certs.issue_node_cert(self.root / "ca", node, out)
            self._issued.add(node)
        return out / f"{node}.crt", out / f"{node}.key", out / "ca.crt"

    def signing(self, node: str) -> tuple[Path, Path]:
        """``node``'s signing key and certificate (issued with its node certificate)."""
        self.node(node)
        paths = certs.signing_paths(self.root / "nodes", node)
        return paths.key, paths.cert

    def sign_shard(self, path: Path, node: str) -> None:
        """Rewrite ``node``'s unsigned shard at ``path`` as its author signs it (PROTOCOL.md
        §13), for shards a benchmark generates without a store."""
        lines = path.read_bytes().splitlines()
        signed = sign_lines(key_of(self.signing(node)[0]), node, lines)
        path.write_bytes(b"".join(line + b"\n" for line in signed))

    def install_signing(self, node: str, directory: Path) -> None:
        """Put ``node``'s signing key where every process of that ``NOON_DIR`` finds it."""
        target = directory / "certs"
        target.mkdir(parents=True, exist_ok=True)
        for path in self.signing(node):
            if not (target / path.name).exists():
                shutil.copy2(path, target / path.name)

    def know_signers(self, directory: Path, *nodes: str) -> None:
        """Make the node of ``directory`` know the signing certificates of ``nodes`` (as if
        it had pulled their shards before), for tests that act as those nodes by hand."""
        path = directory / ".noon" / "signers.pem"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as out:
            for node in nodes:
                out.write(self.signing(node)[1].read_bytes())

    def foreign(self, node: str) -> tuple[Path, Path, Path]:
        """A certificate for ``node`` signed by another CA."""
        other = self.root / "foreign"
        if not (other / "ca" / "ca.crt").exists():
            certs.init_ca(other / "ca", name="evil CA")
        certs.issue_node_cert(other / "ca", node, other / "out", force=True)
        return (
            other / "out" / f"{node}.crt",
            other / "out" / f"{node}.key",
            other / "out" / "ca.crt",
        )

    def expired(self, node: str) -> tuple[Path, Path, Path]:
        out = self.root / "expired"
        now = dt.datetime.now(dt.UTC)
        certs.issue_node_cert(
            self.root / "ca",
            node,
            out,
            not_before=now - dt.timedelta(days=10),
            not_after=now - dt.timedelta(days=1),
            force=True,
        )
        return out / f"{node}.crt", out / f"{node}.key", out / "ca.crt"


@dataclass
class Node:
    name: str
    base: Path
    pki: Pki
    host: str = "127.0.0.1"
    port: int = 0
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    signs: bool = True
    """False: the machine has no signing key, as before signed shards (revision 1)."""
    module: str = "noond"
    """What ``python -m`` runs: noond, or a test harness wrapping it."""

    def __post_init__(self) -> None:
        self.port = self.port or free_port(self.host)
        self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def dir(self) -> Path:
        return self.base / self.name / "data"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def seed(self) -> str:
        return f"{self.name}@{self.address}"

    @property
    def log(self) -> Path:
        return self.base / self.name / "noond.log"

    def start(self, peers: Iterable[Node | str] = (), *, wait: bool = True, **extra: str) -> Node:
        cert, key, ca = self.pki.node(self.name)
        if self.signs:
            self.pki.install_signing(self.name, self.dir)
        # Without PYTHONDONTWRITEBYTECODE (set on some machines): the first daemon writes the
        # checkout's bytecode and every later start reads it instead of compiling (about a
        # quarter of noond's import CPU).
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("NOON_", "NOOND_")) and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(
            {
                "PYTHONPATH": str(ROOT),
                "NOON_DIR": str(self.dir),
                "NOON_NODE_ID": self.name,
                "NOON_FSYNC": "false",
                "NOOND_LISTEN": self.address,
                "NOOND_PEERS": ",".join(p if isinstance(p, str) else p.seed for p in peers),
                "NOOND_INTERVAL": "0.5",
                "NOOND_WATCH_INTERVAL": "0.05",
                "NOOND_TIMEOUT": "3",
                "NOOND_DEAD_RETRY": "1",
                "NOOND_DISCOVER_INTERVAL": "0",
                "NOOND_TLS_CERT": str(cert),
                "NOOND_TLS_KEY": str(key),
                "NOOND_TLS_CA": str(ca),
            }
        )
        env.update(self.env)
        env.update(extra)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module, "--log-level", "DEBUG"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )
        if wait:
            self.wait_healthy()
        return self

    def wait_healthy(self, timeout: float = START_DEADLINE) -> None:
        """Until the daemon answers ``/health``; a daemon that exits fails at once, one that
        does not answer in ``timeout`` fails with the end of its log (where its start is)."""
        proc = self.proc
        assert proc is not None
        try:
            wait_until(
                lambda: proc.poll() is not None or self._healthy(),
                timeout=timeout,
                what=f"{self.name} to answer /health",
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}; its log ends:\n{self.log.read_text()[-1500:]}") from None
        if proc.poll() is not None:
            raise AssertionError(f"{self.name} exited:\n{self.log.read_text()[-3000:]}")

    def _healthy(self) -> bool:
        try:
            return self.get("/health")[0] == 200
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL: no chance to finish anything (crash safety)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def children(self) -> list[int]:
        """The pids of the daemon's child processes (its fold worker, a collection worker)."""
        assert self.proc is not None
        pid = self.proc.pid
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    # -- talking to it ------------------------------------------------------------------

    def context(
        self, as_node: str | None = None, files: tuple[Path, Path, Path] | None = None
    ) -> ssl.SSLContext:
        if files is None:
            return certs.client_ssl_context(*self.pki.node(as_node or self.name))
        # Raw context, without the file checks: lets tests present mismatched files.
        cert, key, ca = files
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.load_cert_chain(cert, key)
        ctx.load_verify_locations(ca)
        return ctx

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        as_node: str | None = None,
        files: tuple[Path, Path, Path] | None = None,
        headers: dict[str, str] | None = None,
        chunked: bool = False,
    ) -> tuple[int, dict[str, str], bytes]:
        conn: http.client.HTTPConnection
        if self.env.get("NOOND_TLS") == "off":
            conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        else:
            conn = http.client.HTTPSConnection(
                self.host, self.port, context=self.context(as_node, files), timeout=10
            )
        try:
            if chunked and body is not None:
                parts = iter([body[i : i + 8192] for i in range(0, len(body), 8192)])
                conn.request(method, path, body=parts, headers=headers or {}, encode_chunked=True)
            else:
                conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        status, _, body = self.request("GET", path, **kw)
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body

    def status(self, **kw: Any) -> bodies.Status:
        """``/status``, read through the message noond builds it from."""
        return self._body("/status", bodies.Status, **kw)

    def peers(self, **kw: Any) -> bodies.Peers:
        """``/peers``, read through the message noond builds it from."""
        return self._body("/peers", bodies.Peers, **kw)

    def info(self, **kw: Any) -> bodies.Info:
        """``/info``, read through the message noond builds it from."""
        return self._body("/info", bodies.Info, **kw)

    def _body(self, path: str, kind: type[bodies.M], **kw: Any) -> bodies.M:
        status, _, raw = self.request("GET", path, **kw)
        assert status == 200, f"{self.name} answered {path} with {status}: {raw[:200]!r}"
        return bodies.decode(raw, kind, path)

    def metric(self, name: str, labels: str = "") -> float:
        status, _, body = self.request("GET", "/metrics")
        assert status == 200
        want = f"{name}{{{labels}}}" if labels else name
        for line in body.decode().splitlines():
            if line.startswith(want + " "):
                return float(line.split()[-1])
        return 0.0

    # -- the store --------------------------------------------------------------------

    def store(self) -> Store:
        if self.signs:
            self.pki.install_signing(self.name, self.dir)
        return Store(Settings(dir=self.dir, node_id=self.name, fsync=False))

    def write(self, *items: tuple[str, str]) -> None:
        """One batch: content elements (id, text)."""
        store = self.store()
        store.write(
            lambda fold: [
                Draft(("content", "default", ident), {"text": text}) for ident, text in items
            ]
        )

    def state(self) -> dict[tuple[str, ...], tuple[tuple[str, int], Any]]:
        store = self.store()
        return {key: (el.winner.id, el.winner.val) for key, el in store.fold.elements.items()}


def start_all(*starts: tuple[Node, Iterable[Node | str]], **extra: str) -> None:
    """Start several nodes at once (each with its seeds), then wait until all answer."""
    for node, peers in starts:
        node.start(peers, wait=False, **extra)
    for node, _ in starts:
        node.wait_healthy()


def converged(nodes: list[Node], expect: int | None = None) -> bool:
    states = [n.state() for n in nodes]
    if expect is not None and len(states[0]) != expect:
        return False
    return all(s == states[0] for s in states[1:])


def reported(by: Node, member: str, author: str, seq: int) -> bool:
    """Whether ``by``'s ``/peers`` says ``member`` reported holding ``author``'s shard up to
    ``seq``."""
    peers = {p.node: p for p in by.peers().peers}
    return member in peers and peers[member].heads.get(author, 0) >= seq


def key_of(path: Path) -> chain.Sign:
    """The signing function of the Ed25519 key in ``path``."""
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    assert isinstance(key, ed25519.Ed25519PrivateKey)
    return key.sign


def sign_lines(sign: chain.Sign, node: str, lines: list[bytes]) -> list[bytes]:
    """``lines``: the author's unsigned lines from seq 1, in order, signed as their author
    would: the chain from its first line, a signature on every batch's last line (a line
    without ``bat``, or with ``bat == seq``)."""
    out: list[bytes] = []
    link = chain.genesis(node)
    batch: list[bytes] = []
    for line in lines:
        obj = orjson.loads(line)
        batch.append(line)
        if obj.get("bat") in (None, obj["seq"]):
            link = chain.sign_batch(link, batch, obj["seq"], sign)
            out += batch
            batch = []
    assert not batch, "the last batch is not complete"
    return out
