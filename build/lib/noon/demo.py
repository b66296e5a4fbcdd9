"""``noon demo``: three machines on this computer, replicating live.

Each "machine" is a directory with its own node id, certificates from a throwaway CA, its own
``noond`` on a loopback port (mutual TLS) and its own ``noon serve`` MCP server driven by a real
MCP client, exactly as an agent would use them. The demo writes on one machine and shows when
each machine sees the write, takes one machine offline while two edit the same memory, shows the
conflict and its resolution, and deletes. Everything lives in a temporary directory that is
removed at the end, with every process it started.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from mcp import Client, StdioServerParameters

from noon.certs import client_ssl_context, init_ca, issue_node_cert

NAMES = ("laptop", "desktop", "server")
DEADLINE = 30.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--linger",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep the three machines running this long at the end, printing "
        "their state (default: stop right away)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the temporary directory (logs, shards) for inspection",
    )


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_demo(args.linger, args.keep))


@dataclass
class Machine:
    name: str
    base: Path
    port: int
    daemon: subprocess.Popen[bytes] | None = None
    client: Client | None = None
    ops: list[str] = field(default_factory=list)

    @property
    def dir(self) -> Path:
        return self.base / self.name

    @property
    def certs(self) -> tuple[Path, Path, Path]:
        c = self.dir / "certs"
        return c / f"{self.name}.crt", c / f"{self.name}.key", c / "ca.crt"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NOON_", "NOOND_"))}
        env.update(NOON_DIR=str(self.dir), NOON_NODE_ID=self.name)
        return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def say(text: str = "") -> None:
    print(text, flush=True)


async def _demo(linger: float, keep: bool) -> int:
    base = Path(tempfile.mkdtemp(prefix="noon-demo-"))
    machines = [Machine(n, base, _free_port()) for n in NAMES]
    try:
        async with _running(machines, base):
            await _scenes(machines)
            if linger > 0:
                await _linger(machines, linger)
        return 0
    finally:
        for m in machines:
            _stop(m)
        if keep:
            say(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


@contextlib.asynccontextmanager
async def _running(machines: list[Machine], base: Path) -> AsyncIterator[None]:
    ca = base / "ca"
    init_ca(ca, name="noon demo CA")
    say("noon demo: three machines on this computer, each with its own shard directory,")
    say("its own noond (mutual TLS on loopback) and its own MCP server, used by a real client.")
    say()
    for m in machines:
        issue_node_cert(ca, m.name, m.dir / "certs")
        peers = ",".join(f"{o.name}@127.0.0.1:{o.port}" for o in machines if o is not m)
        cert, key, ca_crt = m.certs
        env = m.env() | {
            "NOOND_LISTEN": f"127.0.0.1:{m.port}",
            "NOOND_PEERS": peers,
            "NOOND_INTERVAL": "1",
            "NOOND_WATCH_INTERVAL": "0.02",
            "NOOND_TIMEOUT": "2",
            "NOOND_SUSPECT_AFTER": "1",
            "NOOND_DEAD_AFTER": "2",
            "NOOND_DEAD_RETRY": "1",
            "NOOND_DISCOVER_INTERVAL": "0",
            "NOOND_TLS_CERT": str(cert),
            "NOOND_TLS_KEY": str(key),
            "NOOND_TLS_CA": str(ca_crt),
        }
        with open(m.dir / "noond.log", "ab") as log:
            m.daemon = subprocess.Popen(
                [sys.executable, "-m", "noond"],
                env=env,
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )
        say(f"  {m.name:<8} noond on 127.0.0.1:{m.port}   shards in {m.dir}")
    await asyncio.gather(*(_healthy(m) for m in machines))
    async with contextlib.AsyncExitStack() as stack:
        for m in machines:
            params = StdioServerParameters(
                command=sys.executable, args=["-m", "noon", "serve"], env=m.env(), cwd=str(m.dir)
            )
            m.client = await stack.enter_async_context(Client(params, mode="legacy"))
        say()
        yield


async def _healthy(m: Machine) -> None:
    ssl = client_ssl_context(*m.certs)
    deadline = time.monotonic() + DEADLINE
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            if m.daemon is not None and m.daemon.poll() is not None:
                raise RuntimeError(f"noond of {m.name} exited; see {m.dir / 'noond.log'}")
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with http.get(f"https://127.0.0.1:{m.port}/health", ssl=ssl) as r:
                    if r.status == 200:
                        return
            await asyncio.sleep(0.05)
    raise RuntimeError(f"noond of {m.name} did not start; see {m.dir / 'noond.log'}")


def _stop(m: Machine) -> None:
    if m.daemon is None or m.daemon.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        m.daemon.send_signal(signal.SIGCONT)
        m.daemon.terminate()
    try:
        m.daemon.wait(timeout=10)
    except subprocess.TimeoutExpired:
        m.daemon.kill()
        m.daemon.wait()


async def _call(m: Machine, tool: str, args: dict[str, object]) -> str:
    assert m.client is not None
    r = await m.client.call_tool(tool, args)
    text = "".join(getattr(c, "text", "") for c in r.content)
    if r.is_error:
        raise RuntimeError(f"{tool} on {m.name} failed: {text}")
    return text


async def _read(m: Machine, uri: str) -> str | None:
    assert m.client is not None
    r = await m.client.call_tool("read_memory", {"uri": uri})
    return None if r.is_error else "".join(getattr(c, "text", "") for c in r.content)


async def _until_everyone(
    machines: list[Machine], what: str, seen: Callable[[Machine], Awaitable[bool]]
) -> None:
    """Poll every machine until it sees the change; print when each did."""
    start = time.monotonic()
    pending = list(machines)
    while pending:
        for m in list(pending):
            if await seen(m):
                pending.remove(m)
                say(f"      {m.name:<8} {what} after {(time.monotonic() - start) * 1000:6.0f} ms")
        if time.monotonic() - start > DEADLINE:
            raise RuntimeError(f"{', '.join(m.name for m in pending)} never saw it")
        await asyncio.sleep(0.01)


async def _scenes(machines: list[Machine]) -> None:
    laptop, desktop, server = machines
    uri = "core://agent"

    say(f"[1] on laptop, an agent creates {uri}")
    await _call(
        laptop,
        "create_memory",
        {
            "parent_uri": "core://",
            "title": "agent",
            "priority": 1,
            "disclosure": "at the start of every session",
            "content": "I am the agent of this person. They prefer short answers.",
        },
    )

    def has(text: str) -> Callable[[Machine], Awaitable[bool]]:
        async def check(m: Machine) -> bool:
            body = await _read(m, uri)
            return body is not None and text in body

        return check

    await _until_everyone(machines, "sees it", has("prefer short answers"))

    say("[2] on desktop, another agent appends to it")
    await _call(desktop, "update_memory", {"uri": uri, "append": "They work on noon."})
    await _until_everyone(machines, "sees the edit", has("They work on noon."))

    say("[3] on server, a client of the official memory server's tools adds an entity;")
    say("    laptop reads it as kg://Ada")
    await _call(
        server,
        "create_entities",
        {
            "entities": [
                {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}
            ]
        },
    )

    async def sees_ada(m: Machine) -> bool:
        body = await _read(m, "kg://Ada")
        return body is not None and "first program" in body

    await _until_everyone(machines, "has Ada", sees_ada)

    say("[4] desktop goes offline (its daemon is paused); laptop and desktop both edit")
    assert desktop.daemon is not None
    desktop.daemon.send_signal(signal.SIGSTOP)
    await _call(
        laptop,
        "update_memory",
        {"uri": uri, "old_string": "short answers", "new_string": "short answers in English"},
    )
    await _call(
        desktop,
        "update_memory",
        {"uri": uri, "old_string": "short answers", "new_string": "detailed answers"},
    )
    say("    desktop comes back")
    desktop.daemon.send_signal(signal.SIGCONT)

    async def conflicted(m: Machine) -> bool:
        body = await _read(m, uri)
        return body is not None and "CONCURRENT" in body

    await _until_everyone(machines, "shows both versions as a conflict", conflicted)
    body = await _read(server, uri) or ""
    note = next((line for line in body.splitlines() if "CONCURRENT" in line), "")
    say(f"      server's read says: {note.strip()[:110]}")

    say("[5] on server, an agent settles it with one more edit (an edit names every version")
    say("    it saw, so it replaces both)")
    await _call(server, "update_memory", {"uri": uri, "append": "Settled: short, in English."})

    async def settled(m: Machine) -> bool:
        body = await _read(m, uri)
        return body is not None and "Settled" in body and "CONCURRENT" not in body

    await _until_everyone(machines, "has one version again", settled)

    say("[6] on laptop, the memory is deleted")
    await _call(laptop, "delete_memory", {"uri": uri})

    async def gone(m: Machine) -> bool:
        return await _read(m, uri) is None

    await _until_everyone(machines, "no longer has it", gone)
    say()
    for m in machines:
        shards = sorted(p.name for p in m.dir.glob("*.jsonl"))
        size = sum((m.dir / s).stat().st_size for s in shards)
        say(f"  {m.name:<8} holds {', '.join(shards)} ({size} bytes)")


async def _linger(machines: list[Machine], seconds: float) -> None:
    say(f"\nthe three machines keep running for {seconds:.0f} s: point an MCP client at one,")
    say("e.g. NOON_DIR=" + str(machines[0].dir) + " NOON_NODE_ID=laptop noon serve")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        counts = []
        for m in machines:
            body = await _read(m, "system://index/core") or ""
            counts.append(f"{m.name}: {body.count('core://')} core memories")
        print("\r  " + "   ".join(counts), end="", flush=True)
        await asyncio.sleep(min(1.0, max(0.0, end - time.monotonic())))
    say()
