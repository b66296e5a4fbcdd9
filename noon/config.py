"""Settings shared by the MCP server, the CLI and the daemon: the one place they are read.

Every setting has a ``NOON_*`` variable. A command-line flag overrides its variable: the flags
of :data:`FLAGS` are written over a copy of the environment before it is read, so a flag and
its variable go through the same parsing and the same checks (:func:`settings_from`). Bad
values fail loudly with the variable's name, never silently fall back to a default.

The settings are a frozen dataclass, not a pydantic model: they are a dozen scalars whose parse
errors must name the variable, which three small parsers do; pydantic (which the MCP SDK needs
anyway) would add a model layer and ``pydantic-settings`` a dependency for no gain here.

Settings of server-noonien (``NOONIEN_*``, ``NOONIEND_*``, ``~/.noonien``) are not read; a
machine that still has them, and no ``NOON_DIR``, is refused with what to rename, so a migrating
user never starts an empty memory by accident (:func:`legacy_settings`).
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from noon.names import default_node_id, shard_file
from noon.setting import ConfigError, Setting, Table

DEFAULT_DIR = "~/.noon"
NOONIEN_DIR = "~/.noonien"

log = logging.getLogger("noon.config")


STORE = Table(
    "noon",
    "README.md",
    (
        Setting("NOON_DIR", "the directory of shards", DEFAULT_DIR, flag="--dir"),
        Setting(
            "NOON_NODE_ID",
            "this machine's id: 1–64 of `A-Z a-z 0-9 . _ -`, unique per machine",
            flag="--node-id",
            shown="host name, sanitised",
        ),
        Setting(
            "NOON_NAMESPACE",
            "isolates memories of different agents or projects (`noon serve` also honours "
            "Nocturne's `NAMESPACE` when this is unset; over HTTP a request picks one with "
            "`X-Noon-Namespace`, or Nocturne's `X-Namespace`/`?namespace=`)",
            "default",
            flag="--namespace",
        ),
        Setting("NOON_FSYNC", "fsync every write before acknowledging it", True, field="fsync"),
        Setting(
            "NOON_MAX_SKEW_MS",
            "remote clock stamps further ahead than this (milliseconds) are clamped (and counted)",
            60_000,
            lo=1,
            field="max_skew_ms",
        ),
        Setting(
            "NOON_HISTORY",
            "superseded versions of each memory kept through compaction",
            10,
            flag="--history",
            field="history",
        ),
        Setting(
            "NOON_COMPACT_AFTER",
            "compact the own shard each time its seq crosses a multiple of this, if one of its ops "
            "is superseded (`0`: never)",
            1000,
            field="compact_after",
        ),
        Setting(
            "NOON_SOLE_WRITER",
            "`noon compact` may remove deleted memories without a daemon (only this node writes "
            "here)",
            False,
            flag="--sole-writer",
            field="sole_writer",
        ),
        Setting(
            "NOON_TOKEN",
            "token `noon serve --http` requires off loopback; `noon web`'s token (else a new one "
            "each start)",
            flag="--token",
        ),
        Setting(
            "NOON_SIGNING_KEY",
            "the key this node signs its shards with (and its import shard); its certificate is "
            "the `.crt` beside it",
            shown="`$NOON_DIR/certs/<node>.signing.key`",
        ),
    ),
)
"""The settings every ``noon`` command reads (:meth:`Settings.from_env`); a flag of the
command overrides its variable (``--token``: ``noon serve``; ``--history``,
``--sole-writer``: ``noon compact``)."""


@dataclass(frozen=True)
class Settings:
    dir: Path
    node_id: str
    namespace: str = "default"
    fsync: bool = True
    """Fsync every append before acknowledging it (``NOON_FSYNC``)."""
    max_skew_ms: int = 60_000
    history: int = 10
    """Superseded versions of a register kept through compaction (``NOON_HISTORY``)."""
    compact_after: int = 1000
    """Compact the own shard each time its seq crosses a multiple of this; 0 disables."""
    sole_writer: bool = False
    """``noon compact`` may remove deleted memories without a daemon (``NOON_SOLE_WRITER``)."""
    token: str | None = field(default=None, repr=False)
    """The bearer token ``noon serve --http`` requires (``NOON_TOKEN``)."""
    signing_key: Path | None = None
    """The Ed25519 key this node signs its shards with (``NOON_SIGNING_KEY``); None: the
    default place, ``<dir>/certs/<node>.signing.key`` (PROTOCOL.md §13)."""

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, migrating: bool = False, **overrides: Any
    ) -> Settings:
        """Settings from ``env`` (default: the process environment), then ``overrides``.

        Refuses server-noonien's settings when nothing names noon's directory, unless
        ``migrating`` (``noon import``, which is how its memory comes over)."""
        env = os.environ if env is None else env
        explicit_dir = bool(env.get("NOON_DIR", "").strip()) or "dir" in overrides
        problems = legacy_settings(env, explicit_dir=explicit_dir)
        if problems and not explicit_dir and not migrating:
            raise ConfigError(legacy_message(problems, env))
        if problems:
            log.warning("%s", legacy_message(problems, env, starting=False))
        raw_dir = str(STORE["NOON_DIR"].read(env))
        key = STORE["NOON_SIGNING_KEY"].read(env)
        settings = cls(
            dir=expand(raw_dir, env),
            node_id=str(STORE["NOON_NODE_ID"].read(env) or default_node_id()),
            namespace=str(STORE["NOON_NAMESPACE"].read(env)),
            token=str(token) if (token := STORE["NOON_TOKEN"].read(env)) else None,
            signing_key=expand(str(key), env) if key else None,
            **STORE.read_fields(env),
        )
        settings = replace(settings, **overrides)
        try:
            shard_file(settings.node_id)
        except ValueError as exc:
            raise ConfigError(f"NOON_NODE_ID: {exc}") from None
        return settings


def expand(raw: str, env: Mapping[str, str]) -> Path:
    """``~`` expanded with ``env``'s ``HOME`` when it has one (the process's otherwise)."""
    home = env.get("HOME", "").strip()
    if home and (raw == "~" or raw.startswith("~/")):
        return Path(home) / raw[2:]
    return Path(raw).expanduser()


# -- flags ---------------------------------------------------------------------------------

FLAGS: dict[str, str] = {
    "dir": "NOON_DIR",
    "node_id": "NOON_NODE_ID",
    "namespace": "NOON_NAMESPACE",
    "history": "NOON_HISTORY",
    "sole_writer": "NOON_SOLE_WRITER",
    "token": "NOON_TOKEN",
}
"""Flag destination -> the variable it overrides. Every command's flags go through here."""


