"""Rolling a memory back to one of its text versions, shared by ``rollback_memory`` and the
page's restore: :func:`noon.graph.undo.to_version` planned on element states and changes read
from the read model, so a rollback also puts back the priority, placement, keywords and boot
membership the later edits changed, not only the text."""

from __future__ import annotations

from collections.abc import Iterable

from noon.core.ops import Draft, Op
from noon.errors import NotFound
from noon.graph import undo
from noon.graph.plan import GraphError
from noon.graph.reader import change_id, version_id
from noon.store.readmodel import changes
from noon.store.readmodel.graph import SqlGraph


class VersionNotHeld(GraphError, NotFound):
    """The version named is not one this memory's history holds here."""


def lookup(graph: SqlGraph) -> undo.Lookup:
    """Element states as :mod:`noon.graph.undo` reads them, and what names a memory, from the
    read model."""
    return undo.element_lookup(graph.element, graph)


def later_changes(graph: SqlGraph, version: Op, versions: Iterable[Op]) -> list[list[Op]]:
    """The changes (op lists) that wrote the versions newer than ``version``, oldest first."""
    ids: dict[str, None] = {}
    for op in sorted(versions, key=lambda o: o.order):
        if op.order > version.order:
            ids[change_id(op)] = None
    found = (changes.load(graph.conn, cid) for cid in ids)
    return [c.ops for c in found if c is not None]


def to_version(graph: SqlGraph, ns: str, uri: str, node: str, version: str) -> list[Draft]:
    """The drafts rolling memory ``node`` back to its text ``version``, with what the later
    text edits changed beside it. Refused when the version is not held or is what the memory
    already reads as (with nothing else to put back)."""
    el = graph.content(ns, node)
    target = next((v for v in (el.versions if el else ()) if version_id(v) == version), None)
    if el is None or target is None:
        raise VersionNotHeld(
            f"Version {version[:80]} of '{uri}' not found (not held here): read "
            f"system://history/{uri} for the versions kept."
        )
    planned = undo.to_version(target, later_changes(graph, target, el.versions), lookup(graph))
    if not planned.drafts:
        raise GraphError(f"'{uri}' already reads as version {version}: nothing to restore.")
    return planned.drafts
