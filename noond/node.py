"""One node's parts, built once from its config: its members and the state file, the shards it
holds, the forks it refuses, the signers it believes, the client, one exchange, admission,
relays, tombstone collection, the schedule and the read model's folder; and what the routes
read from them.

:mod:`noond.server` serves a :class:`Node` and :mod:`noond.daemon` runs one (its listeners, start
and stop); each imports this module and neither imports the other.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from noon.certs import (
    CertError,
    ca_certificate,
    cert_info,
    client_ssl_context,
    server_ssl_context,
)
from noon.config import ConfigError
from noon.core.collection import IMPORT_SUFFIX
from noon.net import is_loopback
from noon.store import checkpoints, signing
from noon.store.shard import read_regular
from noon.store.store import Store
from noond.admission import Admission
from noond.client import Client, HttpTransport, Transport
from noond.collection import Collector
from noond.config import DaemonConfig
from noond.exchange import Exchanger
from noond.fold import Folder
from noond.forks import Forks
from noond.membership import Membership
from noond.metrics import Metrics
from noond.relay import run as relay_run
from noond.schedule import Scheduler
from noond.shards import Holdings
from noond.signers import Signers
from noond.statefile import StateFile
from noond.wire import REVISIONS, Revisions, members_hash
from noond.wiring import ExchangeSettings, Wiring

log = logging.getLogger("noond")


class Node:
    def __init__(self, config: DaemonConfig, *, transport: Transport | None = None) -> None:
        self.config = config
        self.node = config.node
        self.dir = config.store.dir
        self.metrics = Metrics()
        self.started = time.monotonic()
        self.membership = Membership(
            self.node,
            suspect_after=config.suspect_after,
            dead_after=config.dead_after,
            dead_retry=config.dead_retry,
        )
        self.advertise = config.advertise
        self.membership.self_addresses.add(config.advertise)
        self.membership.loopback_mesh = is_loopback(config.listen_host)
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
        ca = None
        if config.tls:
            self.server_ssl, client_ssl = self._tls()
            ca = ca_certificate(config.tls_files()[2])
        self.signers = Signers(self.dir, ca)
        self.revisions: Revisions = (REVISIONS[0], REVISIONS[0])
        """Revision 2 only with a signing key: a node that cannot sign is a revision-1 author."""
        self._own_signer()
        self.metrics.info.labels(self.node, str(self.revisions[1])).set(1)
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
        self.client.speaks = self.revisions
        limits = ExchangeSettings(
            page_bytes=config.page_bytes,
            fsync=config.store.fsync,
            digest=config.digest,
            recovery_hold=config.timeout * 3,
            pull_budget=config.pull_budget,
            pull_seconds=config.timeout * 3,
            max_shard_bytes=config.max_shard_bytes,
            timeout=config.timeout,
            stream=config.stream and config.push,  # a stream carries pushes only
        )
        wiring = Wiring(
            self.node,
            self.client,
            self.holdings,
            self.membership,
            self.forks,
            self.metrics,
            limits,
            self.signers,
        )
        self.exchanger = Exchanger(wiring, state=self.state, suggest=self.suggest)
        self.admission = Admission(
            client=self.client,
            membership=self.membership,
            state=self.state,
            exchanger=self.exchanger,
            metrics=self.metrics,
        )
        self.relays = relay_run.build(
            config,
            holdings=self.holdings,
            signers=self.signers,
            revoked=lambda: self.state.revoked,
            metrics=self.metrics,
        )
        self.collector = Collector(
            self.dir,
            self.node,
            config.state_path,
            config.forget_after,
            self.metrics,
            collect_unseen=config.collect_unseen,
            collect_timeout=config.collect_timeout,
            relayed=self.relays.reports,
        )
        self.scheduler = Scheduler(
            config=config,
            membership=self.membership,
            state=self.state,
            admission=self.admission,
            exchanger=self.exchanger,
            collector=self.collector,
            metrics=self.metrics,
            watched={s: self.holdings.path(s) for s in (self.node, f"{self.node}{IMPORT_SUFFIX}")},
            after_round=self._after_round,
        )
        self.folder = None
        if config.fold:
            self.folder = Folder(config.store, self.metrics, lambda: self.holdings.disk_is_full)
        if self.folder is not None:
            self.holdings.on_stored.append(self.folder.poke)
        self._store: Store | None = None

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

    def _own_signer(self) -> None:
        """This node's signing key (PROTOCOL.md §13): with it, the node speaks revision 2 and
        signs the checkpoint of its shards' unsigned history (§13.5) before peers can ask for
        it; its certificate is known like any other (§13.2)."""
        sign = signing.load(self.config.store)
        if self.signers.required:
            path = signing.cert_path(self.config.store)
            try:
                self.signers.add(read_regular(path, 1 << 16), self.node)
            except FileNotFoundError:
                log.warning(
                    "no signing %s at %s: this node speaks protocol revision 1 only and its "
                    "writes are unsigned; members take them from this node itself, never "
                    "through a relay. Issue one with `noon certs sign %s` (or set "
                    "NOON_SIGNING_KEY to the key beside its .crt) and restart noond",
                    "key and certificate" if sign is None else "certificate",
                    path,
                    self.node,
                )
                return
            except CertError as exc:
                raise ConfigError(f"signing certificate {path}: {exc}") from None
        if sign is not None:
            self.revisions = (REVISIONS[0], REVISIONS[1])
            for shard in (self.node, f"{self.node}{IMPORT_SUFFIX}"):
                checkpoints.ensure_own(self.dir, shard, sign)

    # -- what the routes show ---------------------------------------------------------------

    def suggest(
        self,
        address: str,
        node: str | None,
        source: str,
        *,
        via: str | None = None,
        calling: bool = False,
    ) -> None:
        self.scheduler.suggest(address, node, source, via=via, calling=calling)

    async def fresh_reports(self) -> None:
        """Refresh what every live member holds before answering the local operator (for at
        most a few seconds)."""
        await self.exchanger.refresh(self.membership.alive(), min(self.config.timeout, 5.0))

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

    def _after_round(self) -> None:
        self.update_gauges()
        if self.folder is not None:
            self.folder.poke()  # a collection may have rewritten shards

    def update_gauges(self) -> None:
        counts = self.membership.counts()
        for state, n in counts.items():
            self.metrics.peers.labels(state).set(n)
        self.metrics.candidates.set(len(self.membership.candidates))
        held = self.holdings.held()
        self.metrics.shards.set(len(held))
        own = held.get(self.node)
        self.metrics.shard_seq.set(own.seq if own else 0)
        recovery = self.exchanger.recovery
        self.metrics.behind.set(1 if recovery.behind or recovery.claims else 0)
        self.metrics.peer_missing.clear()
        for m in self.membership.members.values():
            missing = sum(max(0, s.seq - m.heads.get(node, 0)) for node, s in held.items())
            self.metrics.peer_missing.labels(m.node).set(missing)
