"""Settings shared by the MCP server, the CLI and the daemon, read from the environment.

Every setting has a ``NOON_*`` variable; command-line flags override them. Bad values fail
loudly with the variable's name, never silently fall back to a default.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from noon.errors import NoonError
from noon.names import default_node_id, shard_file

N = TypeVar("N", int, float)


class ConfigError(NoonError, ValueError):
    """A setting with a value noon cannot use. The message names the variable."""


def env_int(env: Mapping[str, str], name: str, default: int, lo: int = 0) -> int:
    return _env_number(env, name, default, lo, int, "an integer")


def env_float(env: Mapping[str, str], name: str, default: float, lo: float = 0.0) -> float:
    """A duration in seconds (decimals allowed)."""
    return _env_number(env, name, default, lo, float, "a number of seconds")


def _env_number(
    env: Mapping[str, str], name: str, default: N, lo: N, parse: Callable[[str], N], what: str
) -> N:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ConfigError(f"{name} must be {what}, got {raw!r}") from None
    if value < lo:
        raise ConfigError(f"{name} must be at least {lo}, got {value}")
    return value


def env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


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
    snapshot: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        env = os.environ if env is None else env
        raw_dir = env.get("NOON_DIR", "").strip() or "~/.noon"
        node = env.get("NOON_NODE_ID", "").strip() or default_node_id()
        settings = cls(
            dir=Path(raw_dir).expanduser(),
            node_id=node,
            namespace=env.get("NOON_NAMESPACE", "").strip() or "default",
            fsync=env_bool(env, "NOON_FSYNC", True),
            max_skew_ms=env_int(env, "NOON_MAX_SKEW_MS", 60_000, 1),
            history=env_int(env, "NOON_HISTORY", 10),
            compact_after=env_int(env, "NOON_COMPACT_AFTER", 1000),
            snapshot=env_bool(env, "NOON_SNAPSHOT", True),
        )
        settings = replace(settings, **overrides)
        try:
            shard_file(settings.node_id)
        except ValueError as exc:
            raise ConfigError(f"NOON_NODE_ID: {exc}") from None
        return settings
