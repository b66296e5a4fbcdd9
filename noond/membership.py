"""Members and candidates.

A *candidate* is an address someone suggested (a seed, DNS SRV, Tailscale, gossip from a member,
an inbound caller). It becomes a *member* only after it answered ``/info`` over mTLS with the
node id its certificate proves: nothing unverified is ever exchanged with, so a bogus or stale
entry can never stall anything (noonien §9.1). Candidates that do not answer back off
exponentially and are bounded in number.

Members carry liveness: ``alive``, then ``suspect`` after ``suspect_after`` consecutive failed
exchanges, then ``dead`` after ``dead_after``. A member that fails is probed again, between
rounds too, after an eighth of how long it has been failing: at least 1 s, at most
``dead_retry`` seconds (:func:`retry_after`), so a peer back from a 60 s partition is found
within about 8 s and one gone for a day costs a probe every ``dead_retry``. Any success or
inbound request makes it alive again.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field

from noon.daemon_link.bodies import PeerEntry

MAX_CANDIDATES = 1024
MAX_MEMBERS = 10_000
MAX_PER_VOICE = 64
"""Candidates one member may have suggested (gossip, its inbound address) at a time."""
HEARSAY = frozenset({"gossip", "inbound"})
"""Sources that are a member's word, not the operator's (seeds, DNS, Tailscale, state)."""
BACKOFF_BASE = 1.0
BACKOFF_CAP = 300.0


@dataclass
class Member:
    node: str
    address: str
    state: str = "alive"
    failures: int = 0
    last_ok: float = 0.0
    next_try: float = 0.0
    error: str = ""
    """The last reason an exchange failed although the peer answered (protocol, bad data)."""
    heads: dict[str, int] = field(default_factory=dict)
    """What the peer holds, per shard (= per author), as last reported or acknowledged: its
    frontier, the input tombstone collection needs from every member."""
    reported_at: float | None = None
    """Unix time ``heads`` was last set from the peer's own answer; None: not since start."""
    members_hash: str = ""
    failing_since: float | None = None
    """Monotonic time of the first failure of the current streak (None: not failing)."""

    def report(self) -> PeerEntry:
        return PeerEntry(
            node=self.node,
            address=self.address,
            state=self.state,
            failures=self.failures,
            last_ok=round(self.last_ok, 3),
            error=self.error,
            heads=dict(sorted(self.heads.items())),
            reported_at=self.reported_at,
        )


@dataclass
class Candidate:
    address: str
    node: str | None
    source: str
    failures: int = 0
    next_try: float = 0.0
    via: str | None = None
    """The member whose word it is (gossip, inbound); None for the operator's sources."""


