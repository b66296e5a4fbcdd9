"""What a change did and what undoing it would do, element by element, and the rollback's own
ops: :mod:`noon.graph.undo` planning on element states read from the read model (used only by
:mod:`noon.web.data` and :mod:`noon.web.timeline`, whose docstrings describe the shapes; a
memory's rollback to one version is :mod:`noon.store.rollback`, shared with the MCP tool)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from noon.core.elements import CONTENT, edge_key, review_key
from noon.core.ops import Draft, Key
from noon.errors import Conflict, Invalid
from noon.graph import undo
from noon.graph.memory_view import show_uri
from noon.graph.reader import version_id
from noon.store.readmodel import changes
from noon.store.readmodel.changes import Change
from noon.store.readmodel.graph import SqlGraph
from noon.store.readmodel.rows import key_text
from noon.store.rollback import lookup
from noon.web import queue
from noon.web.diff import text_diff, value_diff
from noon.web.views import namer, who


def basis(keys: Iterable[Key], state: undo.Lookup) -> str:
    """A fingerprint of the current heads of every element an undo touches: a rollback the page
    previewed is refused when it differs at write time."""
    h = hashlib.blake2b(digest_size=8)
    for key in sorted(set(keys)):
        h.update(repr((key, sorted(op.id for op in state(key).heads))).encode())
    return h.hexdigest()


def _shown(value: dict[str, Any] | None, name: Callable[[str], str]) -> dict[str, Any] | None:
    """An element value as the page shows it: node ids as URIs."""
    if value is None:
        return None
    out = dict(value)
    if "child" in out:
        out["child"] = name(str(out["child"]))
    return out


def _text(value: dict[str, Any] | None) -> str | None:
    return value.get("text") if value else None


def steps(graph: SqlGraph, ns: str, preview: undo.Undo) -> list[dict[str, Any]]:
    name = namer(graph, ns)
    undone = {s.key for s in preview.steps if s.draft is not None}
    out = []
    for step in preview.steps:
        kind = step.key[0]
        entry: dict[str, Any] = {
            "element": undo.label(step.key, name),
            "kind": kind,
            "known": step.known,
            "before": _shown(step.before, name),
            "after": _shown(step.after, name),
            "current": _shown(step.current, name),
            "later": [{"version": version_id(h), **who(h)} for h in step.later],
            "concurrent": [{"version": version_id(h), **who(h)} for h in step.concurrent],
            "restore": undo.describe(step, name),
            "writes": step.draft is not None,
        }
        if kind == CONTENT:
            entry["memory"] = show_uri(graph, ns, step.key[2])
            entry["diff"] = text_diff(_text(step.before), _text(step.after))
            if step.draft is not None and step.before is None:
                kids = sum(
                    1
                    for kid in graph.children(ns, step.key[2])
                    if edge_key(ns, step.key[2], kid.key_name) not in undone
                )
                if kids:
                    entry["restore"] += (
                        f"; the {kids} memory(ies) placed under it since stay, listed as "
                        "orphans unless another URI reaches them"
                    )
            for side in ("before", "after", "current"):
                if entry[side] is not None:
                    entry[side] = {"chars": len(entry[side]["text"])}
        else:
            entry["fields"] = value_diff(entry["before"], entry["after"])
        out.append(entry)
    return out


MAX_UNDO_OPS = 10_000
"""Ops the page previews a rollback of and rolls back at once, at most: the work of one step is
bounded whatever an agent wrote in one call (a 99,000-op batch is shown page by page)."""
STEPS_PAGE = 50
"""Elements described in one answer of the details, by default."""
MAX_STEPS_PAGE = 200


def load(graph: SqlGraph, refs: Sequence[changes.Ref]) -> list[Change]:
    return [Change(r, changes.load_ops(graph.conn, r)) for r in refs]


def too_large(refs: Sequence[changes.Ref]) -> str | None:
    """Why the page will not preview or write a rollback of ``refs`` (None: it will)."""
    ops = sum(r.count for r in refs)
    if ops <= MAX_UNDO_OPS:
        return None
    return (
        f"These changes hold {ops:,} ops; the page previews and rolls back at most "
        f"{MAX_UNDO_OPS:,} at once. Roll back the memories that matter one by one from their "
        "history (or with rollback_memory)."
    )


def details(
    graph: SqlGraph, ns: str, refs: Sequence[changes.Ref], offset: int, limit: int
) -> dict[str, Any]:
    """The changes, the elements ``offset`` to ``offset + limit`` they touched (in the order of
    their keys' text),
    and the rollback: previewed whole when at most :data:`MAX_UNDO_OPS` ops, else refused with
    the bound said. Reads only the ops of the elements shown (and the keys of the others)."""
    conn = graph.conn
    state = lookup(graph)
    every = sorted(set().union(*(changes.keys_of(conn, r) for r in refs)))  # by key text
    shown = every[offset : offset + limit]
    page = undo.preview([changes.ops_on(conn, r, shown) for r in refs], state)
    page = replace(page, steps=tuple(sorted(page.steps, key=lambda s: key_text(s.key))))
    review = queue.Review(conn, ns)
    refused = too_large(refs)
    if refused is None:
        whole = (
            page
            if len(shown) == len(every)
            else undo.preview([c.ops for c in load(graph, refs)], state)
        )
        summary: dict[str, Any] = {
            "possible": not whole.problems,
            "problems": list(whole.problems),
            "writes": len(whole.drafts),
            "overwrites_later": whole.overwrites_later_edits,
            "basis": basis((s.key for s in whole.steps), state),
        }
    else:
        summary = {
            "possible": False,
            "problems": [refused],
            "writes": None,
            "overwrites_later": None,
            "basis": None,
        }
    return {
        "changes": [queue.item(graph, review, queue.head(conn, r)) for r in refs],
        "steps": steps(graph, ns, page),
        "total_steps": len(every),
        "offset": offset,
        "undo": summary,
    }


def rollback(
    graph: SqlGraph, ns: str, refs: Sequence[changes.Ref], basis_seen: str | None, me: str
) -> tuple[list[Draft], int]:
    """The drafts undoing ``refs`` plus their rolled-back marks, and how many elements they
    restore. Refused (:class:`Stale`) when what they touched no longer has ``basis_seen``, and
    (:class:`Invalid`) above :data:`MAX_UNDO_OPS` ops."""
    refused = too_large(refs)
    if refused is not None:
        raise Invalid(refused)
    state = lookup(graph)
    planned = undo.undo([c.ops for c in load(graph, refs)], state)
    now = basis((s.key for s in planned.steps), state)
    if basis_seen is not None and basis_seen != now:
        raise Conflict(
            "What these changes touched was edited since you looked: review the new state and "
            "roll back again.",
            {"basis": now},
        )
    marks = [Draft(review_key(ns, r.id, me), {"verdict": "rolled_back"}) for r in refs]
    return [*planned.drafts, *marks], len(planned.drafts)
