"""Discovery sources. Each returns candidate (address, node id or None) pairs and never raises:
a source that fails is logged and counted, and the others still count. Nothing found here is
trusted: the daemon admits a candidate only after ``/info`` over mTLS proves who it is."""

from __future__ import annotations

import asyncio
import logging
import shutil

import orjson

from noond.config import DaemonConfig, address_of

log = logging.getLogger("noond.discovery")

TAILSCALE_TIMEOUT = 10.0
TAILSCALE_MAX_OUTPUT = 8 << 20
MAX_RESULTS = 1024


async def tailscale(port: int) -> list[tuple[str, None]]:
    """Peers of ``tailscale status --json``: the first Tailscale IP of each peer, on ``port``.
    Host names are not node ids; ``/info`` tells who answers there."""
    exe = shutil.which("tailscale")
    if exe is None:
        raise FileNotFoundError("the tailscale executable is not on PATH")
    proc = await asyncio.create_subprocess_exec(
        exe,
        "status",
        "--json",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        out = await asyncio.wait_for(proc.stdout.read(TAILSCALE_MAX_OUTPUT + 1), TAILSCALE_TIMEOUT)
        await asyncio.wait_for(proc.wait(), TAILSCALE_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise TimeoutError("tailscale status --json timed out") from None
    if len(out) > TAILSCALE_MAX_OUTPUT:
        raise ValueError("tailscale status output is too large")
    if proc.returncode != 0:
        raise RuntimeError(f"tailscale status --json exited with {proc.returncode}")
    status = orjson.loads(out)
    peers = status.get("Peer") or {} if isinstance(status, dict) else {}
    found: list[tuple[str, None]] = []
    for peer in peers.values() if isinstance(peers, dict) else []:
        if not isinstance(peer, dict) or peer.get("Online") is False:
            continue
        ips = [ip for ip in peer.get("TailscaleIPs") or [] if isinstance(ip, str)]
        ips.sort(key=lambda ip: ":" in ip)  # IPv4 first
        for ip in ips:
            try:
                found.append((address_of(ip, port), None))
                break
            except ValueError:
                continue
    return found[:MAX_RESULTS]


async def discover(
    config: DaemonConfig, on_error: object = None
) -> list[tuple[str, str | None, str]]:
    """Every configured source, as (address, node id or None, source name)."""
    found: list[tuple[str, str | None, str]] = [(s.address, s.node, "seed") for s in config.seeds]
    tasks: dict[str, asyncio.Future[list[tuple[str, None]]]] = {}
    if config.dns_srv:
        # dnspython is a quarter of noond's import time: loaded only when DNS is asked.
        from noond.srv import dns_srv

        for domain in config.dns_srv:
            tasks[f"dns:{domain}"] = asyncio.ensure_future(dns_srv(domain, config.dns_nameserver))
    if config.tailscale:
        tasks["tailscale"] = asyncio.ensure_future(tailscale(config.tailscale_port))
    for name, task in tasks.items():
        try:
            result = await task
        except Exception as exc:  # a failed source must not stop the others
            log.warning("discovery via %s failed: %s", name, exc)
            if callable(on_error):
                on_error(name.split(":")[0])
            continue
        found.extend((addr, node, name.split(":")[0]) for addr, node in result[:MAX_RESULTS])
    return found
