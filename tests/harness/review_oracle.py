"""The review queue as a fresh in-memory fold says it is: the reference ``noon web``'s queries of
the read model are held to. Written to be obviously right, not fast: every held op is grouped
into its change, and each question is answered by scanning them all.

A change is the ops of one author sharing ``bat`` (one tool call) or one lone op; its id is
``node:seq`` of its last op, its stamp the greatest ``(hlc, node, seq)`` of its held ops, its
namespace, client and edge (``via``) those of its first op. Its subject is what its first op
that is about something is about. A review element holds the decision of the machine it names:
that machine's own latest version, unless another machine's tombstone names that version in
``prev`` (a withdrawal). A change is reviewed when such a decision on it is stamped after every
op of it and is ``approved``, or ``rolled_back`` while no text it wrote is a head any more; or
when a watermark (``upto``) covers it: its id's seq at most the greatest seq of its author
that is at most the watermark's and stamped before the watermark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from noon.core.elements import BOOT, CONTENT, EDGE, KEYWORD, KG_KINDS, REVIEW
from noon.core.ops import Op
from noon.graph.memory_view import show_uri
from tests.harness.fold import Fold
from tests.harness.kg_view import View
from tests.harness.stores import val_of
from tests.harness.uri_graph import Graph

WEB = "web"


@dataclass
class Change:
    id: str
    ops: list[Op] = field(default_factory=list)

    @property
    def ns(self) -> str:
        return self.ops[0].el[1]

    @property
    def stamp(self) -> tuple[int, str, int]:
        return max(op.order for op in self.ops)

    @property
    def author(self) -> str:
        return self.ops[0].node

    @property
    def seq(self) -> int:
        return int(self.id.rsplit(":", 1)[1])

    @property
    def client(self) -> str:
        return self.ops[0].by or "unknown"

    @property
    def via(self) -> str:
        return self.ops[0].via or ""


def subject(fold: Fold, op: Op) -> str | None:
    kind = op.el[0]
    if kind in (CONTENT, BOOT):
        return op.el[2]
    if kind == KEYWORD:
        return op.el[3]
    if kind == EDGE:
        if op.val is not None:
            return str(op.val["child"])
        el = fold.elements.get(op.el)
        named = [
            v for v in (el.versions if el else ()) if v.val is not None and v.id in (op.prev or ())
        ]
        if named:
            return str(val_of(min(named, key=lambda o: o.order))["child"])
        return f"@edge:{op.el[2]}/{op.el[3]}"
    if kind in KG_KINDS:
        return f"kg:{op.el[2]}"
    return None


class Oracle:
    def __init__(self, fold: Fold, ns: str) -> None:
        self.fold = fold
        self.ns = ns
        self.graph = Graph(fold)
        every: dict[str, Change] = {}
        for el in fold.elements.values():
            for op in el.versions:
                cid = f"{op.node}:{op.bat or op.seq}"
                every.setdefault(cid, Change(cid)).ops.append(op)
        for c in every.values():
            c.ops.sort(key=lambda o: o.seq)
        self.changes = sorted(
            (c for c in every.values() if c.ns == ns), key=lambda c: c.stamp, reverse=True
        )
        self.verdicts: dict[str, list[tuple[tuple[int, str, int], str, dict[str, Any], str]]] = {}
        self.through: dict[str, int] = {}
        held: dict[str, list[Op]] = {}
        for el in fold.elements.values():
            for op in el.versions:
                held.setdefault(op.node, []).append(op)
        for key, el in fold.elements.items():
            if key[0] != REVIEW or key[1] != ns:
                continue
            reviewer = key[3]
            own = [v for v in el.versions if v.node == reviewer]
            if not own:
                continue
            w = max(own, key=lambda v: v.seq)
            withdrawn = any(
                v.node != reviewer and v.val is None and w.id in (v.prev or ()) for v in el.versions
            )
            if w.val is None or withdrawn:
                continue
            if key[2] == "upto":
                for author, seq in w.val["through"].items():
                    older = [o.seq for o in held.get(author, []) if o.seq <= seq and o.hlc < w.hlc]
                    if older:
                        self.through[author] = max(max(older), self.through.get(author, 0))
            else:
                batch = f"{w.node}:{w.bat or w.seq}"
                self.verdicts.setdefault(key[2], []).append((w.order, reviewer, w.val, batch))

    def subject_of(self, c: Change) -> str | None:
        return next((s for op in c.ops if (s := subject(self.fold, op)) is not None), None)

    def about(self, what: str) -> list[Change]:
        return [c for c in self.changes if any(subject(self.fold, op) == what for op in c.ops)]

    def stands(self, c: Change) -> bool:
        return any(op.el[0] != REVIEW and op.id in self.fold.elements[op.el].heads for op in c.ops)

    def counted(self, c: Change) -> list[tuple[tuple[int, str, int], str, dict[str, Any], str]]:
        """The decisions on ``c`` that count."""
        out = []
        for v in self.verdicts.get(c.id, []):
            verdict = v[2].get("verdict")
            if v[0][0] <= c.stamp[0] or verdict not in ("approved", "rolled_back"):
                continue
            if verdict == "rolled_back" and self.stands(c):
                continue
            out.append(v)
        return out

    def status(self, c: Change) -> str:
        if c.via == WEB:
            return "web"
        counted = self.counted(c)
        if counted:
            return str(max(counted)[2]["verdict"])
        return "approved" if c.seq <= self.through.get(c.author, 0) else "pending"

    def wanted(self, c: Change, view: str) -> bool:
        s = self.status(c)
        return {"pending": s == "pending", "reviewed": s not in ("pending", "web")}.get(view, True)

    def pending(self) -> int:
        return sum(1 for c in self.changes if self.status(c) == "pending")

    def head(self, c: Change) -> dict[str, Any]:
        """What the page shows of a change (the fields the read model computes)."""
        about = self.subject_of(c)
        counted = self.counted(c)
        verdict = max(counted) if counted else None
        return {
            "id": c.id,
            "time": c.stamp[0] >> 16,
            "client": c.client,
            "machine": c.author,
            "ops": len(c.ops),
            "subject": self.label(about),
            "status": self.status(c),
            "reviewed_by": None if verdict is None else (verdict[1], verdict[3]),
        }

    def label(self, about: str | None) -> str | None:
        if about is None or about.startswith(("kg:", "@edge:")):
            return about
        return show_uri(self.graph, self.ns, about)

    def listing(self, view: str) -> list[dict[str, Any]]:
        return [self.head(c) for c in self.changes if self.wanted(c, view)]

    def by_memory(self, view: str) -> list[dict[str, Any]]:
        """The ``group=memory`` listing, in one page."""
        out, seen = [], set()
        for c in self.changes:
            if not self.wanted(c, view):
                continue
            about = self.subject_of(c) or c.id
            if about in seen:
                continue
            seen.add(about)
            members = [m for m in self.about(about) if self.wanted(m, view)] or [c]
            item = {**self.head(members[0]), "id": f"memory:{about}"}
            out.append({**item, "ids": [m.id for m in members]})
        return out

    def timeline(self, node: str) -> list[str]:
        return [c.id for c in self.about(node)]

    def graph_entities(self) -> list[str]:
        return View(self.fold, self.ns).entity_names()

    def entity_changes(self, name: str) -> list[str]:
        return [c.id for c in self.about(f"kg:{name}")][:50]