class Membership:
    def __init__(
        self, self_node: str, *, suspect_after: int, dead_after: int, dead_retry: float
    ) -> None:
        self.self_node = self_node
        self.suspect_after = suspect_after
        self.dead_after = dead_after
        self.dead_retry = dead_retry
        self.members: dict[str, Member] = {}
        self.candidates: dict[str, Candidate] = {}
        self.ignored: set[str] = set()
        """Revoked and departed nodes: never admitted, never exchanged with."""
        self.self_addresses: set[str] = set()
        self.loopback_mesh = False
        """This node listens on loopback: members' loopback addresses are real (tests, one
        machine). Otherwise a member saying "dial 127.0.0.1" names this very machine."""

    def suggest(
        self,
        address: str,
        node: str | None,
        source: str,
        *,
        via: str | None = None,
        calling: bool = False,
    ) -> str | None:
        """Consider an address. Returns why it was refused (``"unroutable"``, ``"flood"``,
        ``"full"``), or None: a candidate now, or harmlessly known already. Our own and known
        members' addresses are not candidates. A new address for a member is one when the
        member itself announces it (inbound, proven by its certificate) or while the member
        is not alive (it restarted elsewhere); so a live member's address never flaps on
        hearsay.

        What members say (``via``) is bounded: one pending address per node id (a new one
        replaces the old and inherits its backoff, so announcing address after address
        never makes this node dial faster), and at most :data:`MAX_PER_VOICE` candidates per
        member. Only ``calling`` (the member calls us from that very address right now)
        makes a backed-off candidate due at once."""
        if node is not None and (node == self.self_node or node in self.ignored):
            return None
        if source in HEARSAY and not self.dialable(address):
            return "unroutable"
        if address in self.self_addresses:
            return None
        if any(m.address == address for m in self.members.values()):
            return None
        if (
            node is not None
            and node in self.members
            and self.members[node].state == "alive"
            and source != "inbound"
        ):
            return None
        existing = self.candidates.get(address)
        if existing is not None:
            if node and not existing.node:
                existing.node = node
            if calling:
                existing.next_try = 0.0  # it just called us from there: it is up now
            return None
        inherited: Candidate | None = None
        if source in HEARSAY:
            if node is not None:
                inherited = next(
                    (c for c in self.candidates.values() if c.node == node and c.source in HEARSAY),
                    None,
                )
            if inherited is None and sum(1 for c in self.candidates.values() if c.via == via) >= (
                MAX_PER_VOICE
            ):
                return "flood"
        if inherited is not None:
            del self.candidates[inherited.address]
        elif len(self.candidates) >= MAX_CANDIDATES:
            return "full"
        cand = self.candidates[address] = Candidate(address, node, source, via=via)
        if inherited is not None and not calling:
            cand.failures, cand.next_try = inherited.failures, inherited.next_try
        return None

    def dialable(self, address: str) -> bool:
        """Whether a member may name ``address``: never an unspecified, multicast or reserved
        IP, nor a loopback one unless this node itself lives on loopback."""
        host = address.rpartition(":")[0].strip("[]")
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return host != "localhost" or self.loopback_mesh  # a name: DNS decides
        if ip.is_unspecified or ip.is_multicast or ip.is_reserved or ip.is_link_local:
            return False
        return not ip.is_loopback or self.loopback_mesh

    def due_candidates(self, now: float | None = None) -> list[Candidate]:
        now = time.monotonic() if now is None else now
        return [c for c in self.candidates.values() if c.next_try <= now]

    def candidate_failed(self, cand: Candidate, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        cand.failures += 1
        cand.next_try = now + min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (cand.failures - 1))

    def admit(self, node: str, address: str) -> Member | None:
        """A candidate proved to be ``node``: make (or update) it a member."""
        self.candidates.pop(address, None)
        if node == self.self_node:
            self.self_addresses.add(address)
            return None
        if node in self.ignored:
            return None
        member = self.members.get(node)
        if member is None:
            if len(self.members) >= MAX_MEMBERS:
                return None
            member = self.members[node] = Member(node, address)
        member.address = address
        self.succeeded(member)
        return member

    def retry_after(self, member: Member, now: float) -> float:
        """Seconds until a failing member is probed again."""
        since = member.failing_since if member.failing_since is not None else now
        return min(self.dead_retry, max(1.0, (now - since) / 8))

    def due_probes(self, now: float | None = None) -> list[Member]:
        """Failing members whose next probe is due (probed between rounds)."""
        now = time.monotonic() if now is None else now
        return [
            m
            for m in self.members.values()
            if m.failures and m.node not in self.ignored and m.next_try <= now
        ]

    def contactable(self, now: float | None = None) -> list[Member]:
        now = time.monotonic() if now is None else now
        return [
            m
            for m in self.members.values()
            if m.node not in self.ignored and (m.state != "dead" or m.next_try <= now)
        ]

    def alive(self) -> list[Member]:
        return [
            m for m in self.members.values() if m.state == "alive" and m.node not in self.ignored
        ]

    def succeeded(self, member: Member) -> None:
        member.state = "alive"
        member.failures = 0
        member.failing_since = None
        member.next_try = 0.0
        member.last_ok = time.time()
        member.error = ""

    def failed(self, member: Member, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        member.failures += 1
        if member.failing_since is None:
            member.failing_since = now
        member.next_try = now + self.retry_after(member, now)
        if member.failures >= self.dead_after:
            member.state = "dead"
        elif member.failures >= self.suspect_after:
            member.state = "suspect"

    def heard_from(self, node: str) -> None:
        """An authenticated inbound request from ``node``: it is up."""
        member = self.members.get(node)
        if member is not None and (member.state != "alive" or member.failures):
            member.state = "alive"
            member.failures = 0
            member.failing_since = None
            member.next_try = 0.0

    def ignore(self, nodes: set[str]) -> None:
        self.ignored = set(nodes)
        for node in nodes:
            self.members.pop(node, None)
        for addr in [a for a, c in self.candidates.items() if c.node in nodes]:
            del self.candidates[addr]

    def counts(self) -> dict[str, int]:
        """Members by state: ``alive``, ``suspect``, ``dead``."""
        out = {"alive": 0, "suspect": 0, "dead": 0}
        for m in self.members.values():
            out[m.state] += 1
        return out
