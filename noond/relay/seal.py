"""What a relay holds, sealed (PROTOCOL.md §14.2): object names that carry no node id, and
segment and head bodies encrypted with the mesh key's epoch, bound to their name.

Pure functions over bytes: no I/O. A body that is too large, does not open, or says something
its name does not is refused with :class:`Refused`, whose ``reason`` is the label counted."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import zlib
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from noon.certs import MeshKey
from noon.core.ops import valid_node_id
from noon.errors import NoonError

ROOT = "noon-relay/1/"
MAGIC = b"NR1"
NONCE = 12
MAX_SEGMENT = 64 << 20
"""Largest segment object read, sealed (and largest plaintext inflated from one)."""
MAX_HEAD = 1 << 20
SEGMENT_TARGET = 8 << 20
"""A segment is cut after the batch that reaches this many bytes of lines."""
_SEG = re.compile(r"^e([1-9][0-9]{0,5})/([0-9a-f]{32})/s/([0-9a-f]{16})-([0-9a-f]{16})\.seg$")
_HEAD = re.compile(r"^e([1-9][0-9]{0,5})/([0-9a-f]{32})/head$")
HEAD_CONTEXT = b"noon/relay-head/1\x00"


class Refused(NoonError, ValueError):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Keys:
    seal: bytes
    name: bytes


def keys(mesh: MeshKey, epoch: int) -> Keys:
    def derive(purpose: bytes) -> bytes:
        hkdf = HKDF(hashes.SHA256(), 32, salt=None, info=b"noon/relay/1 " + purpose)
        return hkdf.derive(mesh.epochs[epoch])

    return Keys(derive(b"seal"), derive(b"name"))


def tag(k: Keys, node: str) -> str:
    return hmac.new(k.name, node.encode(), hashlib.sha256).hexdigest()[:32]


def segment_name(epoch: int, tag_: str, first: int, last: int) -> str:
    return f"e{epoch}/{tag_}/s/{first:016x}-{last:016x}.seg"


def head_name(epoch: int, tag_: str) -> str:
    return f"e{epoch}/{tag_}/head"


@dataclass(frozen=True)
class Name:
    epoch: int
    tag: str
    kind: str
    """``seg`` or ``head``."""
    first: int = 0
    last: int = 0


def parse_name(name: str) -> Name | None:
    """The parts of an object name relative to :data:`ROOT`, or None for anything else (a sync
    tool's temporary or conflicted copy, a stranger's object)."""
    m = _SEG.match(name)
    if m:
        first, last = int(m.group(3), 16), int(m.group(4), 16)
        return Name(int(m.group(1)), m.group(2), "seg", first, last) if 0 < first <= last else None
    m = _HEAD.match(name)
    return Name(int(m.group(1)), m.group(2), "head") if m else None


def seal(k: Keys, name: str, plain: bytes) -> bytes:
    nonce = secrets.token_bytes(NONCE)
    aad = b"noon/relay/1\x00" + name.encode()
    return MAGIC + nonce + ChaCha20Poly1305(k.seal).encrypt(nonce, zlib.compress(plain, 1), aad)


def unseal(k: Keys, name: str, body: bytes, limit: int) -> bytes:
    if len(body) > limit:
        raise Refused("too_large", f"{name}: {len(body)} bytes, more than {limit}")
    if not body.startswith(MAGIC) or len(body) < len(MAGIC) + NONCE + 16:
        raise Refused("ciphertext", f"{name}: not a sealed relay object")
    nonce = body[len(MAGIC) : len(MAGIC) + NONCE]
    aad = b"noon/relay/1\x00" + name.encode()
    try:
        packed = ChaCha20Poly1305(k.seal).decrypt(nonce, body[len(MAGIC) + NONCE :], aad)
    except InvalidTag:
        raise Refused(
            "ciphertext", f"{name}: does not open with the mesh key (changed, cut or moved)"
        ) from None
    inflate = zlib.decompressobj()
    try:
        plain = inflate.decompress(packed, limit)
    except zlib.error as exc:
        raise Refused("ciphertext", f"{name}: {exc}") from None
    if inflate.unconsumed_tail or not inflate.eof:
        raise Refused("too_large", f"{name}: inflates past {limit} bytes")
    return plain


def segment_plain(node: str, first: int, last: int, lines: bytes) -> bytes:
    header = json.dumps({"node": node, "first": first, "last": last}, separators=(",", ":"))
    return header.encode() + b"\n" + lines


def open_segment(k: Keys, name: Name, plain: bytes) -> tuple[str, bytes]:
    """(the author, its lines) of a segment's plaintext, checked against its name."""
    header, _, lines = plain.partition(b"\n")
    try:
        meta = json.loads(header)
        node, first, last = meta["node"], meta["first"], meta["last"]
    except (ValueError, KeyError, TypeError):
        raise Refused("format", "a segment without its header") from None
    if not isinstance(node, str) or not valid_node_id(node) or tag(k, node) != name.tag:
        raise Refused("foreign", f"a segment of {node!r} under another author's name")
    if (first, last) != (name.first, name.last):
        raise Refused(
            "format", f"a segment of seqs {first}..{last} named {name.first}..{name.last}"
        )
    return node, lines


def canonical(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
