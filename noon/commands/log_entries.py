"""Ops as a person reads them on a terminal: when, which machine, which client, what changed (for
``noon log`` and ``noon history``; the words are :mod:`noon.app.words`)."""

from __future__ import annotations

from typing import Any

from noon.app.words import describe, iso, when
from noon.commands.terminal import visible
from noon.core.elements import written_at
from noon.core.ops import Op
from noon.graph.reader import GraphReader


def entry(graph: GraphReader, op: Op) -> dict[str, Any]:
    return {
        "time": when(op),
        "written": iso(carried) if (carried := written_at(op.val)) is not None else None,
        "node": op.node,
        "seq": op.seq,
        "by": op.by,
        "deleted": op.val is None,
        "element": list(op.el),
        "what": describe(graph, op),
    }


def render(graph: GraphReader, ops: list[Op]) -> str:
    if not ops:
        return "no changes"
    return "\n".join(
        f"{when(op)}  {visible(op.node):<16} {visible(op.by or 'unknown'):<14} "
        f"{visible(describe(graph, op))}"
        for op in ops
    )
