"""Every relay of one daemon, run beside its rounds: the own shards are uploaded shortly after
they change (coalesced: at most one upload per ``NOOND_RELAY_FLUSH``), other authors are read
every ``NOOND_RELAY_INTERVAL``; a relay that is down delays only itself."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from noon.certs import RELAY_KEY_NAME, CertError, read_relay_key
from noon.config import ConfigError
from noon.daemon_link.bodies import RelayReport
from noon.store import peerstate, signing
from noond.config import DaemonConfig
from noond.metrics import Metrics
from noond.relay.backend import RelayDown
from noond.relay.compact import compact
from noond.relay.link import RelaySettings
from noond.relay.opener import open_backend
from noond.relay.sync import Relay
from noond.shards import Holdings
from noond.signers import Signers

log = logging.getLogger("noond.relay")


class Relays:
    def __init__(self, relays: list[Relay]) -> None:
        self.relays = relays
        self._tasks: list[asyncio.Task[None]] = []
        self._wake = asyncio.Event()

    def start(self) -> None:
        for relay in self.relays:
            self._tasks.append(asyncio.create_task(self._writer(relay), name=f"up:{relay.url}"))
            self._tasks.append(asyncio.create_task(self._reader(relay), name=f"down:{relay.url}"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        for relay in self.relays:  # what was written last goes out before the daemon does
            with contextlib.suppress(RelayDown):
                await asyncio.wait_for(self._flush(relay, force=True), 10.0)

    async def _flush(self, relay: Relay, *, force: bool = False) -> None:
        await relay.up.upload()
        await relay.up.write_heads(force=force)

    def _idents(self, relay: Relay) -> tuple[Any, ...]:
        out: list[tuple[int, int, int] | None] = []
        for shard in relay.link.own:
            try:
                st = os.stat(relay.holdings.path(shard))
                out.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except FileNotFoundError:
                out.append(None)
        return tuple(out)

    async def _writer(self, relay: Relay) -> None:
        seen: tuple[Any, ...] | None = None
        compacted = time.monotonic()
        while True:
            now = await asyncio.to_thread(self._idents, relay)
            try:
                if now != seen or relay.up.uploaded is None:
                    await relay.up.upload()
                    seen = now
                await relay.up.write_heads()
                if time.monotonic() - compacted > relay.settings.compact_every:
                    compacted = time.monotonic()
                    await compact(relay)
            except RelayDown:
                pass  # said once by the relay; retried next flush, the backlog in one segment
            except Exception:
                log.exception("relay %s: upload failed", relay.url)
            relay.stats.backlog_ops = await asyncio.to_thread(relay.up.backlog)
            relay.link.metrics.relay_backlog.labels(relay.url).set(relay.stats.backlog_ops)
            await asyncio.sleep(relay.settings.flush)

    async def _reader(self, relay: Relay) -> None:
        while True:
            try:
                await relay.down.read()
            except RelayDown:
                pass
            except Exception:
                log.exception("relay %s: reading failed", relay.url)
            await asyncio.sleep(relay.settings.interval)

    def reports(self) -> dict[str, peerstate.Report]:
        """The newest frontier report of every author met through any relay."""
        out: dict[str, peerstate.Report] = {}
        for relay in self.relays:
            for node, report in relay.down.reports.items():
                if node not in out or out[node].at < report.at:
                    out[node] = report
        return out

    def status(self) -> tuple[RelayReport, ...]:
        return tuple(relay.report() for relay in self.relays)


def build(
    config: DaemonConfig,
    *,
    holdings: Holdings,
    signers: Signers,
    revoked: Callable[[], set[str]],
    metrics: Metrics,
) -> Relays:
    """The relays ``NOOND_RELAY`` names (none: an empty set that does nothing)."""
    if not config.relays:
        return Relays([])
    path = config.relay_key or config.store.dir / "certs" / RELAY_KEY_NAME
    try:
        mesh = read_relay_key(path)
        sign = signing.load(config.store)
    except (CertError, signing.SigningKeyError) as exc:
        raise ConfigError(f"NOOND_RELAY: {exc}") from None
    settings = RelaySettings(
        flush=config.relay_flush,
        interval=config.relay_interval,
        head_every=config.relay_head_every,
        compact_every=config.relay_compact_every,
        fsync=config.store.fsync,
    )
    return Relays(
        [
            Relay(
                open_backend(url, timeout=config.timeout),
                mesh,
                node=config.node,
                holdings=holdings,
                signers=signers,
                sign=sign,
                revoked=revoked,
                metrics=metrics,
                settings=settings,
            )
            for url in config.relays
        ]
    )
