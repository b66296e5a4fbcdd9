"""The daemon: serve every shard held, run anti-entropy rounds with every member, push the own
shard shortly after it changes, admit discovered candidates, keep the state file.

This module puts the pieces together and runs them: what one exchange does is in
:mod:`noond.exchange`, own-shard recovery in :mod:`noond.recovery`, admission in
:mod:`noond.admission`, when things happen in :mod:`noond.schedule`, the operator's state file
in :mod:`noond.statefile`, the routes in :mod:`noond.server`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from aiohttp import web

from noon.certs import CertError, cert_info, client_ssl_context, server_ssl_context
from noon.config import ConfigError
from noon.store.store import Store
from noond.admission import Admission
from noond.client import Client, HttpTransport, Transport
from noond.collection import Collector
from noond.config import DaemonConfig, split_address
from noond.exchange import Exchanger, ExchangeSettings
from noond.forks import Forks
from noond.membership import Membership
from noond.metrics import Metrics
from noond.schedule import Scheduler
from noond.server import build_app, build_metrics_app
from noond.shards import Holdings
from noond.statefile import StateFile
from noond.wire import PROTOCOL, members_hash

log = logging.getLogger("noond")


class Daemon:
    def __init__(self, config: DaemonConfig, *, transport: Transport | None = None) -> None:
        self.config = config
        self.node = config.node
        self.dir = config.store.dir
        self.metrics = Metrics()
        self.metrics.info.labels(self.node, str(PROTOCOL)).set(1)
        self.started = time.monotonic()
        self.membership = Membership(
            self.node,
            suspect_after=config.suspect_after,
            dead_after=config.dead_after,
            dead_retry=config.dead_retry,
        )
        self.advertise = config.advertise
        self.membership.self_addresses.add(config.advertise)
        self.state = StateFile(
            config.state_path,
            self.membership,
            revoked=config.revoked,
            departed=config.departed,
        )
        self.holdings = Holdings(self.dir, self.node, lambda: self.state.revoked)
        self.forks = Forks(self.metrics)
        self.server_ssl = None
        client_ssl = None
        if config.tls:
            self.server_ssl, client_ssl = self._tls()
        self.client = Client(
            node=self.node,
            advertise=config.advertise,
            transport=transport
            or HttpTransport(
                ssl_context=client_ssl, timeout=config.timeout, source_ip=config.source_ip
            ),
            tls=config.tls,
            max_body=config.max_body,
            metrics=self.metrics,
        )
        self.exchanger = Exchanger(
            node=self.node,
            client=self.client,
            holdings=self.holdings,
            membership=self.membership,
            forks=self.forks,
            metrics=self.metrics,
            settings=ExchangeSettings(
                page_bytes=config.page_bytes, fsync=config.store.fsync, digest=config.digest
            ),
            revoked=lambda: self.state.revoked,
            suggest=self.suggest,
        )
        self.admission = Admission(
            client=self.client,
            membership=self.membership,
            state=self.state,
            exchanger=self.exchanger,
            metrics=self.metrics,
        )
        self.collector = Collector(
            self.dir,
            self.node,
            config.state_path,
            config.forget_after,
            self.metrics,
            collect_unseen=config.collect_unseen,
        )
        self.scheduler = Scheduler(
            config=config,
            membership=self.membership,
            state=self.state,
            admission=self.admission,
            exchanger=self.exchanger,
            collector=self.collector,
            metrics=self.metrics,
            watched=self.holdings.own,
            after_round=self.update_gauges,
        )
        self._runner: web.AppRunner | None = None
        self._metrics_runner: web.AppRunner | None = None
        self._store: Store | None = None
        self.port = config.listen_port

    def _tls(self) -> tuple[Any, Any]:
        cert, key, ca = self.config.tls_files()
        try:
            server, client = server_ssl_context(cert, key, ca), client_ssl_context(cert, key, ca)
            for label, path in (("node", cert), ("ca", ca)):
                self.metrics.cert_expiry.labels(label).set(cert_info(path).not_after.timestamp())
        except CertError as exc:
            raise ConfigError(
                f"TLS files for node {self.node!r}: {exc}. Create them with `noon certs "
                f"init` and `noon certs issue {self.node}` (or set NOOND_TLS_CERT, "
                "NOOND_TLS_KEY, NOOND_TLS_CA)"
            ) from None
        return server, client

    # -- what the routes show ---------------------------------------------------------------

    def suggest(self, address: str, node: str | None, source: str) -> None:
        self.scheduler.suggest(address, node, source)

    def membership_payload(self) -> list[dict[str, str]]:
        entries = [{"node": self.node, "address": self.advertise}]
        entries += [
            {"node": m.node, "address": m.address}
            for m in sorted(self.membership.members.values(), key=lambda m: m.node)
            if m.state != "dead" and m.node not in self.state.ignored
        ]
        return entries

    def members_hash(self) -> str:
        return members_hash(self.membership_payload())

    async def graph(self) -> dict[str, Any]:
        return await asyncio.to_thread(self._graph)

    def _graph(self) -> dict[str, Any]:
        if self._store is None:
            self._store = Store(self.config.store)
        store = self._store
        store.refresh()
        elements = []
        for key in sorted(store.fold.elements):
            el = store.fold.elements[key]
            elements.append(
                {
                    "el": list(key),
                    "winner": [el.winner.node, el.winner.seq],
                    "val": el.winner.val,
                    "heads": sorted([list(h) for h in el.heads]) if el.heads else None,
                }
            )
        return {"node": self.node, "frontier": store.fold.frontier(), "elements": elements}

    def update_gauges(self) -> None:
        counts = self.membership.counts()
        for state, n in counts.items():
            self.metrics.peers.labels(state).set(n)
        self.metrics.candidates.set(len(self.membership.candidates))
        held = self.holdings.held()
        self.metrics.shards.set(len(held))
        own = held.get(self.node)
        self.metrics.shard_seq.set(own.seq if own else 0)
        self.metrics.behind.set(1 if self.exchanger.recovery.behind else 0)
        self.metrics.peer_missing.clear()
        for m in self.membership.members.values():
            missing = sum(max(0, s.seq - m.heads.get(node, 0)) for node, s in held.items())
            self.metrics.peer_missing.labels(m.node).set(missing)

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        if not self.config.tls:
            log.warning(
                "!!! TLS IS OFF: noond serves and pushes in PLAINTEXT on %s:%d. Anyone who can "
                "reach this port can read every shard and push any non-revoked shard. Use this "
                "only on loopback or a network you fully trust. !!!",
                self.config.listen_host,
                self.config.listen_port,
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state.reload()
        self._runner = web.AppRunner(build_app(self), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner,
            self.config.listen_host,
            self.config.listen_port,
            ssl_context=self.server_ssl,
            reuse_address=True,
        )
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        if self.advertise.endswith(":0"):
            self.advertise = f"{self.advertise[:-2]}:{self.port}"
            self.client.advertise = self.advertise
            self.membership.self_addresses.add(self.advertise)
        log.info(
            "noond %s listening on %s:%d (protocol %d, %s), advertising %s",
            self.node,
            self.config.listen_host,
            self.port,
            PROTOCOL,
            "mTLS" if self.config.tls else "plaintext",
            self.advertise,
        )
        if self.config.metrics_listen:
            host, port = split_address(self.config.metrics_listen)
            self._metrics_runner = web.AppRunner(
                build_metrics_app(self), access_log=None, handle_signals=False
            )
            await self._metrics_runner.setup()
            await web.TCPSite(self._metrics_runner, host, port, reuse_address=True).start()
            log.info(
                "metrics (plaintext, /metrics and /health only) on %s",
                host_port(self._metrics_runner),
            )
        self.scheduler.start()

    async def stop(self) -> None:
        await self.scheduler.stop()
        self.state.save_members()
        for runner in (self._runner, self._metrics_runner):
            if runner is not None:
                await runner.cleanup()
        await self.client.close()
        if self._store is not None:
            self._store.close()


def host_port(runner: web.AppRunner) -> str:
    """Where a runner's first site actually listens (resolves port 0)."""
    for site in runner.sites:
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            host, port = server.sockets[0].getsockname()[:2]
            return f"{host}:{port}"
    return "?"
