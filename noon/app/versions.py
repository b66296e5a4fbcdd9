"""A memory's text versions: the expected-version check every edit makes, and rolling a memory
back to one of its versions (``rollback_memory``, the page's restore)."""

from __future__ import annotations

from dataclasses import dataclass

from noon.app.actor import Actor
from noon.core.elements import CONTENT
from noon.core.ops import Draft
from noon.errors import Conflict
from noon.graph import plan
from noon.graph.reader import GraphReader, version_id
from noon.graph.uri import Uri
from noon.store import rollback
from noon.store.access import GraphService
from noon.store.readmodel.graph import SqlGraph


class VersionChanged(Conflict):
    """The memory's version is no longer the one the caller read; nothing was written.
    ``current`` is ``{"version": <its version now, or None>}``."""

    def __init__(self, uri: Uri, expected: str, current: str | None) -> None:
        super().__init__(
            f"Memory '{uri}' changed since you read it: expected version {expected}, current "
            f"version is {current or '(none)'}. Read it again with read_memory and redo the edit.",
            {"version": current},
        )
        self.expected = expected
        self.version = current


def expect_version(
    graph: GraphReader, ns: str, node: str, uri: Uri | None, expected: str | None
) -> None:
    """Refuse (:class:`VersionChanged`) when the memory's version is no longer ``expected``
    (``None``: no check). ``uri`` is how the caller named it (None: by its id)."""
    if expected is None:
        return
    el = graph.content(ns, node)
    current = version_id(el.winner) if el is not None else None
    if current != expected:
        raise VersionChanged(uri or Uri("system", ()), expected, current)


@dataclass(frozen=True)
class RolledBack:
    node: str
    version: str
    """The memory's version after the rollback (the new one when its text was written)."""
    text_written: bool
    others: int
    """Elements beside the text put back as they were (placement, keywords, boot)."""


def rollback_to(
    svc: GraphService, who: Actor, uri: str, version: str, expected: str | None
) -> RolledBack:
    """Roll the memory ``uri`` names back to its text ``version``: the text of then, and what the
    later text edits changed beside it as it was before them. Refused when ``version`` is not
    held (:class:`~noon.store.rollback.VersionNotHeld`) or the memory is no longer ``expected``."""
    label, ns = uri.strip(), who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], tuple[str, str]]:
        node, at, _ = plan.locate(g, ns, label)
        expect_version(g, ns, node, at, expected)
        drafts = rollback.to_version(g, ns, label, node, version)
        el = g.content(ns, node)
        return drafts, (node, version_id(el.winner) if el is not None else "")

    ops, (node, unchanged) = svc.write(fn, who.client, who.via)
    text = next((op for op in ops if op.el[0] == CONTENT), None)
    return RolledBack(
        node=node,
        version=version_id(text) if text is not None else unchanged,
        text_written=text is not None,
        others=len(ops) - (text is not None),
    )
