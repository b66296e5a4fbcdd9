"""Settling a memory's concurrent versions (written on two machines without either seeing the
other): keep one of them, or write a merge. Either way the write names every head, so it
replaces them all."""

from __future__ import annotations

from noon.app.actor import Actor
from noon.core.ops import Draft
from noon.errors import Conflict, Invalid, NotFound
from noon.graph import plan
from noon.graph.reader import version_id
from noon.graph.uri import node_view
from noon.store.access import GraphService
from noon.store.readmodel.graph import SqlGraph


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
