"""Signed shards (PROTOCOL.md §13): the hash chain over an author's lines, the signature that
closes each batch, and the stubs that compaction leaves where it drops lines. Pure: bytes in,
bytes out; signing and verifying keys are passed in as functions.

- The **chain**: ``l_0 = H("noon/chain/1\\0" + node)``; then for every seq of the author,
  ``l_s = H(l_{s-1} + leaf(line s))``, where ``leaf`` is BLAKE2b-128 of the line as stored
  (its signature included) and ``H`` BLAKE2b-256. It commits to every byte the author wrote,
  in order: no op can be forged, changed, reordered, moved between batches or spliced in from
  another history without changing every later link.
- The **signature**: the last line of a batch (a lone op, or the op at ``seq == bat``) ends with
  ``,"sig":"<Ed25519 signature, 86 characters of base64url>"``, over :func:`message` of its seq
  and ``c_s = H(l_{s-1} + leaf(unsigned line s))`` (the *unsigned line* is the line without
  that field, :func:`split_sig`). Because the links cover every earlier line and signature,
  the last signature of a body proves all of it: one signature per page, not per batch.
- A **stub** replaces a run of dropped lines (compaction, collection): a line of format
  version 2 (kept verbatim and skipped by revision-1 nodes, §1.1) holding the leaves of the
  dropped lines (16 bytes each: the chain crosses the run and stays bound on both sides), the
  digest of its last line (so duplicate and fork checks still compare like with like), and,
  when that line was signed, its unsigned leaf and signature (so a page may end there).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import orjson

from noon.core.ops import line_digest
from noon.errors import NoonError


class Anchor(Protocol):
    """What an author's checkpoint (:mod:`noon.core.checkpoint`) vouches for, as walking a
    chain uses it: the chain's link after ``seq``, and the lines below it one by one."""

    @property
    def seq(self) -> int: ...

    @property
    def link(self) -> bytes: ...

    def covers(self, seq: int, raw: bytes) -> bool: ...

    def covers_run(self, first: int, leaves: bytes) -> bool: ...


SIG_FIELD = b',"sig":"'
SIG_CHARS = 86
"""An Ed25519 signature (64 bytes) in base64url without padding."""
_SIG_TAIL = len(SIG_FIELD) + SIG_CHARS + 2
STUB_PREFIX = b'{"v":2,'
CHAIN_BYTES = 32
LEAF_BYTES = 16

Verify = Callable[[bytes, bytes], bool]
"""(message, signature) -> whether one of the author's certified keys made it."""
Sign = Callable[[bytes], bytes]


class ChainError(NoonError, ValueError):
    """Lines that the author's chain and signatures do not prove. The message says where."""


def genesis(node: str) -> bytes:
    return hashlib.blake2b(b"noon/chain/1\0" + node.encode(), digest_size=CHAIN_BYTES).digest()


def leaf(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=LEAF_BYTES).digest()


def step(link: bytes, leaf_: bytes) -> bytes:
    return hashlib.blake2b(link + leaf_, digest_size=CHAIN_BYTES).digest()


def message(seq: int, value: bytes) -> bytes:
    """What a batch's signature signs: ``c_s`` of its last line and that line's seq."""
    return b"noon/batch/1\0" + seq.to_bytes(8, "big") + value


def b64(raw: bytes) -> bytes:
    return base64.urlsafe_b64encode(raw).rstrip(b"=")


def unb64(text: bytes | str) -> bytes | None:
    if isinstance(text, str):
        text = text.encode()
    try:
        return base64.urlsafe_b64decode(text + b"=" * (-len(text) % 4))
    except (ValueError, TypeError):
        return None


def split_sig(line: bytes) -> tuple[bytes, bytes | None]:
    """(the unsigned line, its signature) for a line ending in a ``sig`` field; (the line,
    None) otherwise. A field that is not 86 base64url characters at the very end is not a
    signature: such a line is unsigned, and a batch ending on it is not proven."""
    n = len(line)
    if n <= _SIG_TAIL or not line.endswith(b'"}'):
        return line, None
    start = n - _SIG_TAIL
    if line[start : start + len(SIG_FIELD)] != SIG_FIELD:
        return line, None
    sig = unb64(line[start + len(SIG_FIELD) : n - 2])
    if sig is None or len(sig) != 64:
        return line, None
    return line[:start] + b"}", sig


