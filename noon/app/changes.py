"""Changes (one tool call or one lone op, named ``node:seq`` by their last op): undoing them, and
the review decisions on them. Planned on the op log of the read model
(:mod:`noon.store.readmodel.changes`) and :mod:`noon.graph.undo`, written as one batch.

An undo puts every element the changes touched back to its value before the first of them
(texts, placements and moves, aliases, keywords, boot membership, deleted memories,
knowledge-graph data). Written by a reviewer (the page), it also marks the changes rolled back;
written by an agent (``undo_change``) it is one more change of that agent, waiting for review
like the others, and decides nothing about the changes it undid.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from noon.app.actor import WEB, Actor
from noon.core.elements import review_key
from noon.core.ops import Draft, Key, valid_node_id
from noon.errors import Conflict, Invalid, Limit, NotFound
from noon.graph import undo
from noon.store.access import GraphService
from noon.store.queries import Queries
from noon.store.readmodel.changes import UPTO, Change, Ref, Verdict
from noon.store.readmodel.graph import SqlGraph
from noon.store.readmodel.rows import key_text
from noon.store.readmodel.state import FoldView
from noon.store.rollback import lookup

MAX_IDS = 1000
"""Change ids one approve or undo may name."""
MAX_UNDO_OPS = 10_000
"""Ops one undo (or its preview) may take; above, memories are rolled back one by one."""


class Review:
    """The review state of one namespace within one read: watermarks and the verdicts of the
    changes asked about."""

    def __init__(self, graph: SqlGraph, ns: str) -> None:
        self.queries = Queries(graph)
        self.ns = ns
        self.marks = self.queries.through(ns)
        self._verdicts: dict[str, list[Verdict]] = {}
        self._asked: set[str] = set()

    def verdict(self, r: Ref) -> Verdict | None:
        """The latest decision on ``r`` that counts
        (:func:`noon.store.readmodel.changes.counts`), of any machine."""
        if r.id not in self._asked:
            self._asked.add(r.id)
            found = self.queries.verdicts(self.ns, [r.id]).get(r.id, [])
            self._verdicts[r.id] = [v for v in found if self.queries.counts(r, v)]
        counted = self._verdicts[r.id]
        return max(counted, key=lambda v: v.order) if counted else None

    def status(self, r: Ref) -> str:
        """``web`` (written through the page), a verdict (``approved``, ``rolled_back``),
        ``approved`` (under a watermark) or ``pending``."""
        if r.via == WEB:
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


def named(graph: SqlGraph, ns: str, ids: Sequence[str]) -> list[Ref]:
    """The changes ``ids`` name, each once; refused when one is not held here."""
    if not ids:
        raise Invalid("Name at least one change id.")
    if len(ids) > MAX_IDS:
        raise Limit(f"At most {MAX_IDS} changes at once.")
    out: list[Ref] = []
    queries = Queries(graph)
    for cid in dict.fromkeys(ids):
        found = queries.ref(cid)
        if found is None or found.namespace != ns:
            raise NotFound(
                f"No change {cid[:80]!r} in namespace {ns!r} (compacted away after later "
                "edits, or not replicated here yet)."
            )
        out.append(found)
    return out


def load(graph: SqlGraph, refs: Sequence[Ref]) -> list[Change]:
    return [Change(r, Queries(graph).load_ops(r)) for r in refs]


def too_large(refs: Sequence[Ref]) -> str | None:
    """Why an undo of ``refs`` is neither previewed nor written (None: it is)."""
    ops = sum(r.count for r in refs)
    if ops <= MAX_UNDO_OPS:
        return None
    return (
        f"These changes hold {ops:,} ops; an undo (the page's rollback, undo_change) takes at "
        f"most {MAX_UNDO_OPS:,} at once. Roll back the memories that matter one by one from "
        "their history (or with rollback_memory)."
    )


def basis(keys: Iterable[Key], state: undo.Lookup) -> str:
    """A fingerprint of the current heads of every element an undo touches: an undo the caller
    previewed is refused when it differs at write time."""
    h = hashlib.blake2b(digest_size=8)
    for key in sorted(set(keys)):
        h.update(repr((key, sorted(op.id for op in state(key).heads))).encode())
    return h.hexdigest()


@dataclass(frozen=True)
class Undone:
    restored: int
    """Elements put back (the undo's own ops, review marks aside)."""
    batch: str | None
    """The undo's own change id (undo it to undo the undo); None when nothing was written."""


@dataclass(frozen=True)
class UndoPlan:
    """What undoing some changes would do: the one plan the page previews and
    :func:`undo_changes` (the page's rollback, ``undo_change``) writes."""

    undo: undo.Undo | None
    """Every element restored, and the problems that refuse the undo; None when it is too
    large to plan (:attr:`refused`)."""
    refused: str | None = None
    """Why it is neither previewed nor written (:func:`too_large`)."""
    basis: str | None = None
    """The fingerprint of what it touched (:func:`basis`), for an undo of what was previewed."""


def plan(
    g: SqlGraph, refs: Sequence[Ref], state: undo.Lookup, whole: undo.Undo | None = None
) -> UndoPlan:
    """The undo of ``refs`` on ``state``; ``whole``: its preview, when the caller has read every
    op of theirs already."""
    refused = too_large(refs)
    if refused is not None:
        return UndoPlan(None, refused)
    if whole is None:
        whole = undo.preview([c.ops for c in load(g, refs)], state)
    return UndoPlan(whole, None, basis((s.key for s in whole.steps), state))


@dataclass(frozen=True)
class Preview:
    """Changes as the page shows them before an undo: some of the elements they touched (in the
    order of their keys' text), and the undo of them all."""

    page: undo.Undo
    total_steps: int
    """Elements they touched in all."""
    plan: UndoPlan


def preview(g: SqlGraph, refs: Sequence[Ref], offset: int, limit: int) -> Preview:
    """The elements ``offset`` to ``offset + limit`` ``refs`` touched, each with what undoing
    them would do, and the whole undo's :func:`plan`. The page reads the ops of the elements
    shown (and the keys of the others); the plan every op, unless it is too large to plan."""
    queries = Queries(g)
    state = lookup(g)
    every = sorted(set().union(*(queries.keys_of(r) for r in refs)))  # by key text
    shown = every[offset : offset + limit]
    page = undo.preview([queries.ops_on(r, shown) for r in refs], state)
    page = replace(page, steps=tuple(sorted(page.steps, key=lambda s: key_text(s.key))))
    whole = page if len(shown) == len(every) else None
    return Preview(page, len(every), plan(g, refs, state, whole))


def plan_undo(
    g: SqlGraph, ns: str, refs: Sequence[Ref], seen: str | None, me: str, review: bool
) -> tuple[list[Draft], int]:
    """The drafts undoing ``refs`` (with, for a reviewer, their rolled-back marks by machine
    ``me``), and how many elements they restore; refusals as :func:`undo_changes` says."""
    planned = plan(g, refs, lookup(g))
    if planned.undo is None:
        raise Limit(str(planned.refused))
    if planned.undo.problems:
        raise undo.UndoError(" ".join(planned.undo.problems))
    if seen is not None and seen != planned.basis:
        raise Conflict(
            "What these changes touched was edited since you looked: review the new state "
            "and roll back again.",
            {"basis": planned.basis},
        )
    marks = [Draft(review_key(ns, r.id, me), {"verdict": "rolled_back"}) for r in refs]
    drafts = planned.undo.drafts
    return [*drafts, *(marks if review else [])], len(drafts)


def undo_changes(
    svc: GraphService, who: Actor, ids: Sequence[str], seen: str | None, review: bool
) -> Undone:
    """Undo the changes ``ids`` as one batch. ``seen``: the basis of a preview (refused,
    :class:`~noon.errors.Conflict`, when what they touched changed since); ``review``: the
    caller is a reviewer, and the changes are marked rolled back by this machine. Refused when
    a version to restore is not held any more (:class:`~noon.graph.undo.UndoError`) and above
    :data:`MAX_UNDO_OPS` ops (:class:`~noon.errors.Limit`)."""
    ns, me = who.namespace, svc.store.node

    def fn(g: SqlGraph) -> tuple[list[Draft], int]:
        return plan_undo(g, ns, named(g, ns, ids), seen, me, review)

    ops, restored = svc.write(fn, who.client, who.via)
    return Undone(restored, f"{ops[-1].node}:{ops[-1].seq}" if ops else None)


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
    review = Review(graph, ns)
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
    found = Queries(graph).verdicts(ns, [r.id]).get(r.id, [])
    if not found:
        raise Invalid(f"Change {r.id} has no verdict of its own to withdraw.")
    drafts = []
    for v in found:
        key = review_key(ns, r.id, v.reviewer)
        el = graph.element(key)
        heads = set(el.heads) if el is not None else set()
        drafts.append(Draft(key, None, tuple(sorted(heads | {(v.order[1], v.order[2])}))))
    return drafts


def approve(
    svc: GraphService, who: Actor, ids: Sequence[str], through: dict[str, int] | None
) -> int:
    """Mark changes reviewed: each of ``ids``, and with ``through`` (author -> seq, a listing's
    frontier) every change of those authors up to there. Written as review ops of this machine
    that replicate. How many ops were written."""
    if not ids and not through:
        raise Invalid("Name the changes to approve (ids) or a frontier (through).")
    ns = who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], int]:
        refs = named(g, ns, ids) if ids else []
        drafts = approval(g, svc.store.fold, ns, refs, through, svc.store.node)
        return drafts, len(drafts)

    return svc.write(fn, who.client, who.via)[1]


def unreview(svc: GraphService, who: Actor, change_id: str) -> int:
    """Put a change back in the queue (a tombstone over every machine's verdict on it). How many
    ops were written."""
    ns = who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], int]:
        (found,) = named(g, ns, [change_id])
        drafts = withdrawal(g, ns, found)
        return drafts, len(drafts)

    return svc.write(fn, who.client, who.via)[1]
