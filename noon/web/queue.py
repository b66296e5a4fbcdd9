"""The review queue, read from the op log of the read model (:mod:`noon.store.readmodel.changes`):
changes listed newest first, one item per tool call or per memory, each with its review status
(used only by :mod:`noon.web.data`, whose docstrings describe the shapes; approving and undoing
are :mod:`noon.app.changes`).

Nothing is indexed in memory: a listing walks the namespace's ops newest first and reads the
changes it shows; the pending count is one skip-scan per author from its watermark.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from noon.app import words
from noon.app.actor import WEB
from noon.app.changes import Review
from noon.app.history import SUMMARY_OPS
from noon.core.elements import edge_key
from noon.core.ops import Key, valid_node_id
from noon.errors import Invalid
from noon.graph.memory_view import show_uri
from noon.store.queries import Queries
from noon.store.readmodel.changes import Head, Pending, Ref, Stamp
from noon.store.readmodel.graph import SqlGraph
from noon.store.readmodel.state import FoldView


class CursorError(Invalid):
    pass


def cursor(text: str | None) -> Stamp | None:
    """A listing's ``next`` read back: ``hlc:node:seq``."""
    if not text:
        return None
    hlc, _, rest = text.partition(":")
    node, _, seq = rest.rpartition(":")
    digits = f"{hlc}{seq}".isascii() and hlc.isdigit() and seq.isdigit()
    if not digits or not valid_node_id(node) or max(int(hlc), int(seq)) >= 1 << 63:
        raise CursorError(f"Bad cursor {text[:80]!r}: pass back the 'next' of a listing.")
    return int(hlc), node, int(seq)


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
    r = h.ref
    verdict = review.verdict(r)
    return {
        "id": r.id,
        "ids": [r.id],
        "time": r.stamp[0] >> 16,
        "client": r.client,
        "machine": r.author,
        "ops": r.count,
        "subject": _subject(graph, review.ns, h.subject),
        "what": [words.describe(graph, op) for op in h.first],
        "more": max(0, r.count - len(h.first)),
        "status": review.status(r),
        "reviewed_by": None
        if verdict is None
        else {
            "machine": verdict.reviewer,
            "time": verdict.order[0] >> 16,
            "batch": verdict.batch,
        },
    }


def head(queries: Queries, r: Ref) -> Head:
    return queries.head(r, SUMMARY_OPS)


def subject_keys(queries: Queries, ns: str, about: str) -> list[Key]:
    """The elements every op about ``about`` (a memory, ``kg:<entity>`` or ``@edge:...``) is on."""
    if about.startswith("kg:"):
        return queries.entity_keys(ns, about[3:])
    if about.startswith("@edge:"):
        parent, _, name = about[6:].rpartition("/")
        return [edge_key(ns, parent, name)]
    return queries.memory_keys(ns, about)


def _walk(
    queries: Queries, ns: str, view: str, before: Stamp | None, pending: Pending
) -> Iterator[Ref]:
    if view == "pending":
        if pending.since is None:
            return iter(())
        return queries.newest(ns, before, reviewed=False, skip_via=WEB, since=pending.since)
    if view == "reviewed":
        return queries.newest(ns, before, reviewed=True, skip_via=WEB)
    return queries.newest(ns, before)


def listing(
    graph: SqlGraph,
    fold: FoldView,
    ns: str,
    view: str,
    group: str,
    before: Stamp | None,
    limit: int,
    pending: Pending,
) -> dict[str, Any]:
    queries = Queries(graph)
    review = Review(graph, ns)
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    last = None
    for r in _walk(queries, ns, view, before, pending):
        if len(items) >= limit:
            break
        last = r.stamp
        h = head(queries, r)
        if group == "change":
            items.append(item(graph, review, h))
            continue
        about = h.subject or r.id
        if about in seen:
            continue
        seen.add(about)
        members = [r]
        if h.subject is not None:
            found = queries.about(subject_keys(queries, ns, about), about)
            members = [m for m in found if review.wanted(m, view)] or [r]
        entry = item(graph, review, h if members[0] == r else head(queries, members[0]))
        entry.update(
            id=f"memory:{about}",
            ids=[m.id for m in members],
            clients=sorted({m.client for m in members}),
            machines=sorted({m.author for m in members}),
            changes=len(members),
        )
        items.append(entry)
    more = last is not None and len(items) >= limit
    return {
        "items": items,
        "next": f"{last[0]}:{last[1]}:{last[2]}" if more and last else None,
        "pending": pending.count,
        "frontier": fold.frontier(),
    }