def sign_batch(link_before: bytes, lines: list[bytes], seq: int, sign: Sign) -> bytes:
    """Chain ``lines`` (encoded ops, the last at ``seq``) onto ``link_before`` and sign the
    last: the lines are changed in place; returns the link after them."""
    at = link_before
    for line in lines[:-1]:
        at = step(at, leaf(line))
    sig = sign(message(seq, step(at, leaf(lines[-1]))))
    lines[-1] = lines[-1][:-1] + SIG_FIELD + b64(sig) + b'"}'
    return step(at, leaf(lines[-1]))


@dataclass(frozen=True)
class Stub:
    """What a run of dropped lines ``first..seq`` leaves behind."""

    node: str
    first: int
    leaves: bytes
    """The leaf of every dropped line, in seq order (16 bytes each)."""
    digest: int
    """The digest of the dropped line at ``seq`` (PROTOCOL.md §1.1); 0 when unknown."""
    unsigned: bytes | None = None
    """The leaf of that line without its signature, when it had one."""
    sig: bytes | None = None

    @property
    def seq(self) -> int:
        return self.first + len(self.leaves) // LEAF_BYTES - 1

    def encode(self) -> bytes:
        obj: dict[str, object] = {
            "v": 2,
            "node": self.node,
            "seq": self.seq,
            "hlc": 0,
            "gone": self.first,
            "leaves": b64(self.leaves).decode(),
            "d": f"{self.digest:016x}",
        }
        if self.unsigned is not None and self.sig is not None:
            obj["u"] = b64(self.unsigned).decode()
        line = orjson.dumps(obj)
        if self.unsigned is not None and self.sig is not None:
            line = line[:-1] + SIG_FIELD + b64(self.sig) + b'"}'
        return line

    def walk(self, at: bytes) -> tuple[bytes, bytes]:
        """(the link after the run, the link before its last line) from the link before it."""
        before = at
        for i in range(0, len(self.leaves), LEAF_BYTES):
            before, at = at, step(at, self.leaves[i : i + LEAF_BYTES])
        return at, before


def parse_stub(line: bytes) -> Stub | None:
    """The stub a line is, or None (an op, or anything else)."""
    if not line.startswith(STUB_PREFIX) or b'"gone":' not in line:
        return None
    unsigned_line, sig = split_sig(line)
    try:
        obj = orjson.loads(unsigned_line)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    node, seq, first, d = obj.get("node"), obj.get("seq"), obj.get("gone"), obj.get("d")
    leaves = unb64(obj["leaves"]) if isinstance(obj.get("leaves"), str) else None
    unsigned = unb64(obj["u"]) if isinstance(obj.get("u"), str) else None
    if not (
        isinstance(node, str)
        and type(seq) is int
        and type(first) is int
        and leaves
        and len(leaves) % LEAF_BYTES == 0
        and first + len(leaves) // LEAF_BYTES - 1 == seq
        and isinstance(d, str)
        and len(d) == 16
        and (unsigned is None) == (sig is None)
        and (unsigned is None or len(unsigned) == LEAF_BYTES)
    ):
        return None
    try:
        digest = int(d, 16)
    except ValueError:
        return None
    return Stub(node, first, leaves, digest, unsigned, sig)


@dataclass(frozen=True)
class Head:
    """Where a copy of a shard stands in its author's chain."""

    seq: int
    chain: bytes | None
    """The link after ``seq``; None when the copy cannot tell (unsigned history with a gap:
    only a checkpoint of the author can restart its chain there)."""
    proven: bool = True
    """Whether ``seq`` is covered by a signature (False: unsigned history)."""


def empty(node: str) -> Head:
    return Head(0, genesis(node))


def walk(node: str, lines: Iterable[tuple[int, bytes]], cp: Anchor | None = None) -> Head:
    """The head of a stored copy: its lines (seq, raw) in file order, already verified when they
    arrived, chained from the genesis, or from the author's checkpoint ``cp`` past its seq; a gap
    nothing covers leaves the chain unknown."""
    at: bytes | None = genesis(node)
    last = 0
    proven = True
    for seq, raw in lines:
        stub = parse_stub(raw)
        if cp is not None and (stub.seq if stub is not None else seq) <= cp.seq:
            last = stub.seq if stub is not None else seq
            at, proven = (cp.link if last == cp.seq else None), True
            continue
        if cp is not None and last < cp.seq:
            at, last, stub = cp.link, cp.seq, past(stub, cp.seq)
        if stub is not None:
            at = stub.walk(at)[0] if at is not None and stub.first == last + 1 else None
            last, proven = stub.seq, stub.sig is not None
            continue
        at = step(at, leaf(raw)) if at is not None and seq == last + 1 else None
        last, proven = seq, split_sig(raw)[1] is not None
    if cp is not None and last == cp.seq:
        at = cp.link
    return Head(last, at, proven)


