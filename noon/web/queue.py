"""The review queue, read from the op log of the read model (:mod:`noon.store.readmodel.changes`):
changes listed newest first, one item per tool call or per memory, each with its review status;
and the review ops that approve them (used only by :mod:`noon.web.data`, whose docstrings
describe the shapes).

Nothing is indexed in memory: a listing walks the namespace's ops newest first and reads the
changes it shows; the pending count is one skip-scan per author from its watermark.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from noon.core.elements import edge_key, review_key
from noon.core.ops import Draft, Key, valid_node_id
from noon.errors import Invalid, NotFound
from noon.graph.memory_view import show_uri
from noon.ops_cli import journal as words
from noon.store.readmodel import changes, journal
from noon.store.readmodel.changes import UPTO, Head, Pending, Ref, Stamp, Verdict
from noon.store.readmodel.graph import SqlGraph
from noon.store.readmodel.state import FoldView

WEB_CLIENT = "web"
"""The client name and the edge (``via``) of every write the page makes: changes written through
this edge are never queued for review (a client's name, whatever it is, never counts)."""
SUMMARY_OPS = 6
"""Ops described one by one in a queue item; the rest are counted."""
MAX_IDS = 1000
"""Change ids one approve or rollback may name."""


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


def named(conn: sqlite3.Connection, ns: str, ids: list[str]) -> list[Ref]:
    """The changes ``ids`` name, each once; refused when one is not held here."""
    if not ids:
        raise Invalid("Name at least one change id.")
    if len(ids) > MAX_IDS:
        raise Invalid(f"At most {MAX_IDS} changes at once.")
    out = []
    for cid in dict.fromkeys(ids):
        found = changes.ref(conn, cid)
        if found is None or found.namespace != ns:
            raise NotFound(
                f"No change {cid[:80]!r} in namespace {ns!r} (compacted away after later "
                "edits, or not replicated here yet)."
            )
        out.append(found)
    return out


class Review:
    """The review state of one namespace within one read: watermarks and the verdicts of the
    changes asked about."""

    def __init__(self, conn: sqlite3.Connection, ns: str) -> None:
        self.conn = conn
        self.ns = ns
        self.marks = changes.through(conn, ns)
        self._verdicts: dict[str, list[Verdict]] = {}
        self._asked: set[str] = set()

    def verdict(self, r: Ref) -> Verdict | None:
        """The latest decision on ``r`` that counts (:func:`changes.counts`), of any machine."""
        if r.id not in self._asked:
            self._asked.add(r.id)
            found = changes.verdicts(self.conn, self.ns, [r.id]).get(r.id, [])
            self._verdicts[r.id] = [v for v in found if changes.counts(self.conn, r, v)]
        counted = self._verdicts[r.id]
        return max(counted, key=lambda v: v.order) if counted else None

    def status(self, r: Ref) -> str:
        """``web`` (written through the page), a verdict (``approved``, ``rolled_back``),
        ``approved`` (under a watermark) or ``pending``."""
        if r.via == WEB_CLIENT:
            return "web"
        verdict = self.verdict(r)
        if verdict is not None:
            return str(verdict.value["verdict"])
        return "approved" if r.seq <= self.marks.get(r.author, 0) else "pending"

    def wanted(self, r: Ref, view: str) -> bool:
        status = self.status(r)
        if view == "pending":
            return status == "pending"
        if view == "reviewed":
            return status not in ("pending", "web")
        return True


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


def head(conn: sqlite3.Connection, r: Ref) -> Head:
    return changes.head(conn, r, SUMMARY_OPS)


def subject_keys(conn: sqlite3.Connection, ns: str, about: str) -> list[Key]:
    """The elements every op about ``about`` (a memory, ``kg:<entity>`` or ``@edge:...``) is on."""
    if about.startswith("kg:"):
        return journal.entity_keys(conn, ns, about[3:])
    if about.startswith("@edge:"):
        parent, _, name = about[6:].rpartition("/")
        return [edge_key(ns, parent, name)]
    return journal.memory_keys(conn, ns, about)


def _walk(
    conn: sqlite3.Connection, ns: str, view: str, before: Stamp | None, pending: Pending
) -> Iterator[Ref]:
    if view == "pending":
        if pending.since is None:
            return iter(())
        return changes.newest(
            conn, ns, before, reviewed=False, skip_via=WEB_CLIENT, since=pending.since
        )
    if view == "reviewed":
        return changes.newest(conn, ns, before, reviewed=True, skip_via=WEB_CLIENT)
    return changes.newest(conn, ns, before)


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
    conn = graph.conn
    review = Review(conn, ns)
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    last = None
    for r in _walk(conn, ns, view, before, pending):
        if len(items) >= limit:
            break
        last = r.stamp
        h = head(conn, r)
        if group == "change":
            items.append(item(graph, review, h))
            continue
        about = h.subject or r.id
        if about in seen:
            continue
        seen.add(about)
        members = [r]
        if h.subject is not None:
            found = changes.about(conn, subject_keys(conn, ns, about), about)
            members = [m for m in found if review.wanted(m, view)] or [r]
        entry = item(graph, review, h if members[0] == r else head(conn, members[0]))
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


def approval(
    graph: SqlGraph,
    fold: FoldView,
    ns: str,
    refs: Iterable[Ref],
    through: dict[str, int] | None,
    me: str,
) -> list[Draft]:
    """Review ops approving ``refs`` (those without a verdict yet) and, with ``through``, every
    change of those authors up to those seqs (merged into this machine's watermark)."""
    review = Review(graph.conn, ns)
    drafts = [
        Draft(review_key(ns, r.id, me), {"verdict": "approved"})
        for r in refs
        if review.verdict(r) is None
    ]
    if through:
        for author, seq in through.items():
            if not valid_node_id(author):
                raise Invalid(f"Bad frontier entry {author[:80]!r}: not a node id.")
            if seq > fold.max_seq(author):
                raise Invalid(
                    f"Cannot approve changes of {author} up to {seq}: this machine holds them "
                    f"only up to {fold.max_seq(author)}."
                )
        el = graph.element(review_key(ns, UPTO, me))
        held = (el.winner.val or {}).get("through") if el is not None else None
        mine = dict(held) if isinstance(held, dict) else {}
        if any(mine.get(a, 0) < s for a, s in through.items()):
            merged = {**mine, **{a: max(s, mine.get(a, 0)) for a, s in through.items()}}
            drafts.append(Draft(review_key(ns, UPTO, me), {"through": merged}))
    return drafts


def withdrawal(graph: SqlGraph, ns: str, r: Ref) -> list[Draft]:
    """Tombstones withdrawing every machine's decision on ``r`` (it goes back to the queue).
    Each names the decision it withdraws in ``prev`` beside the element's heads: only that
    withdraws it (:mod:`noon.core.review`), whatever else another machine wrote there."""
    found = changes.verdicts(graph.conn, ns, [r.id]).get(r.id, [])
    if not found:
        raise Invalid(f"Change {r.id} has no verdict of its own to withdraw.")
    drafts = []
    for v in found:
        key = review_key(ns, r.id, v.reviewer)
        el = graph.element(key)
        heads = set(el.heads) if el is not None else set()
        drafts.append(Draft(key, None, tuple(sorted(heads | {(v.order[1], v.order[2])}))))
    return drafts
