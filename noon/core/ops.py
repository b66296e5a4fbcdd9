"""The operation: one JSON object per line of a shard.

Wire and file form (keys in this order when noon writes; readers accept any order)::

    {"v":1,"node":"laptop","seq":42,"hlc":116..,"el":["content","default","laptop.40"],
     "val":{"text":"..."},"prev":[["laptop",40]],"by":"claude-code","bat":43,"via":"mcp",
     "req":"9f0c..."}

- ``v``: format version. An op with a newer version is *unknown*: its envelope (``node``,
  ``seq``, ``hlc``) is still read so it can be stored, deduplicated and relayed, but the fold
  skips it. The envelope fields keep their meaning in every future version.
- ``node``/``seq``: the op's identity. ``seq`` is the author's gapless counter, starting at 1.
- ``hlc``: hybrid logical clock stamp (see :mod:`noon.core.hlc`).
- ``el``: element key ``[kind, namespace, *parts]`` (see :mod:`noon.core.elements`).
- ``val``: the value; absent means tombstone.
- ``prev``: the ops on the element the writer held as current (its heads), which this op
  replaces; absent when the element was new to the writer.
- ``by``: the client that wrote it (MCP ``clientInfo`` name, ``cli``, ``import``): the
  client's own claim, shown as information only.
- ``via``: the edge of noon that wrote it (:data:`EDGES`), set by that edge's own code, never
  taken from a client: the review queue keys on it. Absent on ops written before it existed.
- ``req``: on the first op of a batch an agent's call wrote, the call's request key: its author
  answers a retry of the call from this batch instead of writing it again
  (:mod:`noon.store.retries`). Read by nothing else.
- ``bat``: present on every op of a multi-op batch: the seq of the batch's last op. A reader
  applies a batch only once it holds an op of that author with ``seq >= bat``, so a batch torn
  by a crash is never half-visible.

Fields a version does not know are ignored on read and preserved, since shards are only ever
rewritten line by line, verbatim.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from noon.core.elements import MAX_KEY_PART, InvalidValue, kind_of
from noon.errors import Invalid

FORMAT_VERSION = 1
MAX_LINE = 4 << 20
MAX_PREV = 256
MAX_KEY_PARTS = 16
MAX_CLIENT = 128
EDGES = ("web", "cli", "import", "mcp")
"""The edges of noon that write ops (``via``): the page, the command line, ``noon import``, an
agent over MCP. A reader keeps any other short string verbatim and treats it as none of them."""
MAX_EDGE = 32
MAX_BATCH = 100_000
MAX_SEQ = (1 << 53) - 1
_MAX_VERSION = 2**31
MAX_HLC = (253_402_300_799_999 << 16) | 0xFFFF
"""The greatest stamp accepted: 9999-12-31T23:59:59.999Z. A later one fits in 64 bits but no
date type renders it, and a single such op would break every view that shows it."""
MAX_DEPTH = 64
"""Deepest nesting of a value (the value itself is level 1): every JSON encoder noon and its
clients use re-serialises it inside their own envelopes (orjson stops at 255 levels)."""

NODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

OpId = tuple[str, int]
Key = tuple[str, ...]


class OpError(Invalid):
    """A line that is not a valid operation. The message says what is wrong with it."""


def valid_node_id(node: object) -> bool:
    return isinstance(node, str) and bool(NODE_ID.match(node)) and ".." not in node


class Op:
    """One decoded operation. Immutable by convention; shared between fold states."""

    __slots__ = (
        "bat",
        "by",
        "digest",
        "el",
        "hlc",
        "known",
        "node",
        "prev",
        "seq",
        "stub",
        "val",
        "via",
    )

    def __init__(
        self,
        node: str,
        seq: int,
        hlc: int,
        el: Key,
        val: dict[str, Any] | None,
        prev: tuple[OpId, ...] | None,
        by: str | None,
        bat: int | None,
        known: bool,
        digest: int,
        via: str | None = None,
        stub: bool = False,
    ) -> None:
        self.node = node
        self.seq = seq
        self.hlc = hlc
        self.el = el
        self.val = val
        self.prev = prev
        self.by = by
        self.bat = bat
        self.known = known
        self.digest = digest
        self.via = via
        self.stub = stub
        """A stub (:mod:`noon.core.chain`): no op, but what compaction left of dropped ones."""

    @property
    def id(self) -> OpId:
        return (self.node, self.seq)

    @property
    def order(self) -> tuple[int, str, int]:
        """The total order used for last-writer-wins: greater wins."""
        return (self.hlc, self.node, self.seq)

    @property
    def is_tombstone(self) -> bool:
        return self.val is None

    def __repr__(self) -> str:
        what = "del" if self.val is None else "put"
        return f"Op({self.node}:{self.seq} {what} {list(self.el)} hlc={self.hlc})"


def line_digest(line: bytes) -> int:
    """A 64-bit fingerprint of a line, used to tell a duplicate from a fork. Never zero.
    Trailing ``\r``, ``\n``, tabs and spaces are not part of it (PROTOCOL.md §1.1), so a line
    with or without its newline has one digest."""
    body = line.rstrip(b"\r\n\t ")
    return int.from_bytes(hashlib.blake2b(body, digest_size=8).digest(), "big") or 1


def stub_digest(obj: Mapping[str, Any], digest: int) -> int | None:
    """A stub (a run of lines compaction dropped, :mod:`noon.core.chain`) stands for the line
    it replaces: its digest is that line's, so duplicate and fork checks compare like with
    like. None for any other line."""
    d = obj.get("d")
    if type(obj.get("gone")) is int and type(d) is str and len(d) == 16:
        try:
            return int(d, 16) or None  # 0: the stub does not know it
        except ValueError:
            return None
    return None


def _fail(msg: str) -> OpError:
    return OpError(msg)


def _not_in_range(name: str, lo: int, hi: int, v: object) -> OpError:
    """The error of a field that is not an integer in ``[lo, hi]`` (one wording for each)."""
    return _fail(f"{name!r} must be an integer in [{lo}, {hi}], got {v!r:.40}")


_names: dict[str, str] = {}


def _name(s: str) -> str:
    """Share one string object per node id, kind and namespace: a million ops name only a
    handful of them, and the memoised check keeps validation off the hot path."""
    known = _names.get(s)
    if known is None:
        if len(_names) > 100_000:
            _names.clear()
        known = _names[s] = s
    return known


_node_ids: dict[str, str] = {}
"""Node ids already validated. Kept apart from ``_names``: a namespace or a client name may be
any string (even empty), and must never pass for a node id."""


def _node(v: object, what: str) -> str:
    if type(v) is str:
        known = _node_ids.get(v)
        if known is not None:
            return known
        if valid_node_id(v):
            if len(_node_ids) > 100_000:
                _node_ids.clear()
            known = _node_ids[v] = _name(v)
            return known
    raise _fail(f"{what} is not a valid node id: {v!r:.80}")


def decode(line: bytes) -> Op:
    """Decode and validate one line (without its newline). Raises :class:`OpError`."""
    line = line.rstrip(b"\r\n\t ")
    if len(line) > MAX_LINE:
        raise _fail(f"line is longer than {MAX_LINE} bytes")
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise _fail(f"not JSON: {exc}") from None
    if type(obj) is not dict:
        raise _fail(f"not a JSON object but {type(obj).__name__}")
    return from_object(obj, line_digest(line))


def from_object(obj: Mapping[str, Any], digest: int) -> Op:
    """Validate a parsed JSON object as an op. Kept lean: it runs once per op on a cold fold
    and on every op a peer sends, so each check is made inline."""
    get: Callable[[str], Any] = obj.get
    version = get("v")
    if type(version) is not int or not 1 <= version <= _MAX_VERSION:
        raise _not_in_range("v", 1, _MAX_VERSION, version)
    node = _node(get("node"), "'node'")
    seq = get("seq")
    if type(seq) is not int or not 1 <= seq <= MAX_SEQ:
        raise _not_in_range("seq", 1, MAX_SEQ, seq)
    stamp = get("hlc")
    if type(stamp) is not int or not 0 <= stamp < 1 << 64:
        raise _fail(f"'hlc' must be a 64-bit unsigned integer, got {stamp!r:.40}")
    if stamp > MAX_HLC:
        raise _fail(
            f"'hlc' {stamp} stands for a time after year 9999 ({stamp >> 16} ms since 1970): "
            "no clock writes that, and no date can show it"
        )
    bat = get("bat")
    if bat is not None and (type(bat) is not int or not seq <= bat <= seq + MAX_BATCH):
        raise _not_in_range("bat", seq, seq + MAX_BATCH, bat)
    if version > FORMAT_VERSION:
        stub = stub_digest(obj, digest)
        return Op(
            node,
            seq,
            stamp,
            (),
            None,
            None,
            None,
            bat,
            False,
            stub or digest,
            stub=stub is not None,
        )

    el = get("el")
    if type(el) is not list or not 2 <= len(el) <= MAX_KEY_PARTS:
        raise _fail(f"'el' must be a list of 2 to {MAX_KEY_PARTS} strings, got {el!r:.200}")
    for part in el:
        if type(part) is not str or len(part) > MAX_KEY_PART:
            raise _fail(f"'el' parts must be strings of at most {MAX_KEY_PART} characters")
    el[0] = _names.get(el[0]) or _name(el[0])
    el[1] = _names.get(el[1]) or _name(el[1])
    key: Key = tuple(el)
    kind = kind_of(key)

    val = get("val")
    if val is not None:
        if type(val) is not dict:
            raise _fail(f"'val' must be an object or absent, got {type(val).__name__}")
        if not _shallow(val):
            raise _fail(f"'val' is nested deeper than {MAX_DEPTH} levels")

    prev_raw = get("prev")
    prev: tuple[OpId, ...] | None = None
    if prev_raw is not None:
        if type(prev_raw) is not list or len(prev_raw) > MAX_PREV:
            raise _fail(f"'prev' must be a list of at most {MAX_PREV} [node, seq] pairs")
        pairs = []
        for p in prev_raw:
            if type(p) is not list or len(p) != 2 or type(p[1]) is not int or not p[1] >= 1:
                raise _fail(f"'prev' entry must be [node, seq], got {p!r:.100}")
            pairs.append((_node(p[0], "'prev' entry node"), p[1]))
        prev = tuple(pairs)

    by = get("by")
    if by is not None:
        if type(by) is not str or len(by) > MAX_CLIENT:
            raise _fail(f"'by' must be a string of at most {MAX_CLIENT} characters")
        by = _names.get(by) or _name(by)
    via = get("via")
    if via is not None:
        if type(via) is not str or len(via) > MAX_EDGE:
            raise _fail(f"'via' must be a string of at most {MAX_EDGE} characters")
        via = _names.get(via) or _name(via)

    if kind is None:
        return Op(node, seq, stamp, key, val, prev, by, bat, False, digest, via)
    if val is not None:
        try:
            kind.validate(val)
        except InvalidValue as exc:
            raise _fail(f"invalid value for {key[0]!r}: {exc}") from None
    return Op(node, seq, stamp, key, val, prev, by, bat, True, digest, via)


def _shallow(val: dict[str, Any]) -> bool:
    """True when ``val`` nests at most :data:`MAX_DEPTH` levels (iteratively: a hostile value
    must not exhaust the stack either)."""
    for child in val.values():
        if type(child) is dict or type(child) is list:
            break
    else:
        return True  # flat, as nearly every value is
    stack: list[tuple[Any, int]] = [(val, 1)]
    while stack:
        value, depth = stack.pop()
        for child in value.values() if type(value) is dict else value:
            if type(child) is dict or type(child) is list:
                if depth >= MAX_DEPTH:
                    return False
                stack.append((child, depth + 1))
    return True


def encode(
    *,
    node: str,
    seq: int,
    hlc: int,
    el: Key,
    val: Mapping[str, Any] | None,
    prev: tuple[OpId, ...] | None = None,
    by: str | None = None,
    bat: int | None = None,
    via: str | None = None,
    req: str | None = None,
) -> bytes:
    """Encode an op as one line, without the newline, in noon's canonical key order. The
    envelope is checked first (:class:`OpError`): a writer never puts on disk a seq, stamp or
    batch that every reader would refuse (a shard ending on seq 2^53-1 cannot take one more)."""
    return encode_batch(
        node=node, seq=seq, hlc=hlc, items=((el, val, prev),), by=by, bat=bat, via=via, req=req
    )[0]


def encode_batch(
    *,
    node: str,
    seq: int,
    hlc: int,
    items: Sequence[tuple[Key, Mapping[str, Any] | None, tuple[OpId, ...] | None]],
    by: str | None = None,
    bat: int | None = None,
    via: str | None = None,
    req: str | None = None,
) -> list[bytes]:
    """The lines of ops ``items`` (key, value, prev) of one author, as :func:`encode` writes
    each: the i-th takes seq ``seq + i`` and stamp ``hlc + i`` (a writer's batch,
    :meth:`~noon.core.hlc.Clock.tick_many`), all share ``by``, ``bat`` and ``via``, and the
    first alone carries ``req``. The envelope is checked at both ends (every seq and stamp
    between is in range when those are)."""
    n = len(items)
    if not n:
        return []
    for s, h in ((seq, hlc), (seq + n - 1, hlc + n - 1)):
        if type(s) is not int or not 1 <= s <= MAX_SEQ:
            raise OpError(f"seq {s} is outside [1, {MAX_SEQ}]: this shard cannot take more ops")
        if type(h) is not int or not 0 <= h <= MAX_HLC:
            raise OpError(f"stamp {h} is outside [0, {MAX_HLC}]")
        if bat is not None and not s <= bat <= s + MAX_BATCH:
            raise OpError(f"batch end {bat} is outside [{s}, {s + MAX_BATCH}]")
    tail: dict[str, Any] = {}
    if by is not None:
        tail["by"] = by
    if bat is not None:
        tail["bat"] = bat
    if via is not None:
        tail["via"] = via
    lines = []
    dumps = orjson.dumps
    for i, (el, val, prev) in enumerate(items):
        obj: dict[str, Any] = {
            "v": FORMAT_VERSION,
            "node": node,
            "seq": seq + i,
            "hlc": hlc + i,
            "el": el,  # a tuple is written as the array a list is
        }
        if val is not None:
            obj["val"] = val
        if prev is not None:
            obj["prev"] = prev
        if tail:
            obj |= tail
        if req is not None and not i:
            obj["req"] = req
        lines.append(dumps(obj))
    return lines


AUTO = "auto"
"""``Draft.prev`` default: name the element's current heads (a write that saw the current
state). Pass an explicit tuple to name what a client actually saw."""


class Draft:
    """An op to be written: the store stamps node, seq, hlc, provenance and batch."""

    __slots__ = ("el", "prev", "val")

    def __init__(
        self,
        el: Key,
        val: dict[str, Any] | None,
        prev: tuple[OpId, ...] | str | None = AUTO,
    ) -> None:
        kind = kind_of(el)
        if kind is None:
            raise OpError(f"unknown element kind or wrong key length: {list(el)!r:.200}")
        for p in el:
            if not isinstance(p, str) or len(p) > MAX_KEY_PART:
                raise OpError("element key parts must be strings of bounded length")
        if val is not None:
            try:
                kind.validate(val)
            except InvalidValue as exc:
                raise OpError(f"invalid value for {el[0]!r}: {exc}") from None
        self.el = el
        self.val = val
        self.prev = prev

    def __repr__(self) -> str:
        return f"Draft({list(self.el)}, {self.val!r:.60})"
