"""Ops in words, as a person or an agent reads them: when, and what each did (``noon log``,
``noon history``, the page's review queue, ``memory_history``'s changes)."""

from __future__ import annotations

from noon.core.elements import written_at
from noon.core.hlc import physical, utc
from noon.core.ops import Op
from noon.graph.memory_view import show_uri
from noon.graph.reader import GraphReader
from noon.graph.uri import is_root, root_domain
from noon.kg.graph import obs_text

EXCERPT = 60


def iso(ms: int) -> str:
    return utc(ms, "iso_ms")


def when(op: Op) -> str:
    return iso(physical(op.hlc))


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[: EXCERPT - 3] + "..."


def _place(graph: GraphReader, ns: str, parent: str) -> str:
    return f"{root_domain(parent)}://" if is_root(parent) else show_uri(graph, ns, parent)


def describe(graph: GraphReader, op: Op) -> str:
    """One line saying what ``op`` did."""
    key, val = op.el, op.val or {}
    kind, ns = key[0], key[1]
    gone = op.val is None
    if kind == "content":
        uri = show_uri(graph, ns, key[2])
        if gone:
            return f"deleted memory {uri}"
        verb = "edited" if op.prev else "wrote"
        carried = written_at(val)
        first = f" (written {iso(carried)}, before the import)" if carried is not None else ""
        return f"{verb} memory {uri}{first}: {_excerpt(str(val.get('text', '')))}"
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
        el = graph.element(key)
        text = obs_text(key, el.winner) if el is not None else key[3]
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