def past(stub: Stub | None, seq: int) -> Stub | None:
    """The part of ``stub`` above ``seq`` (its leaves at or below were covered already)."""
    if stub is None or stub.first > seq:
        return stub
    return replace(stub, first=seq + 1, leaves=stub.leaves[(seq + 1 - stub.first) * LEAF_BYTES :])


@dataclass(frozen=True)
class Proven:
    head: Head
    signatures: int


def verify(
    node: str,
    head: Head,
    lines: Sequence[tuple[int, bytes]],
    check: Verify,
    cp: Anchor | None = None,
) -> Proven:
    """Check that ``lines`` (seq, raw), which follow ``head``, continue the author's chain and
    end on a line whose signature verifies (which then proves every line before it). Lines at
    or below the seq of the author's checkpoint ``cp`` are proven one by one by it instead, and
    the chain goes on from it. Raises :class:`ChainError` naming what breaks it; a body that
    fails is stored nowhere."""
    below = cp is not None and head.seq < cp.seq
    if head.chain is None and not below:
        raise ChainError(
            f"{node}'s copy here has unsigned history with a gap (seq {head.seq}): its chain "
            "cannot be continued without the author's checkpoint"
        )
    at, last = head.chain or b"", head.seq
    before, end = at, b""
    covered = False
    for seq, raw in lines:
        stub = parse_stub(raw)
        if cp is not None and last < cp.seq:
            if (stub.seq if stub is not None else seq) <= cp.seq:
                if not cp.covers(seq, raw):
                    raise ChainError(
                        f"{node}:{seq} is unsigned history its author's checkpoint (up to seq "
                        f"{cp.seq}) does not cover"
                    )
                last, covered = seq, True
                if last == cp.seq:
                    at = before = cp.link
                continue
            if stub is not None and stub.first <= cp.seq:
                below_cp = stub.leaves[: (cp.seq + 1 - stub.first) * LEAF_BYTES]
                if stub.encode() != raw or not cp.covers_run(stub.first, below_cp):
                    raise ChainError(f"{node}:{seq}: a stub its author's checkpoint does not cover")
                stub, raw = past(stub, cp.seq), b""
            at, before, last = cp.link, cp.link, cp.seq
        covered = False
        if stub is not None:
            if raw and stub.encode() != raw:
                raise ChainError(f"{node}:{seq}: a stub not in its one written form")
            if stub.first != last + 1:
                raise ChainError(
                    f"{node}:{seq}: a stub of seqs {stub.first}..{stub.seq} does not follow "
                    f"seq {last}"
                )
            at, before = stub.walk(at)
            last, end = stub.seq, b""
            continue
        if seq != last + 1:
            raise ChainError(
                f"{node}:{seq} does not follow seq {last}: the chain has a gap nothing covers"
            )
        before, at, last, end = at, step(at, leaf(raw)), seq, raw
    sig: bytes | None = None
    unsigned = b""
    if end:
        bare, sig = split_sig(end)
        unsigned = leaf(bare)
    elif lines:
        stub = parse_stub(lines[-1][1])
        if stub is not None:
            unsigned, sig = stub.unsigned or b"", stub.sig
    if not lines:
        return Proven(head, 0)
    if covered:  # the body ends inside the checkpoint, whose signature proved it
        assert cp is not None
        return Proven(Head(last, cp.link if last == cp.seq else None, True), 0)
    if sig is None:
        raise ChainError(f"{node}:{last} ends a body without a signature of {node}")
    if not check(message(last, step(before, unsigned)), sig):
        raise ChainError(
            f"{node}:{last}: the signature does not verify with a certified key of {node} "
            "(forged, changed, reordered, moved or spliced lines, or another node's key)"
        )
    return Proven(Head(last, at, True), 1)


