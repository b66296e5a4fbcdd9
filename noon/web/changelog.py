"""The changes held in a fold, grouped and ordered for the page, and the review state.

Part of the in-memory implementation of :class:`noon.web.data.WebData` (the read model will
answer the same questions with queries): it follows the store's change listener key by key, so
a new op costs its own bookkeeping, never a rescan.

A *change* is one batch (the ops of one author sharing ``bat``: one tool call) or one single op.
Its id is ``node:seq`` of its last op (for a batch, ``bat``), unique and stable on every
machine. Its *subject* is the memory (node id) or knowledge-graph entity its first op is about;
the page groups by it ("one memory reads as one item").

Review ops (kind ``review``) belong to the changes of the page (an approval, or a rollback
with its mark) and also feed :class:`Reviews`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from noon.core.elements import BOOT, CONTENT, EDGE, KEYWORD, KG_KINDS, REVIEW
from noon.core.fold import Fold
from noon.core.ops import Key, Op
from noon.store.store import paused_gc

WEB_CLIENT = "web"
"""The client name of every write the page makes; its changes are never queued for review."""
UPTO = "upto"


def change_id(op: Op) -> str:
    return f"{op.node}:{op.bat or op.seq}"


def subject(op: Op, fold: Fold) -> str | None:
    """The memory (node id) or ``kg:<entity>`` an op is about; None for review ops."""
    key = op.el
    kind = key[0]
    if kind in (CONTENT, BOOT):
        return key[2]
    if kind == KEYWORD:
        return key[3]
    if kind == EDGE:
        if op.val is not None:
            return str(op.val.get("child"))
        el = fold.elements.get(key)
        for v in el.versions if el is not None else ():
            if v.val is not None and v.id in (op.prev or ()):
                return str(v.val.get("child"))
        return f"@edge:{key[2]}/{key[3]}"
    if kind in KG_KINDS:
        return f"kg:{key[2]}"
    return None


class Change:
    """One change: its ops (in seq order), when it happened, and what it is about."""

    __slots__ = ("_first", "_sorted", "added", "id", "namespace", "stamp", "subjects")

    def __init__(self, cid: str, namespace: str) -> None:
        self.id = cid
        self.namespace = namespace
        self.added: list[Op] = []
        self.stamp: tuple[int, str, int] = (0, "", 0)
        """The greatest ``(hlc, node, seq)`` of its ops: changes are listed by it."""
        self.subjects: dict[str, None] = {}
        """Distinct subjects of its ops (an ordered set)."""
        self._first: tuple[int, str | None] = (1 << 62, None)
        """(seq, subject) of its first op that is about something."""
        self._sorted = True

    @property
    def ops(self) -> list[Op]:
        """Its ops in seq order (the order its author wrote them)."""
        if not self._sorted:
            self.added.sort(key=lambda o: o.seq)
            self._sorted = True
        return self.added

    @property
    def subject(self) -> str | None:
        """What its first op is about (the memory or entity the page files it under)."""
        return self._first[1]

    @property
    def author(self) -> str:
        return self.added[0].node

    @property
    def seq(self) -> int:
        return max(op.seq for op in self.added)

    @property
    def client(self) -> str:
        return self.added[0].by or "unknown"


@dataclass
class Verdict:
    verdict: str
    reviewer: str
    op: Op


class Reviews:
    """The review state of every namespace: verdicts by change, and per-author watermarks."""

    def __init__(self) -> None:
        self.verdicts: dict[tuple[str, str], dict[str, Verdict]] = {}
        """(namespace, change id) -> reviewer node -> its verdict."""
        self.upto: dict[tuple[str, str], dict[str, int]] = {}
        """(namespace, reviewer) -> author -> seq: every change up to there is reviewed."""

    def apply(self, key: Key, fold: Fold) -> None:
        _, ns, subject_, reviewer = key
        el = fold.elements.get(key)
        val = el.winner.val if el is not None else None
        if subject_ == UPTO:
            through = val.get("through") if val else None
            if isinstance(through, dict):
                self.upto[(ns, reviewer)] = dict(through)
            else:
                self.upto.pop((ns, reviewer), None)
            return
        per = self.verdicts.setdefault((ns, subject_), {})
        if val is None or el is None:
            per.pop(reviewer, None)
            if not per:
                del self.verdicts[(ns, subject_)]
        else:
            per[reviewer] = Verdict(str(val.get("verdict") or "approved"), reviewer, el.winner)

    def through(self, ns: str) -> dict[str, int]:
        """Per author, the seq up to which every change is reviewed (the maximum over every
        reviewing machine's watermark)."""
        out: dict[str, int] = {}
        for (space, _), marks in self.upto.items():
            if space == ns:
                for author, seq in marks.items():
                    if isinstance(seq, int) and seq > out.get(author, 0):
                        out[author] = seq
        return out

    def verdict(self, ns: str, change: Change) -> Verdict | None:
        per = self.verdicts.get((ns, change.id))
        if per:
            return max(per.values(), key=lambda v: v.op.order)
        return None

    def reviewed(self, ns: str, change: Change, through: dict[str, int]) -> bool:
        return (ns, change.id) in self.verdicts or change.seq <= through.get(change.author, 0)


class ChangeLog:
    """Every change held in the fold, newest first, with its subjects; and the review state."""

    def __init__(self) -> None:
        self.changes: dict[str, Change] = {}
        self.order: list[tuple[tuple[int, str, int], str]] = []
        """(stamp, change id), ascending."""
        self.by_subject: dict[tuple[str, str], set[str]] = {}
        self.reviews = Reviews()
        self._seen: dict[Key, int] = {}
        """Versions of each element already indexed (a fold's version lists only grow)."""
        self.generation = 0
        """Bumped on every update: cached answers computed at an older generation are stale."""
        self._pending: dict[str, tuple[int, int]] = {}

    def rebuild(self, fold: Fold) -> None:
        """Index the whole fold again (a new store, or a store reset)."""
        self.changes, self.by_subject, self.reviews, self._seen = {}, {}, Reviews(), {}
        with paused_gc():  # ~one object per op and no cycles: full collections would rescan
            touched = self._index(fold, fold.elements)
            for change in touched:
                change.stamp = max(op.order for op in change.added)
            self.order = sorted((c.stamp, c.id) for c in self.changes.values())
        self.generation += 1

    def update(self, fold: Fold, keys: Iterable[Key]) -> None:
        """Index what the fold gained on ``keys``."""
        for change in self._index(fold, keys):
            self._unlist(change)
            change.stamp = max(op.order for op in change.added)
            bisect.insort(self.order, (change.stamp, change.id))
        self.generation += 1

    def _index(self, fold: Fold, keys: Iterable[Key]) -> list[Change]:
        """Add the versions of ``keys`` not indexed yet; return the changes that grew."""
        grown: dict[str, Change] = {}
        changes, seen = self.changes, self._seen
        for key in keys:
            el = fold.elements.get(key)
            if el is None:
                continue
            if key[0] == REVIEW and len(key) == 4:
                self.reviews.apply(key, fold)
            start = seen.get(key, 0)
            versions = el.versions
            if start >= len(versions):
                continue
            seen[key] = len(versions)
            for op in versions[start:] if start else versions:
                cid = change_id(op)
                change = changes.get(cid)
                if change is None:
                    change = changes[cid] = Change(cid, key[1])
                change.added.append(op)
                change._sorted = False
                grown[cid] = change
                about = subject(op, fold)
                if about is None:
                    continue
                if op.seq < change._first[0]:
                    change._first = (op.seq, about)
                if about not in change.subjects:
                    change.subjects[about] = None
                    self.by_subject.setdefault((change.namespace, about), set()).add(cid)
        return list(grown.values())

    def _unlist(self, change: Change) -> None:
        i = bisect.bisect_left(self.order, (change.stamp, change.id))
        if i < len(self.order) and self.order[i] == (change.stamp, change.id):
            del self.order[i]

    def newest(self, ns: str, before: tuple[int, str, int] | None = None) -> Iterator[Change]:
        """Changes of ``ns``, newest first, older than ``before`` when given."""
        end = len(self.order)
        if before is not None:
            end = bisect.bisect_left(self.order, (before, ""))
        for i in range(end - 1, -1, -1):
            change = self.changes[self.order[i][1]]
            if change.namespace == ns:
                yield change

    def of_subject(self, ns: str, about: str) -> list[Change]:
        """Changes about ``about`` (any of their ops), newest first."""
        found = [self.changes[c] for c in self.by_subject.get((ns, about), ())]
        return sorted(found, key=lambda c: c.stamp, reverse=True)

    def pending_count(self, ns: str) -> int:
        """Changes of ``ns`` waiting for review (kept until the log changes again)."""
        cached = self._pending.get(ns)
        if cached is not None and cached[0] == self.generation:
            return cached[1]
        through = self.reviews.through(ns)
        count = sum(
            1 for c in self.changes.values() if c.namespace == ns and self.pending(c, through)
        )
        self._pending[ns] = (self.generation, count)
        return count

    def pending(self, change: Change, through: dict[str, int]) -> bool:
        """Made by an agent (not through the page) and not reviewed yet."""
        return change.client != WEB_CLIENT and not self.reviews.reviewed(
            change.namespace, change, through
        )
