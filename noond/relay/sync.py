"""One relay, both ways (PROTOCOL.md §14): a :class:`~noond.relay.link.Link` to it, the
:class:`~noond.relay.upload.Uploader` that writes this node's segments and heads, the
:class:`~noond.relay.download.Downloader` that takes other authors', and the status that joins
them."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from noon.certs import MeshKey
from noon.core.chain import Sign
from noon.daemon_link.bodies import RelayReport, RelayStats
from noond.metrics import Metrics
from noond.relay.backend import Backend
from noond.relay.download import Downloader
from noond.relay.link import Link, RelaySettings
from noond.relay.upload import Uploader
from noond.shards import Holdings
from noond.signers import Signers


class Relay:
    def __init__(
        self,
        backend: Backend,
        mesh: MeshKey,
        *,
        node: str,
        holdings: Holdings,
        signers: Signers,
        sign: Sign | None,
        revoked: Callable[[], set[str]],
        metrics: Metrics,
        settings: RelaySettings,
    ) -> None:
        self.link = Link(backend, mesh, node=node, metrics=metrics)
        self.settings = settings
        self.holdings = holdings
        self.up = Uploader(
            self.link, holdings=holdings, signers=signers, sign=sign, settings=settings
        )
        self.down = Downloader(
            self.link, holdings=holdings, signers=signers, revoked=revoked, settings=settings
        )

    @property
    def url(self) -> str:
        return self.link.url

    @property
    def stats(self) -> RelayStats:
        return self.link.stats

    def report(self) -> RelayReport:
        return RelayReport(
            url=self.url,
            stats=replace(self.stats),  # a copy: the link goes on counting
            uploaded=dict(self.up.uploaded or {}),
            head={shard: json.loads(sent[0])["seq"] for shard, sent in self.up.head_sent.items()},
        )
