"""noond's JSON bodies (PROTOCOL.md §3) as typed messages: the daemon builds each answer from
one of these classes and its client, ``noon status``, ``noon peers`` and ``noon doctor`` read it
back through the same class, so the two sides cannot drift apart field by field.

Versioned by rule, not by number: a release may add a field (an older reader ignores it), never
change what one means (that is a new protocol revision, §2.1). So a field that a release before
the current one did not send has a default here (``revisions``, ``relays``, ``revocations``),
and a body from such a release still reads; every other field is required, and a field of the
wrong type, out of range or a list beyond its bound is one :class:`BodyError` naming it.
``to_json`` writes the same keys, in the same order, that revision 1 and 2 nodes send."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Protocol, Self, TypeVar

from noon.core.ops import valid_node_id
from noon.daemon_link.message import BodyError, Fields, parse

MAX_BODY = 8 << 20
"""Largest body read from a daemon (a /peers listing of a big mesh fits easily)."""
MAX_ITEMS = 100_000
"""Entries of one list or object in a body (members, shards, claims)."""
MAX_REVISION = 1000
MAX_KEPT = 100
"""Frozen tombstones a /status lists (the daemon lists at most this many)."""
MAX_ADDRESS = 300


class Message(Protocol):
    @classmethod
    def read(cls, f: Fields) -> Self: ...


M = TypeVar("M", bound=Message)


def decode(raw: bytes, kind: type[M], what: str, limit: int = MAX_BODY) -> M:
    """``raw`` as a ``kind`` message. Raises :class:`BodyError` saying what was wrong."""
    return kind.read(Fields(parse(raw, limit=limit, what=what), what))


def _node(f: Fields, name: str) -> str:
    node = f.text(name, limit=200)
    if not valid_node_id(node):
        raise BodyError(f"{f.where}: {name!r} is not a node id: {node[:80]!r}")
    return node


@dataclass(frozen=True)
class Info:
    """``GET /info``: who answers, and which revisions it speaks (§2.1)."""

    node: str
    address: str
    protocol: int
    """The caller's revision when the server speaks it, else its highest."""
    revisions: tuple[int, int]
    """Lowest and highest; a release before ranges sends only ``protocol``, its one revision."""
    capabilities: tuple[str, ...]
    software: str = "noond"

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "address": self.address,
            "protocol": self.protocol,
            "revisions": list(self.revisions),
            "capabilities": list(self.capabilities),
            "software": self.software,
        }

    @classmethod
    def read(cls, f: Fields) -> Info:
        protocol = f.integer("protocol", lo=1, hi=MAX_REVISION)
        revisions = (protocol, protocol)
        if f.has("revisions"):
            pair = f.items("revisions", 2)
            low, high = pair if len(pair) == 2 else (None, None)
            if not all(type(r) is int and 1 <= r <= MAX_REVISION for r in (low, high)):
                raise BodyError(f"{f.where}: 'revisions' must be [lowest, highest], not {pair!r}")
            assert isinstance(low, int) and isinstance(high, int)
            if low > high:
                raise BodyError(f"{f.where}: 'revisions' {low}..{high} is an empty range")
            revisions = (low, high)
        return cls(
            node=_node(f, "node"),
            address=f.text("address", "", limit=MAX_ADDRESS),
            protocol=protocol,
            revisions=revisions,
            capabilities=f.texts("capabilities", 256, []),
            software=f.text("software", "", limit=200),
        )


@dataclass(frozen=True)
class Claim:
    """A member listing more of this node's own shard than it holds (§6.1)."""

    peer: str
    shard: str
    seq: int
    digest: str
    held: int
    confirmed: bool

    def to_json(self) -> dict[str, object]:
        return {
            "peer": self.peer,
            "shard": self.shard,
            "seq": self.seq,
            "digest": self.digest,
            "held": self.held,
            "confirmed": self.confirmed,
        }

    @classmethod
    def read(cls, f: Fields) -> Claim:
        return cls(
            peer=_node(f, "peer"),
            shard=_node(f, "shard"),
            seq=f.integer("seq"),
            digest=f.text("digest", limit=16),
            held=f.integer("held"),
            confirmed=f.flag("confirmed"),
        )


@dataclass(frozen=True)
class Fork:
    """A member holding other ops than this node under one identity (§7)."""

    peer: str
    shard: str
    error: str

    def to_json(self) -> dict[str, object]:
        return {"peer": self.peer, "shard": self.shard, "error": self.error}

    @classmethod
    def read(cls, f: Fields) -> Fork:
        return cls(peer=_node(f, "peer"), shard=_node(f, "shard"), error=f.text("error"))


