"""The page's views of memories, read from the machine's read model (used only by
:mod:`noon.web.data`, whose docstrings describe the shapes): a memory with its glossary spans,
a page of children, conflicts, orphans, the knowledge graph, and what a batch of changed keys
means for what a page shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from noon.app.conflicts import Concurrent, Version
from noon.app.entities import Entity, EntityLine
from noon.app.memories import placement_version
from noon.app.orphans import Orphan
from noon.core.elements import BOOT, CONTENT, EDGE, KEYWORD, KG_KINDS
from noon.core.ops import Key, Op
from noon.errors import NotFound
from noon.graph import plan
from noon.graph.glossary import MAX_SPANS, Glossary, _fold
from noon.graph.memory_view import show_uri
from noon.graph.reader import ElementLike, Placement, live_text, op_time_ms, version_id
from noon.graph.uri import NODE_VIEW, Uri, is_root, node_view, parse, root, root_domain
from noon.store.queries import Queries
from noon.store.readmodel.graph import SqlGraph
from noon.web.diff import text_diff

SNIPPET = 140


def snip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET else flat[: SNIPPET - 1] + "…"


def who(op: Op) -> dict[str, Any]:
    """Provenance of a version: ``{time, client, machine}``."""
    return {"time": op_time_ms(op), "client": op.by or "unknown", "machine": op.node}


def namer(graph: SqlGraph, ns: str) -> Callable[[str], str]:
    """Node ids (and domain roots) as the URIs the page shows."""

    def name(ident: str) -> str:
        return f"{root_domain(ident)}://" if is_root(ident) else show_uri(graph, ns, ident)

    return name


def count_children(graph: SqlGraph, ns: str, node: str) -> int:
    return Queries(graph).child_counts(ns, [node])[node]


def domains(graph: SqlGraph, ns: str) -> list[dict[str, Any]]:
    found = graph.domains(ns)
    counts = Queries(graph).child_counts(ns, [root(d) for d in found])
    return [{"domain": d, "children": counts[root(d)]} for d in found]


def children(
    graph: SqlGraph, ns: str, uri: str, offset: int, limit: int, name_filter: str = ""
) -> dict[str, Any]:
    """A page of the children of the memory or domain root ``uri`` names; with
    ``name_filter``, of those whose name or disclosure holds it (any case)."""
    base: Uri | None
    if uri.strip().startswith(NODE_VIEW):
        node = plan.locate(graph, ns, uri)[0]
        base = graph.primary_uri(ns, node)
    else:
        base = parse(uri)
        found = graph.resolve(ns, base)
        if found is None:
            raise NotFound(f"'{uri}' not found (moved or deleted meanwhile?).")
        node = found[0]
    kids = graph.children(ns, node)
    every = len(kids)
    if name_filter:
        needle = name_filter.casefold()
        kids = [k for k in kids if needle in k.name.casefold() or needle in k.disclosure.casefold()]
    shown = kids[offset : offset + limit]
    boot = graph.boot_nodes(ns)
    queries = Queries(graph)
    counts = queries.child_counts(ns, (kid.child for kid in shown))
    texts = queries.summaries(ns, (kid.child for kid in shown))
    items = []
    for kid in shown:
        about = texts.get(kid.child)
        items.append(
            {
                "name": kid.name,
                "uri": str(base.child(kid.name)) if base else show_uri(graph, ns, kid.child),
                "node": kid.child,
                "priority": kid.priority,
                "disclosure": kid.disclosure,
                "children": counts[kid.child],
                "snippet": snip(about.text) if about is not None else "",
                "deleted": about is None or about.deleted,
                "conflicted": about is not None and about.conflicted,
                "boot": kid.child in boot,
            }
        )
    where = str(base) if base else node_view(node)
    return {
        "uri": where,
        "node": node,
        "total": len(kids),
        "all": every,
        "filter": name_filter,
        "offset": offset,
        "items": items,
    }


def _heads(el: ElementLike) -> list[Op]:
    return sorted(el.heads.values(), key=lambda o: o.order, reverse=True)


def memory(
    graph: SqlGraph, glossary: Glossary, ns: str, node: str, at: Uri | None, pl: Placement | None
) -> dict[str, Any] | None:
    el = graph.content(ns, node)
    if el is None:
        return None
    text = live_text(el)
    spans, more = glossary_spans(graph, glossary, ns, node, text)
    uris = graph.uris(ns, node)
    shown = at or (uris[0][0] if uris else None)
    name = namer(graph, ns)
    heads = []
    if el.conflicted:
        for h in _heads(el):
            body = h.val["text"] if h.val is not None else None
            winner = h.id == el.winner.id
            heads.append(
                {
                    "version": version_id(h),
                    "text": body,
                    "winner": winner,
                    "diff": None if winner else text_diff(text, body),
                    **who(h),
                }
            )
    crumbs = []
    if shown is not None:
        for i in range(len(shown.path) + 1):
            sub = Uri(shown.domain, shown.path[:i])
            crumbs.append({"name": sub.path[-1] if sub.path else str(sub), "uri": str(sub)})
    return {
        "namespace": ns,
        "uri": str(shown) if shown is not None else node_view(node),
        "node": node,
        "version": version_id(el.winner),
        "text": text,
        "deleted": el.deleted,
        "conflicted": el.conflicted,
        "orphan": not uris,
        "heads": heads,
        "placement": None
        if pl is None
        else {
            "parent_uri": name(pl.parent),
            "name": pl.name,
            "priority": pl.priority,
            "disclosure": pl.disclosure,
            "version": placement_version(graph, ns, pl),
        },
        "aliases": [{"uri": str(u), "priority": p} for u, p in uris if u != shown],
        "placements": [
            {
                "parent_uri": name(p.parent),
                "name": p.name,
                "priority": p.priority,
                "disclosure": p.disclosure,
            }
            for p in graph.placements(ns, node)
        ],
        "keywords": graph.keywords_of(ns, node),
        "boot": node in graph.boot_nodes(ns),
        "glossary": spans,
        "glossary_more": more,
        "children": count_children(graph, ns, node),
        "breadcrumbs": crumbs,
        "modified": who(el.winner),
    }


def preview(graph: SqlGraph, ns: str, node: str, text: str) -> dict[str, Any]:
    el = graph.content(ns, node)
    current = live_text(el) if el is not None else ""
    return {"version": version_id(el.winner) if el else None, "diff": text_diff(current, text)}


def glossary_spans(
    graph: SqlGraph, glossary: Glossary, ns: str, node: str, text: str
) -> tuple[list[dict[str, Any]], bool]:
    """Where bound keywords occur in ``text`` and the memories they link to, with the matching
    and word-boundary rule of the glossary that ``read_memory`` shows: at most
    :data:`MAX_SPANS` places, and whether there were more."""
    if len(_fold(text)) != len(text):
        return [], False  # case folding changed lengths: positions would not match the text
    bound = glossary.bound(ns)
    targets_of: dict[str, list[str]] = {}

    def targets(kw: str) -> list[str]:
        if kw not in targets_of:
            nodes = bound.get(kw, set())
            targets_of[kw] = sorted(
                str(u)
                for n in nodes
                if n != node
                and graph.is_live(ns, n)
                and (u := graph.primary_uri(ns, n)) is not None
            )
        return targets_of[kw]

    spans: list[dict[str, Any]] = []
    for start, end, kws in glossary.matches(ns, text):
        linked = [(kw, t) for kw in kws if (t := targets(kw))]
        if not linked:
            continue
        if len(spans) == MAX_SPANS:
            return spans, True
        kw, to = linked[0]
        spans.append({"start": start, "end": end, "keyword": kw, "targets": to})
    return spans, False


def conflicts(found: list[Concurrent]) -> list[dict[str, Any]]:
    """:func:`noon.app.conflicts.listing` as the page reads it, each text with its diff from
    the shown one."""
    out: list[dict[str, Any]] = []
    for c in found:
        base = {"heads": c.heads, "winner": c.winner}
        if c.kind == CONTENT:
            versions = [
                {
                    "version": v.version,
                    "text": v.text,
                    "winner": v.winner,
                    "diff": None if v.winner or v.text is None else text_diff(c.shown, v.text),
                    **_by(v),
                }
                for v in c.versions
            ]
            extra = {"node": c.node, "uri": c.uri, "deleted_while_placed": c.deleted_while_placed}
        else:
            versions = [
                {
                    "version": v.version,
                    "child": v.child,
                    "priority": v.priority,
                    "winner": v.winner,
                    **_by(v),
                }
                for v in c.versions
            ]
            extra = {"parent_uri": c.parent_uri, "name": c.name}
        out.append({**base, "kind": c.kind, **extra, "versions": versions})
    return out


def _by(v: Version) -> dict[str, Any]:
    return {"time": v.time_ms, "client": v.client, "machine": v.machine}


def orphans(total: int, found: list[Orphan], offset: int) -> dict[str, Any]:
    """:func:`noon.app.orphans.orphans` as the page reads it."""
    items = [
        {
            "node": o.node,
            "uri": node_view(o.node),
            "snippet": snip(o.text),
            "unreachable_under": o.unreachable_under,
            "children": o.children,
            "modified": None
            if o.modified_ms is None
            else {"time": o.modified_ms, "client": o.client, "machine": o.machine},
        }
        for o in found
    ]
    return {"total": total, "offset": offset, "items": items}


def entities(total: int, found: list[EntityLine], offset: int) -> dict[str, Any]:
    """:func:`noon.app.entities.entities` as the page reads it."""
    items = [
        {"name": e.name, "type": e.type, "observations": e.observations, "first": snip(e.first)}
        for e in found
    ]
    return {"total": total, "offset": offset, "items": items}


def entity(e: Entity) -> dict[str, Any]:
    """:func:`noon.app.entities.entity` as the page reads it."""
    rels = [{"from": r.source, "to": r.target, "relationType": r.type} for r in e.relations]
    return {"name": e.name, "type": e.type, "observations": e.observations, "relations": rels}


def touched(graph: SqlGraph, keys: set[Key]) -> dict[str, Any]:
    """What changed elements mean for the views a page shows (see ``WebData.poll``)."""
    spaces: dict[str, dict[str, Any]] = {}
    for key in keys:
        entry = spaces.setdefault(
            key[1], {"nodes": set(), "parents": set(), "kg": False, "changes": True}
        )
        if key[0] in (CONTENT, BOOT):
            entry["nodes"].add(key[2])
        elif key[0] == KEYWORD:
            entry["nodes"].add(key[3])
        elif key[0] == EDGE:
            entry["parents"].add(key[2])
            el = graph.element(key)
            for v in el.versions[-2:] if el is not None else ():
                if v.val is not None:  # the child placed or moved away: its URIs changed
                    entry["nodes"].add(v.val["child"])
        elif key[0] in KG_KINDS:
            entry["kg"] = True
    return {
        "namespaces": {
            ns: {**e, "nodes": sorted(e["nodes"]), "parents": sorted(e["parents"])}
            for ns, e in spaces.items()
        }
    }
