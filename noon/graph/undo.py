"""Undo planning: the drafts that put back what one or more changes touched.

A *change* is one batch (the ops of one author sharing ``bat``: one tool call) or one single op.
Undoing changes takes out of every element they touched only what they wrote: the element then
reads as its versions *not* written by them nor built on them say (the winner of those that no
other of them replaced), as a new op whose ``prev`` names the element's current heads. Before
any concurrent writes that is the value just before the first change. A version another
machine wrote concurrently (on the same element, not knowing the change) is not the change's:
rolling back one machine's creation of ``core://notes`` leaves the other machine's, and an op
with no predecessor on an existing memory, rolled back, leaves the memory. Edits built on the
change (made after it, knowing it) are replaced, and the preview says so. So an undo
replicates like any write, settles a conflict on the element, and is itself a change that can be
undone. An undo that takes a memory's text out (the changes created it) also removes what names
that memory and was made since, knowing it (placements from moves and aliases, keywords, the boot
entry), when the caller's :class:`Lookup` can find them: else the memory would read as deleted
yet placed. Every kind is restored the same way, which is what makes a rollback complete: a memory's
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
from dataclasses import dataclass, replace
from typing import Any

from noon.core.elements import (
    BOOT,
    CONTENT,
    EDGE,
    ENTITY,
    KEYWORD,
    OBS,
    REL,
    REVIEW,
    boot_key,
    content_key,
    edge_key,
    keyword_key,
)
from noon.core.fold import pick_winner
from noon.core.ops import Draft, Key, Op, OpId
from noon.errors import Invalid
from noon.graph.reader import ElementLike, GraphReader

Value = dict[str, Any] | None


class UndoError(Invalid):
    """An undo that cannot restore everything it should. Nothing is written then."""


@dataclass(frozen=True)
class ElementState:
    """What the caller holds of one element now."""

    heads: tuple[Op, ...]
    """Its current heads (empty when the element is not held at all)."""
    held: Mapping[OpId, Op]
    """Its versions still held, by id (at least those the changes' ops name)."""


Naming = Callable[[str, str], Sequence[Key]]
"""The elements that name memory ``node`` of namespace ``ns`` beside its text: its live
placements, its keywords and its boot entry."""


@dataclass(frozen=True)
class Lookup:
    """What an undo reads: element states, and (when known) what names a memory."""

    state: Callable[[Key], ElementState]
    naming: Naming | None = None
    """None: an undo leaves what names a memory it takes out (a bare fold has no such index)."""

    def __call__(self, key: Key) -> ElementState:
        return self.state(key)


def element_lookup(
    element: Callable[[Key], ElementLike | None], graph: GraphReader | None = None
) -> Lookup:
    """Element states read through ``element``: a :class:`~noon.graph.reader.GraphReader`'s
    (the read model's, or an in-memory graph's), or an in-memory fold's ``elements.get``; with
    ``graph``, what names a memory too (:func:`naming_in`)."""

    def state(key: Key) -> ElementState:
        el = element(key)
        if el is None:
            return ElementState((), {})
        return ElementState(tuple(el.heads.values()), {v.id: v for v in el.versions})

    return Lookup(state, naming_in(graph) if graph is not None else None)


def naming_in(graph: GraphReader) -> Naming:
    def naming(ns: str, node: str) -> list[Key]:
        keys = [edge_key(ns, p.parent, p.key_name) for p in graph.placements(ns, node)]
        keys += [keyword_key(ns, kw, node) for kw in graph.keywords_of(ns, node)]
        return [*keys, boot_key(ns, node)]

    return naming


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
    """Current heads built on the undone changes (their ``prev`` leads to one of them): edits
    made since, knowing the changes, which the undo replaces too."""
    draft: Draft | None
    """The op to write; None when the element already reads as before (or is unknown)."""
    known: bool = True
    """False when a version the changes replaced is not held (see :attr:`Undo.problems`):
    ``before`` is then unknown and nothing is written for this element."""
    concurrent: tuple[Op, ...] = ()
    """Current heads neither written by the undone changes nor built on them: versions other
    writers made without knowing the changes. An undo leaves what they say (``before`` is
    read from them); a rollback to a version replaces them too (:attr:`replaces_concurrent`)."""
    restored_from: Op | None = None
    """The version whose value ``before`` is (None when the element was absent)."""
    replaces_concurrent: bool = False
    follows: bool = False
    """An element the changes did not write, naming a memory whose text the undo takes out (a
    placement, keyword or boot entry made since, knowing it): removed with it."""


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


def _built_on(ids: set[OpId], held: Mapping[OpId, Op]) -> set[OpId]:
    """``ids`` and every held version whose ``prev`` leads (through held versions) to one of
    them: what the undone ops wrote and what was built on it. Passes in stamp order until
    nothing is added (one pass, and one to confirm, unless stamps were forged out of order)."""
    found = set(ids)
    pending = sorted((v for i, v in held.items() if i not in found), key=lambda o: o.order)
    grew = True
    while grew:
        grew, rest = False, []
        for v in pending:
            if found.intersection(v.prev or ()):
                found.add(v.id)
                grew = True
            else:
                rest.append(v)
        pending = rest
    return found


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
    held = {**state.held, **{h.id: h for h in state.heads}}
    undone = _built_on(ids, held)
    # What the element reads as without the changes and what was built on them: the winner of
    # the remaining versions that no remaining version replaced.
    rest = [v for i, v in held.items() if i not in undone]
    named = {p for v in rest for p in (v.prev or ())}
    frontier = [v for v in rest if v.id not in named]
    source = pick_winner(frontier) if frontier else None
    before = source.val if source is not None else None
    return _step(key, before, after, ids, undone, state, source), None


def _step(
    key: Key,
    before: Value,
    after: Value,
    ids: set[OpId],
    undone: set[OpId],
    state: ElementState,
    source: Op | None,
    *,
    replaces_concurrent: bool = False,
) -> Step:
    """The step writing ``before`` over every current head. ``ids`` are the undone changes'
    ops, ``undone`` those and every version built on them."""
    heads = sorted(state.heads, key=lambda o: o.order)
    later = tuple(h for h in heads if h.id in undone and h.id not in ids)
    concurrent = tuple(
        h
        for h in heads
        if h.id not in undone and not (replaces_concurrent and source and h.id == source.id)
    )
    draft = None
    if not _reads_as(state, before):
        prev = tuple(sorted(h.id for h in state.heads)) or None
        draft = Draft(key, dict(before) if before is not None else None, prev)
    return Step(
        key,
        before,
        after,
        _winner_value(state.heads),
        later,
        draft,
        concurrent=concurrent,
        restored_from=source,
        replaces_concurrent=replaces_concurrent,
    )


def preview(
    changes: Sequence[Sequence[Op]], lookup: Lookup, restoring: frozenset[Key] = frozenset()
) -> Undo:
    """What undoing ``changes`` would do: for every element their ops touched, its value before
    the first of them, after them, and now. Never raises: elements that cannot be restored are
    listed in :attr:`Undo.problems` (and get no draft). ``restoring``: texts the caller puts
    back beside the undo (a rollback to a version), which the undo's placements may name."""
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
    steps, named = _naming_the_deleted(steps, lookup, restoring)
    steps += _naming_taken_out(steps, lookup)
    return Undo(tuple(steps), (*problems, *named))


def _named_memory(key: Key, value: Value) -> Key | None:
    """The text element of the memory that element ``key`` names while it reads as ``value``."""
    if value is None:
        return None
    if key[0] == EDGE:
        child = value.get("child")
        return content_key(key[1], child) if isinstance(child, str) else None
    if key[0] == KEYWORD:
        return content_key(key[1], key[3])
    if key[0] == BOOT:
        return content_key(key[1], key[2])
    return None


def _naming_the_deleted(
    steps: Sequence[Step], lookup: Lookup, restoring: frozenset[Key]
) -> tuple[list[Step], list[str]]:
    """Steps that would place, bind or boot a memory deleted since (undoing a move, alias or
    keyword of a memory deleted after it) lose their draft and become problems: written, the
    memory would read as deleted yet placed. Undone together with the deletion, they pass.
    Like :func:`_naming_taken_out`, only for a lookup that knows what names a memory."""
    if lookup.naming is None:
        return list(steps), []
    back = restoring | {
        s.key for s in steps if s.key[0] == CONTENT and s.draft is not None and s.before is not None
    }
    kept, problems = [], []
    for step in steps:
        target = _named_memory(step.key, step.before)
        if step.draft is None or target is None or target in back:
            kept.append(step)
        elif not (heads := lookup(target).heads) or any(h.val is not None for h in heads):
            kept.append(step)  # a text never held here, or one that reads
        else:
            kept.append(replace(step, draft=None))
            problems.append(
                f"{label(step.key)}: it would name memory {target[2]}, which was deleted since; "
                "undo its deletion together with this change, or first."
            )
    return kept, problems


def _naming_taken_out(steps: Sequence[Step], lookup: Lookup) -> list[Step]:
    """The steps removing what names a memory whose text the undo takes out (the changes
    created it) and that they did not write: a placement, alias, move, keyword or boot entry
    made since, knowing the memory. Left, it would read as deleted yet placed, or fail to load
    at boot. Memories placed under it are left (the page says they become orphans)."""
    if lookup.naming is None:
        return []
    touched = {s.key for s in steps}
    out: list[Step] = []
    for step in steps:
        if step.key[0] != CONTENT or step.draft is None or step.before is not None:
            continue
        for key in lookup.naming(step.key[1], step.key[2]):
            state = lookup(key)
            if key in touched or _reads_as(state, None):
                continue
            touched.add(key)
            heads = tuple(sorted(state.heads, key=lambda o: o.order))
            prev = tuple(sorted(h.id for h in heads))
            now = _winner_value(heads)
            draft = Draft(key, None, prev)
            out.append(Step(key, None, now, now, heads, draft, follows=True))
    return out


def undo(
    changes: Sequence[Sequence[Op]], lookup: Lookup, restoring: frozenset[Key] = frozenset()
) -> Undo:
    """Restore every element the ops of ``changes`` touched to its value before the first of
    them. Raises :class:`UndoError` (naming every element that cannot be restored) instead of
    restoring only part of it."""
    plan = preview(changes, lookup, restoring)
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
    base = undo(others, lookup, frozenset({version.el})) if any(others) else Undo(())
    mine = [op for change in later for op in change if op.el == version.el]
    after = max(mine, key=lambda o: o.order).val if mine else version.val
    state = lookup(version.el)
    # Edits made knowing the version are later ones; the rest of the heads were written
    # without knowing it (concurrently), and the rollback replaces them too.
    undone = _built_on(ids | {version.id}, {**state.held, **{h.id: h for h in state.heads}})
    undone.discard(version.id)
    own = _step(
        version.el, version.val, after, ids, undone, state, version, replaces_concurrent=True
    )
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


def _who(ops: Iterable[Op]) -> str:
    return ", ".join(sorted({f"{h.by or 'unknown'} on {h.node}" for h in ops}))


def describe(step: Step, name: Callable[[str], str] = str) -> str:
    """What writing ``step`` does, in one sentence: what it restores and from which version,
    and every current version it replaces that the undone changes did not write."""
    what = label(step.key, name)
    if step.draft is None:
        return f"{what}: already as before (nothing to write)"
    kind, before, current = step.key[0], step.before, step.current
    source = step.restored_from
    ours = {h.id for h in step.concurrent}
    concurrent_source = source if source is not None and source.id in ours else None
    if before is None:
        verb = {
            CONTENT: "deleted",
            EDGE: "removed",
            KEYWORD: "unbound",
            BOOT: "removed from the boot list",
        }.get(kind, "removed")
        if step.follows:
            why = "it names the memory the change created, which this takes out"
        elif step.concurrent and not step.replaces_concurrent:
            why = f"as {_who(step.concurrent)} left it, writing concurrently"
        elif source is None:
            why = "the change created it"
        else:
            why = "the change restored it"
        text = f"{what}: {verb} ({why})"
    else:
        if concurrent_source is not None:
            origin = f"the version {_who([concurrent_source])} wrote concurrently"
        elif step.replaces_concurrent:
            origin = "the version chosen"
        else:
            origin = "the version this change replaced"
        if current is None:
            text = f"{what}: restored to {origin} (it reads as deleted now)"
        else:
            text = f"{what}: back to {origin}"
        if kind == EDGE:
            text += (
                f" -> {name(before['child'])}, priority {before['priority']}, "
                f"disclosure {before['disclosure']!r}"
            )
    if step.later:
        text += f"; also replaces later edits by {_who(step.later)}, made after the change"
    if step.concurrent and step.replaces_concurrent:
        text += f"; also replaces the version(s) {_who(step.concurrent)} wrote concurrently"
    elif step.concurrent and concurrent_source is None and before is not None:
        text += (
            f"; the version(s) {_who(step.concurrent)} wrote concurrently, not this change, "
            "lose to it as they would without the change"
        )
    return text