@dataclass(frozen=True)
class PeerCounts:
    alive: int = 0
    suspect: int = 0
    dead: int = 0

    def to_json(self) -> dict[str, object]:
        return {"alive": self.alive, "suspect": self.suspect, "dead": self.dead}

    @classmethod
    def read(cls, f: Fields) -> PeerCounts:
        return cls(alive=f.integer("alive"), suspect=f.integer("suspect"), dead=f.integer("dead"))


@dataclass(frozen=True)
class Kept:
    """A deleted element kept (frozen) because a member may still lack its ops (§11)."""

    element: tuple[str, ...]
    member: str
    reason: str
    since: float | None

    def to_json(self) -> dict[str, object]:
        return {
            "element": list(self.element),
            "member": self.member,
            "reason": self.reason,
            "since": self.since,
        }

    @classmethod
    def read(cls, f: Fields) -> Kept:
        return cls(
            element=f.texts("element", 8),
            member=f.text("member", limit=200),
            reason=f.text("reason"),
            since=f.number_or_none("since"),
        )


@dataclass(frozen=True)
class Collection:
    """The last tombstone collection (§11); ``ran`` false: none since the daemon started."""

    ran: bool = False
    collected: int = 0
    removed_ops: int = 0
    frozen: int = 0
    kept: tuple[Kept, ...] = ()

    def to_json(self) -> dict[str, object]:
        if not self.ran:
            return {"ran": False}
        return {
            "ran": True,
            "collected": self.collected,
            "removed_ops": self.removed_ops,
            "frozen": self.frozen,
            "kept": [k.to_json() for k in self.kept],
        }

    @classmethod
    def read(cls, f: Fields) -> Collection:
        if not f.flag("ran"):
            return cls()
        return cls(
            ran=True,
            collected=f.integer("collected"),
            removed_ops=f.integer("removed_ops"),
            frozen=f.integer("frozen"),
            kept=f.each("kept", MAX_KEPT, Kept.read),
        )


@dataclass
class RelayStats:
    """What a daemon counts of one relay (§14): kept current by ``noond.relay.link`` as it
    talks to the relay, and sent in :class:`RelayReport`."""

    reachable: bool | None = None
    """None: not tried yet."""
    error: str = ""
    last_upload: float | None = None
    last_read: float | None = None
    bytes_up: int = 0
    bytes_down: int = 0
    requests: int = 0
    lag_ops: int = 0
    """Ops the relay lists beyond what this node holds (authors not revoked)."""
    backlog_ops: int = 0
    """Own ops written here and not yet uploaded."""
    refused: int = 0

    @classmethod
    def read(cls, f: Fields) -> RelayStats:
        return cls(
            reachable=f.flag_or_none("reachable"),
            error=f.text("error", ""),
            last_upload=f.number_or_none("last_upload"),
            last_read=f.number_or_none("last_read"),
            bytes_up=f.integer("bytes_up", 0),
            bytes_down=f.integer("bytes_down", 0),
            requests=f.integer("requests", 0),
            lag_ops=f.integer("lag_ops", 0),
            backlog_ops=f.integer("backlog_ops", 0),
            refused=f.integer("refused", 0),
        )


@dataclass(frozen=True)
class RelayReport:
    """One relay this daemon meets others through (§14), as ``noon status`` shows it: its
    counts (sent as fields of the report itself) and the shard heads uploaded and announced."""

    url: str
    stats: RelayStats = field(default_factory=RelayStats)
    uploaded: dict[str, int] = field(default_factory=dict)
    head: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "url": self.url,
            **asdict(self.stats),
            "uploaded": dict(self.uploaded),
            "head": dict(self.head),
        }

    @classmethod
    def read(cls, f: Fields) -> RelayReport:
        return cls(
            url=f.text("url", limit=2048),
            stats=RelayStats.read(f),
            uploaded=f.counts("uploaded", MAX_ITEMS),
            head=f.counts("head", MAX_ITEMS),
        )


@dataclass(frozen=True)
class Status:
    """``GET /status``: the daemon's own state, for ``noon status`` and ``noon doctor``."""

    node: str
    protocol: int
    uptime_seconds: float
    shards: int
    own_seq: int
    behind: bool
    """A confirmed own-shard recovery is under way."""
    claims: tuple[Claim, ...]
    peers: PeerCounts
    candidates: int
    forks: tuple[Fork, ...]
    rounds: int
    collection: Collection
    relays: tuple[RelayReport, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "protocol": self.protocol,
            "uptime_seconds": self.uptime_seconds,
            "shards": self.shards,
            "own_seq": self.own_seq,
            "behind": self.behind,
            "claims": [c.to_json() for c in self.claims],
            "peers": self.peers.to_json(),
            "candidates": self.candidates,
            "forks": [k.to_json() for k in self.forks],
            "rounds": self.rounds,
            "collection": self.collection.to_json(),
            "relays": [r.to_json() for r in self.relays],
        }

    @classmethod
    def read(cls, f: Fields) -> Status:
        return cls(
            node=_node(f, "node"),
            protocol=f.integer("protocol", lo=1, hi=MAX_REVISION),
            uptime_seconds=f.number("uptime_seconds"),
            shards=f.integer("shards"),
            own_seq=f.integer("own_seq"),
            behind=f.flag("behind"),
            claims=f.each("claims", MAX_ITEMS, Claim.read),
            peers=PeerCounts.read(f.nested("peers")),
            candidates=f.integer("candidates"),
            forks=f.each("forks", MAX_ITEMS, Fork.read),
            rounds=f.integer("rounds"),
            collection=Collection.read(f.nested("collection")),
            relays=f.each("relays", 64, RelayReport.read),
        )


