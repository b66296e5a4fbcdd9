"""The protocol's vocabulary (PROTOCOL.md §2-§5), written once for the server and the client:
error codes, ``X-Noon-*`` headers, query parameters, shard summaries and listing digests."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from noon.core.ops import MAX_SEQ, valid_node_id
from noon.errors import NoonError
from noon.store.serve import MAX_CHECKS, Checks, Summary

REVISIONS = (1, 2)
"""The protocol revisions this release speaks (§2.1): 1, unsigned shards, and 2, signed shards
(§13). A node without its signing key writes unsigned lines, so it speaks revision 1 only."""
CAPABILITIES = ("digest", "gzip", "check", "checks", "membership", "graph", "signed", "stream")

MAX_LISTING = 100_000
"""Shard summaries read from one ``/shards`` listing."""
MAX_GOSSIP = 1000
"""Entries read from one ``/membership`` answer."""
MAX_OPS_PER_PAGE = 1_000_000
MAX_OPS_PER_PUSH = 200_000


class Code(StrEnum):
    """Error codes of refusals (§2.3), and the client's own for answers it cannot use."""

    BAD_REQUEST = "bad_request"
    PROTOCOL = "protocol"
    INVALID_OPS = "invalid_ops"
    UNPROVEN = "unproven"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    GAP = "gap"
    FORK = "fork"
    TIMEOUT = "timeout"
    TOO_LARGE = "too_large"
    UNSUPPORTED_ENCODING = "unsupported_encoding"
    UNAVAILABLE = "unavailable"
    QUOTA = "quota"
    INTERNAL = "internal"
    # Said by a client about an answer, never sent by a server:
    IDENTITY = "identity"
    """Someone else answers at the member's address."""
    INVALID = "invalid"
    """An answer that breaks the protocol (bad JSON, bad headers, bad ops)."""
    HTTP = "http"
    """An error status without a protocol code."""

    @classmethod
    def of(cls, raw: object) -> Code:
        """The code a peer sent, or :attr:`HTTP` for one this revision does not know."""
        try:
            return cls(str(raw))
        except ValueError:
            return cls.HTTP


class Header:
    """Request headers (§2.1) and op page headers (§4)."""

    PROTOCOL = "X-Noon-Protocol"
    NODE = "X-Noon-Node"
    ADDRESS = "X-Noon-Address"
    LAST = "X-Noon-Last"
    MORE = "X-Noon-More"
    HEAD = "X-Noon-Head"
    CHECKED = "X-Noon-Checked"
    OPS = "X-Noon-Ops"


DIGITS = re.compile(r"[0-9]{1,16}")
HEX16 = re.compile(r"[0-9a-fA-F]{16}")


def uint(raw: str, lo: int = 0, hi: int = MAX_SEQ) -> int | None:
    """An ASCII decimal in [lo, hi], or None (other digits, signs, spaces are refused)."""
    if not DIGITS.fullmatch(raw):
        return None
    value = int(raw)
    return value if lo <= value <= hi else None


def hex16(raw: str) -> int | None:
    return int(raw, 16) if HEX16.fullmatch(raw) else None


def parse_checks(raw: str) -> Checks | None:
    """``seq:digest,...`` (§4), at most :data:`MAX_CHECKS` pairs; None when malformed."""
    pairs = raw.split(",")
    if len(pairs) > MAX_CHECKS:
        return None
    out = []
    for pair in pairs:
        seq, _, digest = pair.partition(":")
        s, d = uint(seq), hex16(digest)
        if s is None or d is None:
            return None
        out.append((s, d))
    return out


def check_params(check: int | None, checks: Checks) -> dict[str, str]:
    params = {}
    if check is not None:
        params["check"] = f"{check:016x}"
    if checks:
        params["checks"] = ",".join(f"{seq}:{digest:016x}" for seq, digest in checks)
    return params


@dataclass(frozen=True)
class PageHeaders:
    """The paging headers of an op page (§4)."""

    last: int
    more: bool
    head: int
    checked: bool
    ops: int

    def encode(self) -> dict[str, str]:
        return {
            Header.LAST: str(self.last),
            Header.MORE: "1" if self.more else "0",
            Header.HEAD: str(self.head),
            Header.CHECKED: "1" if self.checked else "0",
            Header.OPS: str(self.ops),
        }

    @classmethod
    def decode(cls, headers: Mapping[str, str]) -> PageHeaders | None:
        last, head = uint(headers.get(Header.LAST, "")), uint(headers.get(Header.HEAD, ""))
        ops = uint(headers.get(Header.OPS, "0"), 0, MAX_OPS_PER_PAGE)
        if last is None or head is None or ops is None:
            return None
        return cls(
            last=last,
            more=headers.get(Header.MORE) == "1",
            head=head,
            checked=headers.get(Header.CHECKED) == "1",
            ops=ops,
        )


def summary_json(s: Summary) -> dict[str, object]:
    return {"node": s.node, "seq": s.seq, "digest": f"{s.digest:016x}"}


class WireError(NoonError, ValueError):
    """An answer that breaks the protocol; the message says how."""


def parse_listing(obj: Mapping[str, Any]) -> dict[str, Summary]:
    """A ``/shards`` answer as summaries by node. Raises :class:`WireError`."""
    entries = obj.get("shards")
    if not isinstance(entries, list) or len(entries) > MAX_LISTING:
        raise WireError(f"'shards' must be a list of at most {MAX_LISTING} summaries")
    out: dict[str, Summary] = {}
    for e in entries:
        if not isinstance(e, dict):
            raise WireError("a shard summary is not an object")
        node, seq, digest = e.get("node"), e.get("seq"), e.get("digest")
        parsed = hex16(digest) if isinstance(digest, str) else None
        if (
            not valid_node_id(node)
            or type(seq) is not int
            or not 0 <= seq <= MAX_SEQ
            or parsed is None
        ):
            raise WireError(f"invalid shard summary {str(e)[:200]}")
        assert isinstance(node, str)
        out[node] = Summary(node, seq, parsed)
    return out


def listing_root(summaries: Mapping[str, Summary]) -> str:
    """§3.1 ``root``: equal roots, equal complete histories of the same shards."""
    h = hashlib.sha256()
    for node in sorted(summaries):
        s = summaries[node]
        h.update(f"{node} {s.seq} {s.digest:016x}\n".encode())
    return h.hexdigest()[:32]


def members_hash(entries: Iterable[Mapping[str, str]]) -> str:
    """§3.1 ``members``, over ``/membership`` entries in order."""
    h = hashlib.sha256()
    for e in entries:
        h.update(f"{e['node']} {e['address']}\n".encode())
    return h.hexdigest()[:16]


Revisions = tuple[int, int]
"""The lowest and highest revision a node speaks."""


def common_revision(mine: Revisions, theirs: Revisions) -> int | None:
    """The highest revision both speak, or None."""
    high = min(mine[1], theirs[1])
    return high if high >= max(mine[0], theirs[0]) else None


STREAM_ROUTE = "/shards/{node}/stream"
"""Where a member opens an op stream (§5.1)."""
STREAM_FRAME_MAX = 4 << 20
"""Bytes of one frame a member sends on an op stream (§5.1); a bigger batch goes by POST."""
STREAM_ACK_MAX = 4096
"""Bytes of one answer on an op stream."""
