"""Daemon settings: ``NOOND_*`` environment variables, overridden by command-line flags.

Every setting, its variable, flag, type and default is one row of :data:`noond.settings.NOOND`,
which this module reads each value through and ``docs/noond.md`` shows. A bad value fails at
start with the variable's name; nothing silently falls back to a default.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from noon import daemon_link
from noon.config import Settings
from noon.core.ops import valid_node_id
from noon.daemon_link import DEFAULT_PORT
from noon.net import is_loopback
from noon.setting import ConfigError, env_int
from noond.settings import NOOND

ADDRESS_RE = re.compile(r"^(?:[A-Za-z0-9._-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]):(\d{1,5})$")


def parse_address(raw: str, default_port: int = DEFAULT_PORT, *, any_port: bool = False) -> str:
    """Normalise ``host``, ``host:port``, ``v6``, ``[v6]:port`` to ``host:port`` (v6 in
    brackets). Raises ValueError on anything else (paths, userinfo, bad ports). ``any_port``
    admits port 0 (listen on an ephemeral port)."""
    raw = raw.strip()
    if not raw:
        raise ValueError("empty address")
    try:
        ip = ipaddress.ip_address(raw)
    except ValueError:
        pass
    else:
        return f"[{ip}]:{default_port}" if ip.version == 6 else f"{ip}:{default_port}"
    if ":" not in raw or (raw.startswith("[") and raw.endswith("]")):
        raw = f"{raw}:{default_port}"
    m = ADDRESS_RE.fullmatch(raw)
    if not m or not (0 if any_port else 1) <= int(m.group(1)) <= 65535:
        raise ValueError(f"not a host:port address: {raw!r}")
    return raw


def address_of(host: str, port: int) -> str:
    """``host`` and ``port`` as an address (an IPv6 one in brackets); a name is checked as
    :func:`parse_address` checks it."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return parse_address(f"{host.rstrip('.')}:{port}")
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


@dataclass(frozen=True)
class Seed:
    address: str
    node: str | None


def parse_seeds(raw: str, default_port: int) -> list[Seed]:
    """``node@host:port`` or ``host:port``, separated by commas or whitespace."""
    seeds = []
    for item in re.split(r"[,\s]+", raw.strip()):
        if not item:
            continue
        node, sep, addr = item.rpartition("@")
        if sep and not valid_node_id(node):
            raise ValueError(f"invalid node id in seed {item!r}")
        seeds.append(Seed(parse_address(addr, default_port), node or None))
    return seeds


@dataclass(frozen=True)
class DaemonConfig:
    store: Settings
    listen_host: str = "127.0.0.1"
    listen_port: int = DEFAULT_PORT
    advertise: str = ""
    source_ip: str = ""
    """Local IP outgoing connections are bound to (multi-homed hosts; the fault suite uses
    it to tell daemons apart on loopback). Empty: the kernel chooses."""
    seeds: tuple[Seed, ...] = ()
    dns_srv: tuple[str, ...] = ()
    dns_nameserver: str = ""
    tailscale: bool = False
    tailscale_port: int = DEFAULT_PORT
    discover_interval: float = 300.0
    interval: float = 30.0
    push: bool = True
    watch_interval: float = 0.2
    inotify: bool = True
    """Learn of local writes from inotify at once (Linux), besides polling (noond.inotify)."""
    stream: bool = True
    """Push on an open stream per member and own shard (PROTOCOL.md §5.1), POST when down."""
    suspect_after: int = 3
    dead_after: int = 6
    dead_retry: float = 300.0
    tls: bool = True
    allow_plaintext: bool = False
    tls_paths: tuple[Path, Path, Path] | None = None
    """Certificate, key and CA (:func:`noon.daemon_link.tls_files`); None: the defaults."""
    revoked: frozenset[str] = frozenset()
    departed: frozenset[str] = frozenset()
    max_body: int = 32 << 20
    page_bytes: int = 1 << 20
    timeout: float = 10.0
    digest: bool = True
    state_file: Path | None = None
    """The state file (:func:`noon.daemon_link.state_path`); None: the default."""
    concurrency: int = 16
    fold: bool = True
    """Fold what is stored into the machine's read model (:mod:`noond.fold`)."""
    collect: bool = True
    """Physically remove deleted elements once no member can bring them back."""
    collect_unseen: bool = False
    """Also collect an element an away member never saw (its last report covers none of it).
    Faster, but a report can be stale (see PROTOCOL.md, Tombstone collection): opt-in."""
    collect_timeout: float = 30.0
    """Seconds a collection apart (:mod:`noond.collect_worker`) may take per 8 MiB of shards."""
    forget_after: float = 180 * 86400.0
    """Retire a member not heard from for this long (its frontier joins the retired one)."""
    metrics_listen: str = ""
    """``host:port`` of a plaintext listener serving only /metrics and /health."""
    max_connections: int = 512
    """Connections open at once (capped by the open-files limit)."""
    max_connections_per_source: int = 64
    """Connections open at once from one IP address."""
    handshake_timeout: float = 5.0
    """Seconds a TLS handshake may take before the connection is dropped."""
    pull_budget: int = 256 << 20
    """Bytes one exchange may pull from one member (the rest in the next exchange, at once while
    it takes ops)."""
    max_shard_bytes: int = 1 << 30
    """Largest replica shard kept per author: beyond it nothing more is pulled or accepted."""
    relays: tuple[str, ...] = ()
    """``s3://bucket/prefix`` or ``file:///path`` relays (PROTOCOL.md §14)."""
    relay_key: Path | None = None
    """The mesh key file; None: ``$NOON_DIR/certs/relay.key``."""
    relay_flush: float = 1.0
    relay_interval: float = 10.0
    relay_head_every: float = 30.0
    relay_compact_every: float = 300.0
    """Seconds between merges of the own segments every reader holds (PROTOCOL.md §14.5)."""

    @property
    def node(self) -> str:
        return self.store.node_id

    @property
    def state_path(self) -> Path:
        return self.state_file or daemon_link.state_path(self.store.dir, {})

    def tls_files(self) -> tuple[Path, Path, Path]:
        return self.tls_paths or daemon_link.tls_files(self.store.dir, self.node, {})

    def check(self) -> None:
        if self.dead_after < self.suspect_after:
            raise ConfigError(
                f"NOOND_DEAD_AFTER ({self.dead_after}) must be at least NOOND_SUSPECT_AFTER "
                f"({self.suspect_after})"
            )
        if not self.tls and not is_loopback(self.listen_host) and not self.allow_plaintext:
            raise ConfigError(
                f"NOOND_TLS=off on a non-loopback address ({self.listen_host}) needs the explicit "
                "opt-in NOOND_ALLOW_PLAINTEXT=true: anyone who can reach the port could push any "
                "shard"
            )