class _Run:
    """A run of dropped lines being gathered into one stub."""

    def __init__(self, node: str, first: int) -> None:
        self.node, self.first = node, first
        self.leaves = bytearray()
        self.digest = 0
        self.unsigned: bytes | None = None
        self.sig: bytes | None = None

    def add_line(self, raw: bytes) -> None:
        bare, sig = split_sig(raw)
        self.leaves += leaf(raw)
        self.digest = line_digest(raw)
        self.unsigned, self.sig = (leaf(bare), sig) if sig is not None else (None, None)

    def add_stub(self, stub: Stub) -> None:
        self.leaves += stub.leaves
        self.digest, self.unsigned, self.sig = stub.digest, stub.unsigned, stub.sig

    def stub(self) -> bytes:
        return Stub(
            self.node, self.first, bytes(self.leaves), self.digest, self.unsigned, self.sig
        ).encode()


def restub(
    node: str,
    lines: Iterable[tuple[int, bytes, bool]],
    start: Head | None = None,
    cp: Anchor | None = None,
) -> list[bytes]:
    """A copy's lines after dropping some: ``lines`` are (seq, raw, keep) in file order, from
    ``start`` (default: the shard's beginning); each run of dropped lines (with the stubs
    next to them) becomes one stub, so the chain still crosses it. Where the chain is unknown
    (unsigned history with a gap), dropped lines leave nothing, as in revision 1; so do lines
    the author's checkpoint ``cp`` covers (it proves each kept one alone)."""
    return list(restubbed(node, lines, start, cp))


def restubbed(
    node: str,
    lines: Iterable[tuple[int, bytes, bool]],
    start: Head | None = None,
    cp: Anchor | None = None,
) -> Iterator[bytes]:
    """:func:`restub`, line by line: a compaction streams a shard through it (it holds one run
    of dropped lines' leaves at most, never the copy)."""
    begin = start or empty(node)
    known, last = begin.chain is not None, begin.seq
    run: _Run | None = None
    for seq, raw, keep in lines:
        stub = parse_stub(raw)
        first = stub.first if stub is not None else seq
        if cp is not None and last < cp.seq:
            if (stub.seq if stub is not None else seq) <= cp.seq:
                if keep or stub is not None:
                    yield raw
                last = stub.seq if stub is not None else seq
                continue
            known, last = True, min(cp.seq, first - 1)
        if known and first != last + 1:
            known = False
        if not known and run is not None:
            yield run.stub()
            run = None
        last = stub.seq if stub is not None else seq
        if stub is not None:
            if known:
                run = run or _Run(node, stub.first)
                run.add_stub(stub)
            else:
                yield raw
            continue
        if keep:
            if run is not None:
                yield run.stub()
                run = None
            yield raw
        elif known:
            run = run or _Run(node, seq)
            run.add_line(raw)
    if run is not None:
        yield run.stub()


Known = dict[int, tuple[bytes, int, bytes | None, bytes | None]]
"""seq -> (its leaf, its line's digest or 0, its unsigned leaf, its signature)."""


def known(node: str, lines: Iterable[tuple[int, bytes]]) -> Known:
    """What a copy tells of every seq of its chain: from its lines, and its stubs' leaves."""
    out: Known = {}
    for seq, raw in lines:
        stub = parse_stub(raw)
        if stub is None:
            bare, sig = split_sig(raw)
            out[seq] = (leaf(raw), line_digest(raw), leaf(bare) if sig else None, sig)
            continue
        for i in range(0, len(stub.leaves), LEAF_BYTES):
            out[stub.first + i // LEAF_BYTES] = (stub.leaves[i : i + LEAF_BYTES], 0, None, None)
        out[stub.seq] = (out[stub.seq][0], stub.digest, stub.unsigned, stub.sig)
    return out


def bridge(
    node: str, lines: Sequence[tuple[int, bytes]], values: Known, cp: Anchor | None = None
) -> list[bytes]:
    """``lines`` (seq, raw) of a merged copy, with a stub put into every gap whose every leaf
    ``values`` knows, so the chain crosses it (any other gap stays: the chain breaks there,
    as in a copy of revision 1). Gaps at or below the author's checkpoint ``cp`` need none."""
    out: list[bytes] = []
    last = 0
    floor = cp.seq if cp is not None else 0
    for seq, raw in lines:
        stub = parse_stub(raw)
        first = stub.first if stub is not None else seq
        gap = range(max(last, floor) + 1, first)
        if gap and all(s in values for s in gap):
            end = values[gap[-1]]
            stub_ = Stub(
                node,
                gap[0],
                b"".join(values[s][0] for s in gap),
                end[1],
                end[2] if end[3] is not None else None,
                end[3] if end[2] is not None else None,
            )
            out.append(stub_.encode())
        out.append(raw)
        last = seq
    return out