@dataclass(frozen=True)
class PeerEntry:
    """A member as ``/peers`` lists it."""

    node: str
    address: str
    state: str
    """``alive``, ``suspect`` or ``dead`` (§8.2)."""
    failures: int = 0
    last_ok: float = 0.0
    """Unix time of the last exchange that succeeded; 0: none since the daemon started."""
    error: str = ""
    heads: dict[str, int] = field(default_factory=dict)
    """What the member holds per shard (highest seq), as it last reported or acknowledged."""
    reported_at: float | None = None
    """When it last reported ``heads``; None: not since the daemon started."""

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "address": self.address,
            "state": self.state,
            "failures": self.failures,
            "last_ok": self.last_ok,
            "error": self.error,
            "heads": dict(self.heads),
            "reported_at": self.reported_at,
        }

    @classmethod
    def read(cls, f: Fields) -> PeerEntry:
        return cls(
            node=_node(f, "node"),
            address=f.text("address", limit=MAX_ADDRESS),
            state=f.text("state", limit=16),
            failures=f.integer("failures"),
            last_ok=f.number("last_ok"),
            error=f.text("error"),
            heads=f.counts("heads", MAX_ITEMS),
            reported_at=f.number_or_none("reported_at"),
        )


@dataclass(frozen=True)
class CandidateEntry:
    """An address heard of and not admitted yet (§8.1)."""

    address: str
    node: str | None
    source: str
    failures: int

    def to_json(self) -> dict[str, object]:
        return {
            "address": self.address,
            "node": self.node,
            "source": self.source,
            "failures": self.failures,
        }

    @classmethod
    def read(cls, f: Fields) -> CandidateEntry:
        return cls(
            address=f.text("address", limit=MAX_ADDRESS),
            node=None if f.obj.get("node") is None else _node(f, "node"),
            source=f.text("source", limit=64),
            failures=f.integer("failures"),
        )


@dataclass(frozen=True)
class Peers:
    """``GET /peers``: members, candidates, and the nodes refused for good."""

    peers: tuple[PeerEntry, ...]
    candidates: tuple[CandidateEntry, ...]
    revoked: tuple[str, ...]
    departed: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "peers": [p.to_json() for p in self.peers],
            "candidates": [c.to_json() for c in self.candidates],
            "revoked": list(self.revoked),
            "departed": list(self.departed),
        }

    @classmethod
    def read(cls, f: Fields) -> Peers:
        return cls(
            peers=f.each("peers", MAX_ITEMS, PeerEntry.read),
            candidates=f.each("candidates", MAX_ITEMS, CandidateEntry.read),
            revoked=f.texts("revoked", MAX_ITEMS),
            departed=f.texts("departed", MAX_ITEMS),
        )


@dataclass(frozen=True)
class Digest:
    """``GET /shards/digest`` (§3.1): equal roots, equal holdings."""

    root: str
    shards: int
    members: str
    revocations: str = ""
    """A digest of the revocations held (§13.6); empty from a release before them."""

    def to_json(self) -> dict[str, object]:
        return {
            "root": self.root,
            "shards": self.shards,
            "members": self.members,
            "revocations": self.revocations,
        }

    @classmethod
    def read(cls, f: Fields) -> Digest:
        return cls(
            root=f.text("root", limit=64),
            shards=f.integer("shards"),
            members=f.text("members", limit=64),
            revocations=f.text("revocations", "", limit=64),
        )


@dataclass(frozen=True)
class Pushed:
    """The answer to a push (§5): ops appended, ops already held, and the shard's head now."""

    appended: int
    skipped: int
    head: int

    def to_json(self) -> dict[str, object]:
        return {"appended": self.appended, "skipped": self.skipped, "head": self.head}

    @classmethod
    def read(cls, f: Fields) -> Pushed:
        return cls(
            appended=f.integer("appended"), skipped=f.integer("skipped"), head=f.integer("head")
        )
