"""The daemon's state file: the members it verified (so a restart knows whom to dial) and the
operator's revocations and departures (written by ``noon peers``, read by ``noond`` every round).

JSON, rewritten atomically under a lock so the daemon and the CLI never lose each other's edits.
An unreadable file fails loudly: silently forgetting a revocation would let a revoked node back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from noon.core.ops import valid_node_id
from noon.store.shard import locked


class StateError(ValueError):
    pass


@dataclass
class PeerState:
    members: dict[str, str] = field(default_factory=dict)
    """node id -> address, for members whose identity was proven over mTLS."""
    revoked: set[str] = field(default_factory=set)
    departed: set[str] = field(default_factory=set)

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "version": 1,
                "members": dict(sorted(self.members.items())),
                "revoked": sorted(self.revoked),
                "departed": sorted(self.departed),
            },
            indent=1,
        ).encode()


def load(path: Path) -> PeerState:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return PeerState()
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise StateError(f"{path}: not JSON ({exc}); fix or remove it") from None
    if not isinstance(obj, dict):
        raise StateError(f"{path}: not a JSON object")
    members = obj.get("members", {})
    revoked, departed = obj.get("revoked", []), obj.get("departed", [])
    if (
        not isinstance(members, dict)
        or not isinstance(revoked, list)
        or not isinstance(departed, list)
    ):
        raise StateError(f"{path}: members must be an object, revoked and departed lists")
    for node in [*revoked, *departed]:
        if not valid_node_id(node):
            raise StateError(f"{path}: invalid node id {node!r} in revoked/departed")
    return PeerState(
        members={
            k: v for k, v in members.items() if valid_node_id(k) and isinstance(v, str)
        },
        revoked=set(revoked),
        departed=set(departed),
    )


def save(path: Path, state: PeerState) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as out:
        out.write(state.to_json())
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def update(path: Path, change: Callable[[PeerState], None]) -> PeerState:
    """Read, change (in place) and write the state under the file's lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path):
        state = load(path)
        change(state)
        save(path, state)
        return state
