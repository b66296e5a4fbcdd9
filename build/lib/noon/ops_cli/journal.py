"""Ops as a person reads them: when, which machine, which client, what changed (for ``noon log``
and ``noon history``). Pure: reads a fold and the URI graph derived from it."""

from __future__ import annotations

import datetime as dt
import heapq
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from noon.core.fold import Fold
from noon.core.hlc import physical
from noon.core.ops import Key, Op
from noon.graph.model import Graph
from noon.graph.uri import is_root, root_domain
from noon.graph.views import show_uri
from noon.kg.graph import obs_text

EXCERPT = 60


def when(op: Op) -> str:
    ms = physical(op.hlc)
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[: EXCERPT - 3] + "..."


def _place(graph: Graph, ns: str, parent: str) -> str:
    return f"{root_domain(parent)}://" if is_root(parent) else show_uri(graph, ns, parent)


def describe(graph: Graph, op: Op) -> str:
    """One line saying what ``op`` did."""
    key, val = op.el, op.val or {}
    kind, ns = key[0], key[1]
    gone = op.val is None
    if kind == "content":
        uri = show_uri(graph, ns, key[2])
        if gone:
            return f"deleted memory {uri}"
        verb = "edited" if op.prev else "wrote"
        return f"{verb} memory {uri}: {_excerpt(str(val.get('text', '')))}"
    if kind == "edge":
        parent = _place(graph, ns, key[2])
        where = f"{parent.rstrip('/')}/{key[3]}" if not parent.endswith("://") else parent + key[3]
        if gone:
            return f"removed placement {where}"
        child = show_uri(graph, ns, str(val.get("child")))
        return f"placed memory at {where}" if child == where else f"placed {child} at {where}"
    if kind == "keyword":
        uri = show_uri(graph, ns, key[3])
        return (
            f"unbound keyword '{key[2]}' from {uri}"
            if gone
            else f"bound keyword '{key[2]}' to {uri}"
        )
    if kind == "boot":
        uri = show_uri(graph, ns, key[2])
        return f"removed {uri} from boot" if gone else f"added {uri} to boot"
    if kind == "entity":
        return (
            f"deleted entity kg://{key[2]}"
            if gone
            else f"created entity kg://{key[2]} ({val.get('type')})"
        )
    if kind == "obs":
        el = graph.fold.elements.get(key)
        text = obs_text(key, el) if el is not None else key[3]
        verb = "deleted observation of" if gone else "observed on"
        return f"{verb} kg://{key[2]}: {_excerpt(text)}"
    if kind == "rel":
        verb = "deleted relation" if gone else "related"
        return f"{verb} kg://{key[2]} --{key[4]}--> kg://{key[3]}"
    if kind == "review" and len(key) == 4:
        if key[2] == "upto":
            return "withdrew an approval of everything" if gone else "approved every change held"
        if gone:
            return f"returned change {key[2]} to the review queue"
        return f"{str(val.get('verdict', 'approved')).replace('_', ' ')} change {key[2]}"
    return f"{'deleted' if gone else 'wrote'} {'/'.join(key)}"


def entry(graph: Graph, op: Op) -> dict[str, Any]:
    return {
        "time": when(op),
        "node": op.node,
        "seq": op.seq,
        "by": op.by,
        "deleted": op.val is None,
        "element": list(op.el),
        "what": describe(graph, op),
    }


def ops_of(fold: Fold, keys: Iterable[Key]) -> Iterator[Op]:
    for key in keys:
        el = fold.elements.get(key)
        if el is not None:
            yield from el.versions


def newest(ops: Iterable[Op], limit: int, accept: Callable[[Op], bool] | None = None) -> list[Op]:
    """The ``limit`` newest ops by ``(hlc, node, seq)`` that ``accept`` lets through."""
    chosen = ops if accept is None else (o for o in ops if accept(o))
    return heapq.nlargest(limit, chosen, key=lambda o: o.order)


def render(graph: Graph, ops: list[Op]) -> str:
    if not ops:
        return "no changes"
    return "\n".join(
        f"{when(op)}  {op.node:<16} {op.by or 'unknown':<14} {describe(graph, op)}" for op in ops
    )
