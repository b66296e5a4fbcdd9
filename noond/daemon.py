"""The daemon: serve every shard held, run anti-entropy rounds with every member, push the own
shard shortly after it changes, admit discovered candidates, keep the state file.

This module runs a :class:`~noond.node.Node` (the pieces put together, and what the routes
read from them): its listeners, start and stop. What one exchange does is in
:mod:`noond.exchange`, own-shard recovery in :mod:`noond.recovery`, admission in
:mod:`noond.admission`, when things happen in :mod:`noond.schedule`, the operator's state file
in :mod:`noond.statefile`, the routes in :mod:`noond.server`.
"""

from __future__ import annotations

import logging

from aiohttp import web

from noon.daemon_link import dial_host, publish, withdraw
from noon.store.private import make_dir
from noond.client import Transport
from noond.config import DaemonConfig, split_address
from noond.listener import Limits, Listener, descriptor_budget
from noond.node import Node
from noond.server import build_app, build_metrics_app

log = logging.getLogger("noond")

IDLE_TIMEOUT = 30.0
"""A connection that sends no complete request for this long is closed (a first request's
headers included). Clients close their idle connections sooner (client.IDLE_CLOSE)."""


class Daemon(Node):
    """A node serving its routes on its listeners, from :meth:`start` to :meth:`stop`."""

    def __init__(self, config: DaemonConfig, *, transport: Transport | None = None) -> None:
        super().__init__(config, transport=transport)
        self._runner: web.AppRunner | None = None
        self._metrics_runner: web.AppRunner | None = None
        self._listener: Listener | None = None
        self._metrics_listener: Listener | None = None
        self.port = config.listen_port

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
        make_dir(self.dir)
        self.state.reload()
        limits = Limits(
            total=descriptor_budget(self.config.max_connections),
            per_source=self.config.max_connections_per_source,
            handshake=self.config.handshake_timeout,
        )
        self._runner, self._listener = await self._serve(
            build_app(self), self.config.listen_host, self.config.listen_port, limits, tls=True
        )
        self.port = self._listener.port
        if self.advertise.endswith(":0"):
            self.advertise = f"{self.advertise[:-2]}:{self.port}"
            self.client.advertise = self.advertise
            self.membership.self_addresses.add(self.advertise)
        log.info(
            "noond %s listening on %s:%d (protocol revisions %d..%d, %s, at most %d "
            "connections, %d per source), advertising %s",
            self.node,
            self.config.listen_host,
            self.port,
            *self.revisions,
            "mTLS" if self.config.tls else "plaintext",
            limits.total,
            limits.per_source,
            self.advertise,
        )
        scheme = "https" if self.config.tls else "http"
        local = f"{scheme}://{dial_host(self.config.listen_host)}:{self.port}"
        try:
            publish(self.dir, local, self.node)  # so `noon status` finds us whatever --listen says
        except OSError as exc:
            log.warning("cannot publish where this daemon listens: %s", exc)
        if self.config.metrics_listen:
            host, port = split_address(self.config.metrics_listen)
            self._metrics_runner, self._metrics_listener = await self._serve(
                build_metrics_app(self), host, port, limits, tls=False
            )
            log.info(
                "metrics (plaintext, /metrics and /health only) on %s:%d",
                host,
                self._metrics_listener.port,
            )
        self.scheduler.start()
        self.relays.start()
        if self.folder is not None:
            self.folder.start()

    async def _serve(
        self, app: web.Application, host: str, port: int, limits: Limits, *, tls: bool
    ) -> tuple[web.AppRunner, Listener]:
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=5.0,
            auto_decompress=False,  # request bodies are never inflated (server.push_ops)
            keepalive_timeout=IDLE_TIMEOUT,
        )
        await runner.setup()
        assert runner.server is not None
        listener = Listener(
            runner.server,
            host,
            port,
            ssl_context=self.server_ssl if tls else None,
            limits=limits,
            metrics=self.metrics,
        )
        await listener.start()
        return runner, listener

    async def stop(self) -> None:
        withdraw(self.dir)
        await self.scheduler.stop()
        await self.relays.stop()
        if self.folder is not None:
            await self.folder.stop()
        self.state.save_members()
        for listener in (self._listener, self._metrics_listener):
            if listener is not None:
                await listener.stop()
        for runner in (self._runner, self._metrics_runner):
            if runner is not None:
                await runner.cleanup()
        await self.exchanger.streams.close()
        await self.client.close()
        if self._store is not None:
            self._store.close()
