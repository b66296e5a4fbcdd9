"""The review queue as the page shows it: a change's head with its review status and a listing
of :mod:`noon.app.queue` as JSON (used by :mod:`noon.web.data`, whose docstrings describe the
shapes, and by the page's timelines and undo previews)."""

from __future__ import annotations

from typing import Any

from noon.app import words
from noon.app.changes import Review
from noon.app.queue import Listing, cursor_text
from noon.graph.memory_view import show_uri
from noon.store.readmodel.changes import Head, Verdict
from noon.store.readmodel.graph import SqlGraph


def _subject(graph: SqlGraph, ns: str, about: str | None) -> dict[str, Any] | None:
    if about is None:
        return None
    if about.startswith("kg:"):
        return {"kind": "entity", "name": about[3:], "label": f"kg://{about[3:]}"}
    if about.startswith("@edge:"):
        return {"kind": "placement", "label": about[6:]}
    return {"kind": "memory", "node": about, "label": show_uri(graph, ns, about)}


def item(graph: SqlGraph, review: Review, h: Head) -> dict[str, Any]:
    """A change as a list shows it (the head of every listing, detail and timeline entry)."""
    return _shown(graph, review.ns, h, review.status(h.ref), review.verdict(h.ref))


def _shown(
    graph: SqlGraph, ns: str, h: Head, status: str, verdict: Verdict | None
) -> dict[str, Any]:
    r = h.ref
    return {
        "id": r.id,
        "ids": [r.id],
        "time": r.stamp[0] >> 16,
        "client": r.client,
        "machine": r.author,
        "ops": r.count,
        "subject": _subject(graph, ns, h.subject),
        "what": [words.describe(graph, op) for op in h.first],
        "more": max(0, r.count - len(h.first)),
        "status": status,
        "reviewed_by": None
        if verdict is None
        else {
            "machine": verdict.reviewer,
            "time": verdict.order[0] >> 16,
            "batch": verdict.batch,
        },
    }


def listing(graph: SqlGraph, ns: str, found: Listing) -> dict[str, Any]:
    """A listing: its entries (a memory's with the changes it gathers), the next cursor, the
    pending count and the frontier."""
    items = []
    for e in found.entries:
        entry = _shown(graph, ns, e.head, e.status, e.verdict)
        if e.about is not None:
            entry.update(
                id=f"memory:{e.about}",
                ids=[m.id for m in e.members],
                clients=sorted({m.client for m in e.members}),
                machines=sorted({m.author for m in e.members}),
                changes=len(e.members),
            )
        items.append(entry)
    return {
        "items": items,
        "next": None if found.next is None else cursor_text(found.next),
        "pending": found.pending,
        "frontier": found.frontier,
    }
