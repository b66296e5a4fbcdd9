"""The daemon's state file: the members it verified (so a restart knows whom to dial) and the
operator's revocations and departures (written by ``noon peers``, read by ``noond`` every round).

JSON, rewritten atomically under a lock so the daemon and the CLI never lose each other's edits.
An unreadable file fails loudly: silently forgetting a revocation would let a revoked node back.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from noon.core.ops import valid_node_id
from noon.errors import Unavailable
from noon.store.private import make_dir
from noon.store.shard import NotRegular, locked, read_regular, write_file

MAX_STATE = 256 << 20
"""A state file larger than this was not written by noond."""


class StateError(Unavailable, ValueError):
    pass


@dataclass
class PeerState:
    members: dict[str, str] = field(default_factory=dict)
    """node id -> address, for members whose identity was proven over mTLS."""
    revoked: set[str] = field(default_factory=set)
    departed: set[str] = field(default_factory=set)
    reports: dict[str, Report] = field(default_factory=dict)
    """The last frontier each member reported, and when: the input of tombstone collection,
    kept across restarts so an away member blocks only what it saw."""
    retired: dict[str, int] = field(default_factory=dict)
    """Per-author maximum of the frontiers of members gone longer than the retention window."""
    forgotten: set[str] = field(default_factory=set)
    """Members retired: their knowledge lives on in ``retired``; a new report brings them back."""
    silent: dict[str, float] = field(default_factory=dict)
    """Members that count for collection but never reported, with when they were first
    counted: one silent longer than the retention window stops counting (PROTOCOL.md §11.1)."""
    recover: dict[str, Confirmation] = field(default_factory=dict)
    """Members the operator allowed to give this node back ops of its own shard
    (``noon peers recover``), with what they claimed then (PROTOCOL.md §6.1)."""

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "version": 1,
                "members": dict(sorted(self.members.items())),
                "revoked": sorted(self.revoked),
                "departed": sorted(self.departed),
                "reports": {
                    node: {"frontier": dict(sorted(r.frontier.items())), "at": r.at}
                    for node, r in sorted(self.reports.items())
                },
                "retired": dict(sorted(self.retired.items())),
                "forgotten": sorted(self.forgotten),
                "silent": dict(sorted(self.silent.items())),
                "recover": {
                    node: {"through": c.through, "digest": c.digest, "at": c.at}
                    for node, c in sorted(self.recover.items())
                },
            },
            indent=1,
        ).encode()


@dataclass(frozen=True)
class Confirmation:
    through: int | None
    """The highest own seq the member may give back (its claim when the operator confirmed;
    None: whatever it claims when the daemon next sees the confirmation, then pinned)."""
    digest: str | None
    """The digest (16 hex digits) of the member's op at ``through``, when known."""
    at: float


@dataclass(frozen=True)
class Report:
    frontier: dict[str, int]
    at: float
    """Unix time of the report."""


def _frontier(obj: object, where: str) -> dict[str, int]:
    if not isinstance(obj, dict) or not all(
        valid_node_id(k) and type(v) is int and v >= 0 for k, v in obj.items()
    ):
        raise StateError(f"{where}: a frontier must map node ids to seqs")
    return dict(obj)


def load(path: Path) -> PeerState:
    try:
        raw = read_regular(path, MAX_STATE)
    except NotRegular as exc:
        raise StateError(f"{exc}: move it away") from None
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
    # A damaged report or retired frontier fails loudly: dropping one would unblock
    # collection of elements that member saw.
    reports = {}
    raw_reports = obj.get("reports", {})
    if not isinstance(raw_reports, dict):
        raise StateError(f"{path}: reports must be an object")
    for node, rep in raw_reports.items():
        if not valid_node_id(node) or not isinstance(rep, dict):
            raise StateError(f"{path}: bad report for {node!r}")
        at = rep.get("at")
        if not isinstance(at, int | float):
            raise StateError(f"{path}: report of {node} has no time")
        reports[node] = Report(_frontier(rep.get("frontier"), f"{path}: {node}"), float(at))
    recover = {}
    raw_recover = obj.get("recover", {})
    if not isinstance(raw_recover, dict):
        raise StateError(f"{path}: recover must be an object")
    for node, c in raw_recover.items():
        through, digest, at = (
            (c.get(k) for k in ("through", "digest", "at"))
            if isinstance(c, dict)
            else (None, None, None)
        )
        if (
            not valid_node_id(node)
            or not (through is None or (type(through) is int and through > 0))
            or not (digest is None or (isinstance(digest, str) and len(digest) == 16))
            or not isinstance(at, int | float)
        ):
            raise StateError(f"{path}: bad recovery confirmation for {node!r}")
        recover[node] = Confirmation(through, digest, float(at))
    silent = obj.get("silent", {})
    if not isinstance(silent, dict) or not all(
        valid_node_id(k) and isinstance(v, int | float) for k, v in silent.items()
    ):
        raise StateError(f"{path}: silent must map node ids to times")
    return PeerState(
        recover=recover,
        silent={k: float(v) for k, v in silent.items()},
        members={k: v for k, v in members.items() if valid_node_id(k) and isinstance(v, str)},
        revoked=set(revoked),
        departed=set(departed),
        reports=reports,
        retired=_frontier(obj.get("retired", {}), f"{path}: retired"),
        forgotten={n for n in obj.get("forgotten", []) if valid_node_id(n)},
    )


def save(path: Path, state: PeerState) -> None:
    write_file(path, state.to_json())


def update(path: Path, change: Callable[[PeerState], None]) -> PeerState:
    """Read, change (in place) and write the state under the file's lock."""
    make_dir(path.parent)
    with locked(path):
        state = load(path)
        change(state)
        save(path, state)
        return state
