"""The checkpoint that brings an author's unsigned history into its chain (PROTOCOL.md §13.5).
Pure: bytes in, bytes out.

Lines written before their author had a signing key carry no signature, and may have been
compacted or collected with no stub left: the chain cannot cross such a gap. When the author
first signs, it signs once a **checkpoint** over the lines it then holds, seqs ``1..seq``:
the leaf of each (:func:`noon.core.chain.leaf`), :data:`ZERO_LEAF` for a seq it no longer
holds, and a signature over ``"noon/checkpoint/1" 0x00 ‖ seq ‖ link``, where ``link`` is the
chain walked from the genesis over those leaves. The chain goes on from ``link`` at ``seq``;
an unsigned line at or below ``seq`` is the author's exactly when its leaf is the one the
checkpoint holds for its seq. A checkpoint is signed under its own label, so it can never
pass for a batch signature, nor one for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import orjson

from noon.core.chain import (
    LEAF_BYTES,
    ChainError,
    Sign,
    Verify,
    b64,
    genesis,
    leaf,
    parse_stub,
    step,
    unb64,
)

ZERO_LEAF = bytes(LEAF_BYTES)
"""The leaf of a seq the author no longer held when it signed its checkpoint: covers nothing."""
MAX_CHECKPOINT_SEQ = 1 << 20
"""The most seqs one checkpoint covers (16 MiB of leaves): longer unsigned history cannot be
brought in (its author's writes stay unsigned, with a warning)."""


def message(seq: int, link: bytes) -> bytes:
    return b"noon/checkpoint/1\0" + seq.to_bytes(8, "big") + link


@dataclass(frozen=True)
class Checkpoint:
    node: str
    """The shard it covers (an import shard has its own, signed with its node's key)."""
    leaves: bytes
    sig: bytes

    @property
    def seq(self) -> int:
        return len(self.leaves) // LEAF_BYTES

    @cached_property
    def link(self) -> bytes:
        """The chain after ``seq``: where the author's signed lines go on from."""
        at = genesis(self.node)
        for i in range(0, len(self.leaves), LEAF_BYTES):
            at = step(at, self.leaves[i : i + LEAF_BYTES])
        return at

    def covers(self, seq: int, raw: bytes) -> bool:
        """Whether ``raw`` at ``seq`` is a line of the author that the checkpoint vouches for
        (a stub: every leaf it keeps)."""
        stub = parse_stub(raw)
        if stub is None:
            return self.covers_run(seq, leaf(raw))
        return stub.encode() == raw and self.covers_run(stub.first, stub.leaves)

    def covers_run(self, first: int, leaves: bytes) -> bool:
        """Whether ``leaves`` are the leaves of seqs ``first..`` as the checkpoint holds them."""
        end = first + len(leaves) // LEAF_BYTES - 1
        if first < 1 or end > self.seq or not leaves:
            return False
        mine = self.leaves[(first - 1) * LEAF_BYTES : end * LEAF_BYTES]
        return mine == leaves and all(
            mine[i : i + LEAF_BYTES] != ZERO_LEAF for i in range(0, len(mine), LEAF_BYTES)
        )

    def encode(self) -> bytes:
        return orjson.dumps(
            {
                "node": self.node,
                "seq": self.seq,
                "leaves": b64(self.leaves).decode(),
                "sig": b64(self.sig).decode(),
            }
        )


def make(node: str, lines: Iterable[tuple[int, bytes]], sign: Sign) -> Checkpoint:
    """The author's checkpoint over the lines (seq, raw) of its shard, in seq order."""
    held = {seq: leaf(raw) for seq, raw in lines if parse_stub(raw) is None}
    top = max(held, default=0)
    if top > MAX_CHECKPOINT_SEQ:
        raise ChainError(f"{node}'s unsigned history reaches seq {top}, more than a checkpoint")
    leaves = b"".join(held.get(seq, ZERO_LEAF) for seq in range(1, top + 1))
    unsigned = Checkpoint(node, leaves, b"")
    return Checkpoint(node, leaves, sign(message(unsigned.seq, unsigned.link)))


def parse(text: bytes, node: str, check: Verify) -> Checkpoint:
    """A checkpoint of ``node`` that its author's certified key signed, or :class:`ChainError`
    saying what is wrong with it."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise ChainError(f"the checkpoint of {node} is not JSON") from None
    if type(obj) is not dict or obj.get("node") != node:
        raise ChainError(f"not a checkpoint of {node}")
    seq, leaves_text, sig_text = obj.get("seq"), obj.get("leaves"), obj.get("sig")
    leaves = unb64(leaves_text) if isinstance(leaves_text, str) else None
    sig = unb64(sig_text) if isinstance(sig_text, str) else None
    if (
        type(seq) is not int
        or not 1 <= seq <= MAX_CHECKPOINT_SEQ
        or leaves is None
        or len(leaves) != seq * LEAF_BYTES
        or sig is None
        or len(sig) != 64
    ):
        raise ChainError(f"the checkpoint of {node} is malformed")
    found = Checkpoint(node, leaves, sig)
    if not check(message(seq, found.link), sig):
        raise ChainError(
            f"the checkpoint of {node} up to seq {seq} is not signed by a certified key of its "
            "author"
        )
    return found
