"""Lines signed as their author would sign them (PROTOCOL.md §13), for tests that act as a
node by hand: the author's chain from its first line, a signature on every batch's last line
(a line without ``bat``, or with ``bat == seq``)."""

from __future__ import annotations

from noon.core.collection import member_of
from tests.harness.mesh import Pki, key_of, sign_lines

__all__ = ["body", "key_of", "sign_lines", "signed"]


def signed(pki: Pki, node: str, lines: list[bytes], *, key_node: str | None = None) -> list[bytes]:
    """``lines`` signed with ``key_node``'s key (default: the author's own, an import shard's
    node's)."""
    return sign_lines(key_of(pki.signing(key_node or member_of(node))[0]), node, lines)


def body(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)
