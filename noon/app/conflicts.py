"""Concurrent versions (written on two machines without either seeing the other): the elements
that have them (:func:`listing`), and settling a memory's (:func:`resolve`): keep one of them,
or write a merge. Either way the write names every head, so it replaces them all."""

from __future__ import annotations

from dataclasses import dataclass

from noon.app.actor import Actor
from noon.core.elements import CONTENT
from noon.core.ops import Draft, Op
from noon.errors import Conflict, Invalid, NotFound
from noon.graph import plan
from noon.graph.memory_view import show_uri
from noon.graph.reader import GraphReader, live_text, op_time_ms, version_id, written_ms
from noon.graph.uri import is_root, node_view, root_domain
from noon.store.access import GraphService
from noon.store.readmodel.graph import SqlGraph


@dataclass(frozen=True)
class Version:
    """One of the concurrent versions of an element, and who wrote it."""

    version: str
    winner: bool
    """The one reads show until the conflict is settled."""
    time_ms: int
    client: str
    machine: str
    text: str | None = None
    """A memory's text in this version (None: a deletion, or a placement)."""
    child: str | None = None
    """A placement's memory, as its URI (None: the placement removed, or a text)."""
    priority: int | None = None
    written_ms: int = 0
    """When the version was written: the time an import carried over, else ``time_ms``."""


@dataclass(frozen=True)
class Concurrent:
    """An element with concurrent versions: a memory's text (``kind`` ``content``: ``node``,
    ``uri``, ``shown``) or a placement (``placement``: ``parent_uri``, ``name``)."""

    kind: str
    heads: list[str]
    winner: str
    versions: list[Version]
    """Newest first."""
    node: str | None = None
    uri: str | None = None
    shown: str = ""
    """The text reads show (the versions differ from it)."""
    deleted_while_placed: bool = False
    parent_uri: str | None = None
    name: str | None = None


def _version(
    op: Op,
    winner: Op,
    text: str | None = None,
    child: str | None = None,
    priority: int | None = None,
) -> Version:
    win, by, at = op.id == winner.id, op.by or "unknown", op_time_ms(op)
    return Version(version_id(op), win, at, by, op.node, text, child, priority, written_ms(op))


def listing(svc: GraphService, ns: str) -> list[Concurrent]:
    """Every element of ``ns`` with concurrent versions, texts and placements alike."""
    return svc.read(lambda s: found_in(s.graph, ns))


def found_in(graph: GraphReader, ns: str) -> list[Concurrent]:
    """:func:`listing` on a graph already being read (one snapshot with what the caller reads)."""

    def name(ident: str) -> str:
        return f"{root_domain(ident)}://" if is_root(ident) else show_uri(graph, ns, ident)

    out: list[Concurrent] = []
    for key, el in graph.conflicts(ns):
        heads = sorted(el.heads.values(), key=lambda o: o.order, reverse=True)
        ids, win = [version_id(h) for h in heads], el.winner
        if key[0] == CONTENT:
            texts = [_version(h, win, None if h.val is None else h.val["text"]) for h in heads]
            node = key[2]
            shown, uri = live_text(el), show_uri(graph, ns, node)
            out.append(
                Concurrent("content", ids, version_id(win), texts, node, uri, shown, el.deleted)
            )
            continue
        placed = [
            _version(
                h,
                win,
                child=name(h.val["child"]) if h.val is not None else None,
                priority=h.val["priority"] if h.val is not None else None,
            )
            for h in heads
        ]
        out.append(
            Concurrent(
                "placement", ids, version_id(win), placed, parent_uri=name(key[2]), name=key[3]
            )
        )
    return out


def resolve(
    svc: GraphService,
    who: Actor,
    node: str,
    keep: str | None,
    text: str | None,
    expected_heads: list[str],
) -> bool:
    """Keep the version ``keep`` (keeping a deletion deletes the memory) or write ``text`` (a
    merge). Refused (:class:`~noon.errors.Conflict`) when the heads are no longer
    ``expected_heads``. Whether the memory reads without a conflict now."""
    if (keep is None) == (text is None):
        raise Invalid("Pass either keep (a version) or text (the merged text).")
    ns = who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], None]:
        el = g.content(ns, node)
        if el is None:
            raise NotFound(f"No memory {node_view(node)}.")
        heads = sorted(version_id(h) for h in el.heads.values())
        if sorted(expected_heads) != heads:
            raise Conflict(
                "The concurrent versions changed since the page loaded them.", {"heads": heads}
            )
        if text is not None:
            return [plan.set_text(ns, node, text)], None
        chosen = next((h for h in el.heads.values() if version_id(h) == keep), None)
        if chosen is None:
            raise Invalid(f"{keep} is not one of the concurrent versions ({', '.join(heads)}).")
        if chosen.val is None:
            return plan.delete(g, ns, node, node_view(node), None, False)[0], None
        return [plan.set_text(ns, node, chosen.val["text"])], None

    svc.write(fn, who.client, who.via)

    def settled(s: GraphService) -> bool:
        el = s.graph.content(ns, node)
        return not (el is not None and el.conflicted)

    return svc.read(settled)
