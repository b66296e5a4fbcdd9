"""The review queue, change details and a memory's timeline, computed from the in-memory fold
and :class:`~noon.web.changelog.ChangeLog` (used only by :mod:`noon.web.data`, whose
docstrings describe the shapes)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from noon.core.elements import CONTENT, edge_key, review_key
from noon.core.fold import Fold
from noon.core.ops import Draft, Key, Op, valid_node_id
from noon.errors import NoonError
from noon.graph import undo
from noon.graph.model import Graph, op_time_ms, version_id
from noon.graph.views import show_uri
from noon.ops_cli import journal
from noon.web.changelog import UPTO, WEB_CLIENT, Change, ChangeLog, change_id, subject
from noon.web.diff import text_diff, value_diff
from noon.web.errors import Stale, WebError
from noon.web.fold_views import namer, who

SUMMARY_OPS = 6
"""Ops described one by one in a queue item; the rest are counted."""


class CursorError(NoonError, ValueError):
    pass


def basis(keys: Iterable[Key], state: undo.Lookup) -> str:
    """A fingerprint of the current heads of every element an undo touches: a rollback the page
    previewed is refused when it differs at write time."""
    h = hashlib.blake2b(digest_size=8)
    for key in sorted(set(keys)):
        h.update(repr((key, sorted(op.id for op in state(key).heads))).encode())
    return h.hexdigest()


def cursor(text: str | None) -> tuple[int, str, int] | None:
    if not text:
        return None
    hlc, _, rest = text.partition(":")
    node, _, seq = rest.rpartition(":")
    if not hlc.isdigit() or not seq.isdigit() or not valid_node_id(node):
        raise CursorError(f"Bad cursor {text[:80]!r}: pass back the 'next' of a listing.")
    return int(hlc), node, int(seq)


def _subject(graph: Graph, ns: str, about: str | None) -> dict[str, Any] | None:
    if about is None:
        return None
    if about.startswith("kg:"):
        return {"kind": "entity", "name": about[3:], "label": f"kg://{about[3:]}"}
    if about.startswith("@edge:"):
        return {"kind": "placement", "label": about[6:]}
    return {"kind": "memory", "node": about, "label": show_uri(graph, ns, about)}


def head(graph: Graph, ns: str, log: ChangeLog, change: Change, through: dict[str, int]) -> dict:
    ops = change.ops
    verdict = log.reviews.verdict(ns, change)
    if change.client == WEB_CLIENT:
        state = "web"
    elif verdict is not None:
        state = verdict.verdict
    elif log.reviews.reviewed(ns, change, through):
        state = "approved"
    else:
        state = "pending"
    return {
        "id": change.id,
        "ids": [change.id],
        "time": change.stamp[0] >> 16,
        "client": change.client,
        "machine": change.author,
        "ops": len(ops),
        "subject": _subject(graph, ns, change.subject),
        "what": [journal.describe(graph, op) for op in ops[:SUMMARY_OPS]],
        "more": max(0, len(ops) - SUMMARY_OPS),
        "status": state,
        "reviewed_by": None
        if verdict is None
        else {
            "machine": verdict.reviewer,
            "time": op_time_ms(verdict.op),
            "batch": change_id(verdict.op),
        },
    }


def listing(
    graph: Graph,
    fold: Fold,
    log: ChangeLog,
    ns: str,
    view: str,
    group: str,
    before: tuple[int, str, int] | None,
    limit: int,
) -> dict[str, Any]:
    through = log.reviews.through(ns)

    def wanted(c: Change) -> bool:
        if view == "pending":
            return log.pending(c, through)
        if view == "reviewed":
            return c.client != WEB_CLIENT and not log.pending(c, through)
        return True

    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    last = None
    for change in log.newest(ns, before):
        if len(items) >= limit:
            break
        last = change.stamp
        if not wanted(change):
            continue
        if group == "change":
            items.append(head(graph, ns, log, change, through))
            continue
        about = change.subject or change.id
        if about in seen:
            continue
        seen.add(about)
        members = [c for c in log.of_subject(ns, about) if wanted(c)] or [change]
        item = head(graph, ns, log, members[0], through)
        item.update(
            id=f"memory:{about}",
            ids=[c.id for c in members],
            clients=sorted({c.client for c in members}),
            machines=sorted({c.author for c in members}),
            changes=len(members),
        )
        items.append(item)
    more = last is not None and len(items) >= limit
    return {
        "items": items,
        "next": f"{last[0]}:{last[1]}:{last[2]}" if more and last else None,
        "pending": log.pending_count(ns),
        "frontier": fold.frontier(),
    }


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


def steps(graph: Graph, ns: str, preview: undo.Undo) -> list[dict[str, Any]]:
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
            "restore": undo.describe(step, name),
            "writes": step.draft is not None,
        }
        if kind == CONTENT:
            entry["memory"] = show_uri(graph, ns, step.key[2])
            entry["diff"] = text_diff(_text(step.before), _text(step.after))
            kids = sum(
                1
                for kid in graph.children(ns, step.key[2])
                if edge_key(ns, step.key[2], kid.key_name) not in undone
            )
            if step.draft is not None and step.before is None and kids:
                entry["restore"] += (
                    f"; the {kids} memory(ies) placed under it since stay, listed as orphans "
                    "unless another URI reaches them"
                )
            for side in ("before", "after", "current"):
                if entry[side] is not None:
                    entry[side] = {"chars": len(entry[side]["text"])}
        else:
            entry["fields"] = value_diff(entry["before"], entry["after"])
        out.append(entry)
    return out


def details(graph: Graph, fold: Fold, log: ChangeLog, ns: str, changes: list[Change]) -> dict:
    state = undo.fold_lookup(fold)
    preview = undo.preview([c.ops for c in changes], state)
    through = log.reviews.through(ns)
    return {
        "changes": [head(graph, ns, log, c, through) for c in changes],
        "steps": steps(graph, ns, preview),
        "undo": {
            "possible": not preview.problems,
            "problems": list(preview.problems),
            "writes": len(preview.drafts),
            "overwrites_later": preview.overwrites_later_edits,
            "basis": basis((s.key for s in preview.steps), state),
        },
    }


def timeline(
    graph: Graph, fold: Fold, log: ChangeLog, ns: str, node: str, offset: int, limit: int
) -> dict[str, Any]:
    el = graph.content(ns, node)
    changes = log.of_subject(ns, node)
    state = undo.fold_lookup(fold)
    through = log.reviews.through(ns)
    items = []
    for change in changes[offset : offset + limit]:
        mine = [op for op in change.ops if _about(op, node, fold)]
        text_op = next((op for op in mine if op.el[0] == CONTENT), None)
        items.append(
            {
                **head(graph, ns, log, change, through),
                "version": None
                if text_op is None
                else {
                    "version": version_id(text_op),
                    "deleted": text_op.val is None,
                    "current": el is not None and text_op is el.winner,
                },
                "steps": steps(graph, ns, undo.preview([mine], state)),
            }
        )
    return {
        "uri": show_uri(graph, ns, node),
        "node": node,
        "version": version_id(el.winner) if el is not None else None,
        "total": len(changes),
        "offset": offset,
        "items": items,
    }


def _about(op: Op, node: str, fold: Fold) -> bool:
    """Whether ``op`` is about ``node``: its text, a placement of it or under it, its keywords
    or boot membership."""
    return subject(op, fold) == node or (op.el[0] == "edge" and op.el[2] == node)


def later_changes(log: ChangeLog, version: Op, versions: Iterable[Op]) -> list[list[Op]]:
    """The changes (op lists) that wrote the versions newer than ``version``, oldest first."""
    ids: dict[str, None] = {}
    for op in sorted(versions, key=lambda o: o.order):
        if op.order > version.order:
            ids[change_id(op)] = None
    return [log.changes[c].ops for c in ids if c in log.changes]


def approval(
    log: ChangeLog,
    fold: Fold,
    ns: str,
    changes: list[Change],
    through: dict[str, int] | None,
    me: str,
) -> list[Draft]:
    """Review ops approving ``changes`` (those without a verdict yet) and, with ``through``,
    every change of those authors up to those seqs (merged into this machine's watermark)."""
    drafts = [
        Draft(review_key(ns, c.id, me), {"verdict": "approved"})
        for c in changes
        if log.reviews.verdict(ns, c) is None
    ]
    if through:
        for author, seq in through.items():
            if not valid_node_id(author):
                raise WebError(f"Bad frontier entry {author[:80]!r}: not a node id.")
            if seq > fold.max_seq(author):
                raise WebError(
                    f"Cannot approve changes of {author} up to {seq}: this machine holds them "
                    f"only up to {fold.max_seq(author)}."
                )
        el = fold.elements.get(review_key(ns, UPTO, me))
        mine = dict((el.winner.val or {}).get("through", {})) if el else {}
        if any(mine.get(a, 0) < s for a, s in through.items()):
            merged = {**mine, **{a: max(s, mine.get(a, 0)) for a, s in through.items()}}
            drafts.append(Draft(review_key(ns, UPTO, me), {"through": merged}))
    return drafts


def rollback(
    fold: Fold, ns: str, changes: list[Change], basis_seen: str | None, me: str
) -> tuple[list[Draft], int]:
    """The drafts undoing ``changes`` plus their rolled-back marks, and how many elements they
    restore. Refused (:class:`Stale`) when what they touched no longer has ``basis_seen``."""
    state = undo.fold_lookup(fold)
    planned = undo.undo([c.ops for c in changes], state)
    now = basis((s.key for s in planned.steps), state)
    if basis_seen is not None and basis_seen != now:
        raise Stale(
            "What these changes touched was edited since you looked: review the new state and "
            "roll back again.",
            {"basis": now},
        )
    marks = [Draft(review_key(ns, c.id, me), {"verdict": "rolled_back"}) for c in changes]
    return [*planned.drafts, *marks], len(planned.drafts)
