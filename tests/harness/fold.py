"""The whole fold held in memory: every element's state from a set of ops, by the rules of
:mod:`noon.core.fold`. The reference the read model (and every in-memory oracle of the kit) is
held to; nothing in the product folds this way."""

from __future__ import annotations

from array import array
from collections.abc import Iterable

from noon.core.fold import Element, ForkError
from noon.core.ops import Key, Op

_DENSE_GAP = 1 << 16


class SeqIndex:
    """Per-author map from seq to line digest, dense where seqs are dense (8 bytes per op)."""

    __slots__ = ("dense", "max_seq", "sparse")

    def __init__(self) -> None:
        self.dense = array("Q")
        self.sparse: dict[int, int] = {}
        self.max_seq = 0

    def get(self, seq: int) -> int:
        if seq <= len(self.dense):
            return self.dense[seq - 1]
        return self.sparse.get(seq, 0)

    def put(self, seq: int, digest: int) -> None:
        self.max_seq = max(self.max_seq, seq)
        n = len(self.dense)
        if seq <= n:
            self.dense[seq - 1] = digest
        elif seq <= n + _DENSE_GAP:
            self.dense.extend([0] * (seq - n - 1))
            self.dense.append(digest)
            # Pull any sparse entries the dense part now covers.
            for s in [s for s in self.sparse if s <= len(self.dense)]:
                self.dense[s - 1] = self.sparse.pop(s)
        else:
            self.sparse[seq] = digest


class Fold:
    """Incremental fold state. Apply ops in any order; read ``elements``."""

    def __init__(self) -> None:
        self.elements: dict[Key, Element] = {}
        self.index: dict[str, SeqIndex] = {}
        self.applied = 0
        """Distinct ops applied, known or not."""
        self.skipped = 0
        """Distinct ops skipped by the fold because this version does not know them."""

    def max_seq(self, node: str) -> int:
        idx = self.index.get(node)
        return idx.max_seq if idx else 0

    def holds(self, node: str, seq: int) -> bool:
        idx = self.index.get(node)
        return bool(idx and idx.get(seq))

    def frontier(self) -> dict[str, int]:
        """Highest seq held per author."""
        return {node: idx.max_seq for node, idx in self.index.items()}

    def apply(self, op: Op) -> bool:
        """Apply one op. Returns False for a duplicate. Raises :class:`ForkError`."""
        idx = self.index.get(op.node)
        if idx is None:
            idx = self.index[op.node] = SeqIndex()
        seen = idx.get(op.seq)
        if seen:
            if seen != op.digest:
                raise ForkError(op.node, op.seq)
            return False
        idx.put(op.seq, op.digest)
        self.applied += 1
        if not op.known:
            self.skipped += 1
            return True
        el = self.elements.get(op.el)
        if el is None:
            self.elements[op.el] = Element(op)
        else:
            el.add(op)
        return True

    def apply_all(self, ops: Iterable[Op]) -> set[Key]:
        """Apply ops; return the keys whose state changed."""
        changed: set[Key] = set()
        for op in ops:
            if self.apply(op) and op.known:
                changed.add(op.el)
        return changed
