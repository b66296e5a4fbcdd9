"""Undo planning: the drafts that put back what one or more changes touched.

A *change* is one batch (the ops of one author sharing ``bat``: one tool call) or one single op.
Undoing changes writes, for every element they touched, the value that element held just before
the first of them, as new ops whose ``prev`` names the element's current heads. So an undo
replicates like any write, settles a conflict on the element, and is itself a change that can be
undone. Every kind is restored the same way, which is what makes a rollback complete: a memory's
text, its placements (priority, disclosure, moves, aliases), keywords, boot membership, a deleted
memory in its place, and the knowledge graph's entities, observations and relations.

Pure: the caller supplies the ops of the changes and, per element, the versions it still holds
and the current heads (:class:`ElementState`). Nothing is guessed: when a version a change
replaced is not held any more (compaction keeps ``NOON_HISTORY`` superseded versions of texts and
placements and none of keywords or boot entries; a collected deleted element is gone whole) or
not yet (replication), the undo is refused with a message naming the element.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from noon.core.elements import BOOT, CONTENT, EDGE, ENTITY, KEYWORD, OBS, REL, REVIEW
from noon.core.fold import pick_winner
from noon.core.ops import Draft, Key, Op, OpId
from noon.errors import NoonError
from noon.graph.reader import ElementLike

Value = dict[str, Any] | None


class UndoError(NoonError, ValueError):
    """An undo that cannot restore everything it should. Nothing is written then."""


@dataclass(frozen=True)
class ElementState:
    """What the caller holds of one element now."""

    heads: tuple[Op, ...]
    """Its current heads (empty when the element is not held at all)."""
    held: Mapping[OpId, Op]
    """Its versions still held, by id (at least those the changes' ops name)."""


Lookup = Callable[[Key], ElementState]


def element_lookup(element: Callable[[Key], ElementLike | None]) -> Lookup:
    """Element states read through ``element``: a :class:`~noon.graph.reader.GraphReader`'s
    (the read model's, or an in-memory graph's), or an in-memory fold's ``elements.get``."""

    def state(key: Key) -> ElementState:
        el = element(key)
        if el is None:
            return ElementState((), {})
        return ElementState(tuple(el.heads.values()), {v.id: v for v in el.versions})

    return state


@dataclass(frozen=True)
class Step:
    """One element an undo restores (or finds already restored)."""

    key: Key
    before: Value
    """The value restored: what the element read before the changes (None: absent or deleted)."""
    after: Value
    """What the changes left on it (their last op's value)."""
    current: Value
    """What readers see now (the winner's value; None when deleted or absent)."""
    later: tuple[Op, ...]
    """Current heads written by none of the undone changes: edits made since, which the undo
    replaces too. Empty when nothing touched the element after the changes."""
    draft: Draft | None
    """The op to write; None when the element already reads as before (or is unknown)."""
    known: bool = True
    """False when a version the changes replaced is not held (see :attr:`Undo.problems`):
    ``before`` is then unknown and nothing is written for this element."""


@dataclass(frozen=True)
class Undo:
    steps: tuple[Step, ...]
    problems: tuple[str, ...] = ()
    """Why some elements cannot be restored exactly; :func:`undo` refuses when there is any."""

    @property
    def drafts(self) -> list[Draft]:
        return [s.draft for s in self.steps if s.draft is not None]

    @property
    def overwrites_later_edits(self) -> bool:
        return any(s.later and s.draft is not None for s in self.steps)


def _winner_value(heads: Iterable[Op]) -> Value:
    heads = list(heads)
    return pick_winner(heads).val if heads else None


def _reads_as(state: ElementState, value: Value) -> bool:
    """Whether the element reads exactly ``value`` now, with no conflict to settle."""
    if value is None:
        return all(h.val is None for h in state.heads)
    return len(state.heads) == 1 and state.heads[0].val == value


def _replaced(ops: Sequence[Op], ids: set[OpId]) -> set[OpId]:
    """The versions the earliest of ``ops`` (those naming none of the undone ops) replaced."""
    replaced: set[OpId] = set()
    for op in ops:
        names = set(op.prev or ())
        if not names & ids:  # a later write of the same changes replaced an undone op
            replaced |= names
    return replaced


def _restore(
    key: Key, ops: Sequence[Op], ids: set[OpId], state: ElementState
) -> tuple[Step, str | None]:
    replaced = _replaced(ops, ids)
    after = max(ops, key=lambda o: o.order).val
    missing = sorted(r for r in replaced if r not in state.held)
    if missing:
        shown = ", ".join(f"{n}:{s}" for n, s in missing)
        problem = (
            f"{label(key)}: the version(s) this change replaced ({shown}) are no longer held here "
            "(compaction keeps only the newest superseded versions, and a deleted element is "
            "removed whole once every machine saw it) or have not arrived yet, so it cannot be "
            "restored exactly."
        )
        later = tuple(h for h in state.heads if h.id not in ids)
        current = _winner_value(state.heads)
        return Step(key, None, after, current, later, None, known=False), problem
    versions = [state.held[r] for r in replaced]
    # Among the replaced versions, only those no other replaced version supersedes were heads.
    named = {p for v in versions for p in (v.prev or ())}
    before = _winner_value(v for v in versions if v.id not in named)
    return _step(key, before, after, ids, state), None


def _step(key: Key, before: Value, after: Value, ids: set[OpId], state: ElementState) -> Step:
    later = tuple(sorted((h for h in state.heads if h.id not in ids), key=lambda o: o.order))
    draft = None
    if not _reads_as(state, before):
        prev = tuple(sorted(h.id for h in state.heads)) or None
        draft = Draft(key, dict(before) if before is not None else None, prev)
    return Step(key, before, after, _winner_value(state.heads), later, draft)


def preview(changes: Sequence[Sequence[Op]], lookup: Lookup) -> Undo:
    """What undoing ``changes`` would do: for every element their ops touched, its value before
    the first of them, after them, and now. Never raises: elements that cannot be restored are
    listed in :attr:`Undo.problems` (and get no draft)."""
    by_key: dict[Key, list[Op]] = {}
    for change in changes:
        for op in change:
            by_key.setdefault(op.el, []).append(op)
    ids = {op.id for ops in by_key.values() for op in ops}
    steps, problems = [], []
    for key in sorted(by_key):
        step, problem = _restore(key, by_key[key], ids, lookup(key))
        steps.append(step)
        if problem:
            problems.append(problem)
    return Undo(tuple(steps), tuple(problems))


def undo(changes: Sequence[Sequence[Op]], lookup: Lookup) -> Undo:
    """Restore every element the ops of ``changes`` touched to its value before the first of
    them. Raises :class:`UndoError` (naming every element that cannot be restored) instead of
    restoring only part of it."""
    plan = preview(changes, lookup)
    if plan.problems:
        raise UndoError(" ".join(plan.problems))
    return plan


def to_version(version: Op, later: Sequence[Sequence[Op]], lookup: Lookup) -> Undo:
    """Roll one element back to ``version``: its value as written then, plus everything the
    changes that came after it (``later``: the batches of its newer versions) touched beside it,
    restored as they were before those changes (a rollback of a memory's text also puts back the
    priority, placement, keywords and boot membership its later edits changed)."""
    if version.val is None:
        raise UndoError(
            f"{label(version.el)}: version {version.node}:{version.seq} is a deletion; pick a "
            "version with a value."
        )
    others = [[op for op in change if op.el != version.el] for change in later]
    ids = {op.id for change in later for op in change}
    base = undo(others, lookup) if any(others) else Undo(())
    mine = [op for change in later for op in change if op.el == version.el]
    after = max(mine, key=lambda o: o.order).val if mine else version.val
    own = _step(version.el, version.val, after, ids, lookup(version.el))
    return Undo((own, *base.steps))


def label(key: Key, name: Callable[[str], str] = str) -> str:
    """The element in words; ``name`` turns a node id (or a domain root) into what to show."""
    kind = key[0]
    if kind == CONTENT:
        return f"the text of {name(key[2])}"
    if kind == EDGE:
        return f"the placement '{key[3]}' under {name(key[2])}"
    if kind == KEYWORD:
        return f"keyword '{key[2]}' of {name(key[3])}"
    if kind == BOOT:
        return f"boot membership of {name(key[2])}"
    if kind == ENTITY:
        return f"entity kg://{key[2]}"
    if kind == OBS:
        return f"an observation of kg://{key[2]}"
    if kind == REL:
        return f"relation kg://{key[2]} --{key[4]}--> kg://{key[3]}"
    if kind == REVIEW:
        return f"the review of change {key[2]} on {key[3]}"
    return "/".join(key)


def describe(step: Step, name: Callable[[str], str] = str) -> str:
    """What writing ``step`` does, in one sentence."""
    what = label(step.key, name)
    if step.draft is None:
        return f"{what}: already as before (nothing to write)"
    kind, before, current = step.key[0], step.before, step.current
    if before is None:
        verb = {
            CONTENT: "deleted (the change created it)",
            EDGE: "removed",
            KEYWORD: "unbound",
            BOOT: "removed from the boot list",
        }.get(kind, "removed")
        text = f"{what}: {verb}"
    elif current is None:
        text = f"{what}: restored (the change removed it)"
        if kind == EDGE:
            text += f" -> {name(before['child'])}, priority {before['priority']}"
    elif kind == EDGE:
        text = (
            f"{what}: back to {name(before['child'])}, priority {before['priority']}, "
            f"disclosure {before['disclosure']!r}"
        )
    else:
        text = f"{what}: restored to its earlier value"
    if step.later:
        who = ", ".join(sorted({f"{h.by or 'unknown'} on {h.node}" for h in step.later}))
        text += f" (also replaces later edits by {who})"
    return text
