"""The review queue as a use case: a namespace's changes newest first, a page at a time from a
cursor, one entry per change or per memory (gathering that memory's changes in the view), with
the pending count and the frontier "approve all" approves. Deciding on them (approve, withdraw,
undo) is :mod:`noon.app.changes`; the page renders the entries (:mod:`noon.web.queue`).

Read from the op log of the read model (:mod:`noon.store.readmodel.changes`); nothing is indexed
in memory: a listing walks the namespace's ops newest first and reads the changes it shows; the
pending count is one skip-scan per author from its watermark."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from noon.app.actor import WEB
from noon.app.changes import Review
from noon.app.history import SUMMARY_OPS
from noon.core.elements import edge_key
from noon.core.ops import Key, valid_node_id
from noon.errors import Invalid
from noon.store.queries import Queries
from noon.store.readmodel.changes import Head, Pending, Ref, Stamp, Verdict
from noon.store.readmodel.graph import SqlGraph
from noon.store.readmodel.state import FoldView

VIEWS = ("pending", "reviewed", "all")
"""``pending``: made by agents, not reviewed yet; ``reviewed``: approved or rolled back;
``all``: the page's own changes too."""
GROUPS = ("change", "memory")
"""One entry per tool call, or one per memory."""


def cursor(text: str | None) -> Stamp | None:
    """A listing's ``next`` read back: ``hlc:node:seq``."""
    if not text:
        return None
    hlc, _, rest = text.partition(":")
    node, _, seq = rest.rpartition(":")
    digits = f"{hlc}{seq}".isascii() and hlc.isdigit() and seq.isdigit()
    if not digits or not valid_node_id(node) or max(int(hlc), int(seq)) >= 1 << 63:
        raise Invalid(f"Bad cursor {text[:80]!r}: pass back the 'next' of a listing.")
    return int(hlc), node, int(seq)


def cursor_text(stamp: Stamp) -> str:
    """What :func:`cursor` reads back."""
    return f"{stamp[0]}:{stamp[1]}:{stamp[2]}"


def head(queries: Queries, r: Ref) -> Head:
    """A change as every listing shows it: its ref and its first ops."""
    return queries.head(r, SUMMARY_OPS)


def subject_keys(queries: Queries, ns: str, about: str) -> list[Key]:
    """The elements every op about ``about`` (a memory, ``kg:<entity>`` or ``@edge:...``) is on."""
    if about.startswith("kg:"):
        return queries.entity_keys(ns, about[3:])
    if about.startswith("@edge:"):
        parent, _, name = about[6:].rpartition("/")
        return [edge_key(ns, parent, name)]
    return queries.memory_keys(ns, about)


@dataclass(frozen=True)
class Entry:
    """One entry of a listing."""

    head: Head
    """The change shown: the newest of those the entry stands for."""
    about: str | None
    """Grouped by memory: what the entry gathers (a memory's node, ``kg:<entity>``,
    ``@edge:<parent>/<name>``, or the change's own id when it is about none); None per change."""
    members: tuple[Ref, ...]
    """The changes it stands for, newest first (the change itself, per change)."""
    status: str
    """The shown change's review status (:meth:`noon.app.changes.Review.status`)."""
    verdict: Verdict | None
    """The decision on it that counts, if any."""


@dataclass(frozen=True)
class Listing:
    entries: tuple[Entry, ...]
    next: Stamp | None
    """Where the next page starts (pass :func:`cursor_text` of it back), None at the end."""
    pending: int
    """Changes waiting for review in the namespace."""
    frontier: dict[str, int]
    """Author -> the highest seq held: what "approve all" approves."""


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


def check(view: str, group: str) -> None:
    """Refuses a view or a grouping a listing does not know."""
    if view not in VIEWS or group not in GROUPS:
        raise Invalid("view is pending, reviewed or all; group is change or memory.")


def listing(
    graph: SqlGraph,
    fold: FoldView,
    ns: str,
    view: str,
    group: str,
    before: Stamp | None,
    limit: int,
    pending: Pending,
) -> Listing:
    """At most ``limit`` entries of ``view`` (:data:`VIEWS`) grouped by ``group``
    (:data:`GROUPS`), older than ``before``; ``pending`` is the namespace's
    (:meth:`noon.store.queries.Queries.pending`)."""
    check(view, group)
    queries = Queries(graph)
    review = Review(graph, ns)
    entries: list[Entry] = []
    seen: set[str] = set()
    last = None
    for r in _walk(queries, ns, view, before, pending):
        if len(entries) >= limit:
            break
        last = r.stamp
        h = head(queries, r)
        if group == "change":
            entries.append(Entry(h, None, (r,), review.status(r), review.verdict(r)))
            continue
        about = h.subject or r.id
        if about in seen:
            continue
        seen.add(about)
        members = [r]
        if h.subject is not None:
            found = queries.about(subject_keys(queries, ns, about), about)
            members = [m for m in found if review.wanted(m, view)] or [r]
        shown = h if members[0] == r else head(queries, members[0])
        entries.append(
            Entry(shown, about, tuple(members), review.status(shown.ref), review.verdict(shown.ref))
        )
    more = last is not None and len(entries) >= limit
    return Listing(
        entries=tuple(entries),
        next=last if more else None,
        pending=pending.count,
        frontier=fold.frontier(),
    )