def _get(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def _ids(env: Mapping[str, str], name: str) -> frozenset[str]:
    ids = [i for i in re.split(r"[,\s]+", _get(env, name)) if i]
    bad = [i for i in ids if not valid_node_id(i)]
    if bad:
        raise ConfigError(f"{name}: invalid node ids {bad}")
    return frozenset(ids)


FLAGS: dict[str, str] = NOOND.flags()
"""Flag destination -> the variable it overrides."""


def add_flags(parser: argparse.ArgumentParser) -> None:
    NOOND.add_flags(parser)


def from_env(
    env: Mapping[str, str] | None = None, args: argparse.Namespace | None = None
) -> DaemonConfig:
    env = dict(os.environ if env is None else env)
    if args is not None:
        for dest, name in FLAGS.items():
            value = getattr(args, dest, None)
            if value is not None:
                env[name] = str(value)
    store = Settings.from_env(env)
    listen = _get(env, "NOOND_LISTEN") or f"127.0.0.1:{DEFAULT_PORT}"
    if listen.isdigit():
        listen = f"127.0.0.1:{listen}"
    try:
        host, port = split_address(parse_address(listen, any_port=True))
    except ValueError as exc:
        raise ConfigError(f"NOOND_LISTEN: {exc}") from None
    advertise = _get(env, "NOOND_ADVERTISE")
    if advertise:
        try:
            advertise = parse_address(advertise, port)
        except ValueError as exc:
            raise ConfigError(f"NOOND_ADVERTISE: {exc}") from None
    else:
        shown = socket.gethostname() if host in ("0.0.0.0", "::", "") else host
        advertise = parse_address(f"[{shown}]" if ":" in shown else shown, port, any_port=True)
    source_ip = _get(env, "NOOND_SOURCE_IP")
    if source_ip:
        try:
            source_ip = str(ipaddress.ip_address(source_ip))
        except ValueError:
            raise ConfigError(f"NOOND_SOURCE_IP: not an IP address: {source_ip!r}") from None
    try:
        seeds = tuple(parse_seeds(_get(env, "NOOND_PEERS"), port))
    except ValueError as exc:
        raise ConfigError(f"NOOND_PEERS: {exc}") from None
    nameserver = _get(env, "NOOND_DNS_NAMESERVER")
    if nameserver:
        try:
            nameserver = parse_address(nameserver, 53)
        except ValueError as exc:
            raise ConfigError(f"NOOND_DNS_NAMESERVER: {exc}") from None
    metrics_listen = _get(env, "NOOND_METRICS_LISTEN")
    if metrics_listen:
        try:
            metrics_listen = parse_address(metrics_listen, any_port=True)
        except ValueError as exc:
            raise ConfigError(f"NOOND_METRICS_LISTEN: {exc}") from None
    config = DaemonConfig(
        store=store,
        listen_host=host,
        listen_port=port,
        advertise=advertise,
        source_ip=source_ip,
        seeds=seeds,
        dns_srv=tuple(d for d in re.split(r"[,\s]+", _get(env, "NOOND_DNS_SRV")) if d),
        dns_nameserver=nameserver,
        tailscale_port=env_int(env, "NOOND_TAILSCALE_PORT", port, 1),
        tls_paths=daemon_link.tls_files(store.dir, store.node_id, env),
        revoked=_ids(env, "NOOND_REVOKED"),
        departed=_ids(env, "NOOND_DEPARTED"),
        state_file=daemon_link.state_path(store.dir, env),
        metrics_listen=metrics_listen,
        relays=tuple(r for r in re.split(r"[,\s]+", _get(env, "NOOND_RELAY")) if r),
        relay_key=Path(_get(env, "NOOND_RELAY_KEY")).expanduser()
        if _get(env, "NOOND_RELAY_KEY")
        else None,
        **NOOND.read_fields(env),
    )
    config.check()
    return config