def add_store_flags(parser: argparse.ArgumentParser, *, namespace: bool = True) -> None:
    """``--dir``, ``--node-id`` and (unless told not to) ``--namespace``."""
    parser.add_argument("--dir", help="memory directory (default: NOON_DIR or ~/.noon)")
    parser.add_argument(
        "--node-id", help="this machine's node id (default: NOON_NODE_ID or the host name)"
    )
    if namespace:
        parser.add_argument(
            "--namespace", help="namespace to work in (default: NOON_NAMESPACE or 'default')"
        )


def settings_from(
    args: argparse.Namespace | None = None,
    env: Mapping[str, str] | None = None,
    *,
    migrating: bool = False,
) -> Settings:
    """The settings of a command: the environment with every flag of :data:`FLAGS` that
    ``args`` carries written over its variable."""
    merged = dict(os.environ if env is None else env)
    for dest, name in FLAGS.items():
        value = getattr(args, dest, None)
        if value is None or value == "":
            continue
        merged[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return Settings.from_env(merged, migrating=migrating)


# -- server-noonien's settings -------------------------------------------------------------

RENAMED = {
    "NOONIEN_DIR": "NOON_DIR",
    "NOONIEN_NODE_ID": "NOON_NODE_ID",
    "NOONIEN_COMPACT_AFTER": "NOON_COMPACT_AFTER",
    "NOONIEN_GC": "NOON_SOLE_WRITER",
    "NOONIEND_LISTEN": "NOOND_LISTEN (noon's default port is 7707, not 27878)",
    "NOONIEND_ADVERTISE": "NOOND_ADVERTISE",
    "NOONIEND_PEERS": "NOOND_PEERS",
    "NOONIEND_DNS_SRV": "NOOND_DNS_SRV (noond reads _noond._tcp records, not _nooniend._tcp)",
    "NOONIEND_TAILSCALE": "NOOND_TAILSCALE",
    "NOONIEND_DISCOVER_INTERVAL": "NOOND_DISCOVER_INTERVAL",
    "NOONIEND_INTERVAL": "NOOND_INTERVAL",
    "NOONIEND_PUSH": "NOOND_PUSH",
    "NOONIEND_GC": "NOOND_COLLECT",
    "NOONIEND_FORGET_AFTER": "NOOND_FORGET_AFTER",
    "NOONIEND_SUSPECT_AFTER": "NOOND_SUSPECT_AFTER",
    "NOONIEND_DEAD_AFTER": "NOOND_DEAD_AFTER",
    "NOONIEND_DEAD_RETRY": "NOOND_DEAD_RETRY",
    "NOONIEND_REVOKED": "NOOND_REVOKED",
    "NOONIEND_DEPARTED": "NOOND_DEPARTED",
    "NOONIEND_TLS_CERT": "NOOND_TLS_CERT (a certificate from `noon certs issue NODE`)",
    "NOONIEND_TLS_KEY": "NOOND_TLS_KEY",
    "NOONIEND_TLS_CA": "NOOND_TLS_CA",
}
"""server-noonien's variables and noon's equivalents. The rest of its variables have none."""

UNSUPPORTED = {
    "NOONIEN_BACKEND": "noon keeps shards in a local directory (NOON_DIR) and replicates "
    "them with noond; there is no S3 or in-memory backend",
    "NOONIEN_S3_": "there is no S3 backend: copy the shard objects into a directory and "
    "`noon import` that directory",
    "NOONIEND_FANOUT": "noond exchanges with every live member each round",
    "NOONIEND_DIGEST_MIN_SHARDS": "noond uses digests whenever the peer supports them "
    "(NOOND_DIGEST)",
    "NOONIEND_CHANNELS": "membership travels with every exchange",
    "NOONIEND_RELAY": "every member relays every shard it holds",
    "NOONIEND_MEMBERSHIP_TTL": "see NOOND_FORGET_AFTER",
    "NOONIEND_TLS_REQUIRE_CLIENT": "noond always requires client certificates (NOOND_TLS)",
}


def _variable_of(advice: str) -> str:
    return advice.split(" ", 1)[0]


def legacy_settings(env: Mapping[str, str], *, explicit_dir: bool) -> list[str]:
    """What server-noonien left that noon would otherwise silently ignore, one line each.

    A ``NOONIEN_*`` variable whose noon equivalent is set too counts as decided. Without an
    explicit ``NOON_DIR``, an existing ``~/.noonien`` beside a missing ``~/.noon`` counts too."""
    found: list[str] = []
    for name in sorted(env):
        if not name.startswith(("NOONIEN_", "NOONIEND_")) or not env[name].strip():
            continue
        target = RENAMED.get(name)
        if target is not None:
            if not env.get(_variable_of(target), "").strip():
                found.append(f"{name} -> rename to {target}")
            continue
        why = next((w for prefix, w in UNSUPPORTED.items() if name.startswith(prefix)), None)
        found.append(f"{name} -> not used by noon: {why or 'noon has no equivalent'}; unset it")
    if not explicit_dir:
        old, new = expand(NOONIEN_DIR, env), expand(DEFAULT_DIR, env)
        if old.is_dir() and not new.exists():
            found.append(
                f"{old} holds server-noonien's memory and {new} does not exist -> "
                f"`noon import {old}` brings it over"
            )
    return found


def legacy_message(problems: list[str], env: Mapping[str, str], *, starting: bool = True) -> str:
    old = env.get("NOONIEN_DIR", "").strip() or NOONIEN_DIR
    head = (
        "server-noonien's settings are here, and noon does not read them:"
        if starting
        else "server-noonien's settings are still set, and noon does not read them:"
    )
    lines = [head, *(f"  {p}" for p in problems)]
    if starting:
        lines += [
            "noon refuses to start an empty memory beside them. Rename the variables (noon's "
            "settings: NOON_*, NOOND_*), bring the memory over with `noon import "
            f"{old}`, and set NOON_DIR (e.g. NOON_DIR={DEFAULT_DIR}) to say which directory "
            "noon uses."
        ]
    return "\n".join(lines)


def parse_host_port(raw: str, flag: str, example: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets or not) as given to ``flag``."""
    host, sep, port_text = raw.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"{flag} wants HOST:PORT (e.g. {example}), got {raw!r}")
    return host, int(port_text)
