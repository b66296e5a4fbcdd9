"""Lines signed as their author would sign them (PROTOCOL.md §13), for tests that act as a
node by hand: the author's chain from its first line, a signature on every batch's last line
(a line without ``bat``, or with ``bat == seq``)."""

from __future__ import annotations

from pathlib import Path

import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from bench.mesh import Pki
from noon.core import chain
from noon.core.collection import member_of


def key_of(path: Path) -> chain.Sign:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    assert isinstance(key, ed25519.Ed25519PrivateKey)
    return key.sign


def sign_lines(sign: chain.Sign, node: str, lines: list[bytes]) -> list[bytes]:
    """``lines``: the author's unsigned lines from seq 1, in order. Returns them signed."""
    out: list[bytes] = []
    link = chain.genesis(node)
    batch: list[bytes] = []
    for line in lines:
        obj = orjson.loads(line)
        batch.append(line)
        if obj.get("bat") in (None, obj["seq"]):
            link = chain.sign_batch(link, batch, obj["seq"], sign)
            out += batch
            batch = []
    assert not batch, "the last batch is not complete"
    return out


def signed(pki: Pki, node: str, lines: list[bytes], *, key_node: str | None = None) -> list[bytes]:
    """``lines`` signed with ``key_node``'s key (default: the author's own, an import shard's
    node's)."""
    return sign_lines(key_of(pki.signing(key_node or member_of(node))[0]), node, lines)


def body(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)
