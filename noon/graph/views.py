"""Text an agent reads: the generated ``system://`` views (one memory is
:mod:`noon.graph.memory_view`).

Every view is computed from the graph on read and never stored. Formats follow Nocturne's
(what agents prompted for it already expect), with node ids and version ids in place of row
ids, and notes where replication can leave more than one version of something.
"""

from __future__ import annotations

from collections import Counter

from noon.core.elements import boot_key
from noon.graph.glossary import Glossary
from noon.graph.memory_view import (
    author,
    memory,
    show_uri,
    show_uri_or_past,
    when,
)
from noon.graph.reader import (
    GraphReader,
    Placement,
    change_id,
    live_text,
    op_time_ms,
    version_id,
    written_ms,
)
from noon.graph.textdiff import hunks
from noon.graph.uri import Uri, UriError, node_view, parse, root

CROWDED = 10
LARGE_CHARS = 3200


def _boot_uri(graph: GraphReader, namespace: str, node: str) -> tuple[Uri, Placement | None] | None:
    """The URI a boot entry loads under: the one it was listed by (its value's ``uri``, kept by
    imports) while that still names the node, else the node's best URI."""
    el = graph.element(boot_key(namespace, node))
    listed = el.winner.val.get("uri") if el is not None and el.winner.val else None
    if isinstance(listed, str):
        try:
            uri: Uri | None = parse(listed)
        except UriError:
            uri = None
        found = graph.resolve(namespace, uri) if uri is not None else None
        if uri is not None and found is not None and found[0] == node:
            return uri, found[1]
    us = graph.uris(namespace, node)
    if not us:
        return None
    found = graph.resolve(namespace, us[0][0])
    return us[0][0], found[1] if found else None


def boot(graph: GraphReader, glossary: Glossary, namespace: str, now_ms: int) -> str:
    nodes = graph.boot_nodes(namespace)
    loaded: list[tuple[tuple[int, str], str]] = []
    failed: list[str] = []
    for n in nodes:
        if not graph.is_live(namespace, n):
            failed.append(f"- {show_uri_or_past(graph, namespace, n)}: deleted")
            continue
        booted = _boot_uri(graph, namespace, n)
        if booted is None:
            loaded.append(
                ((99, node_view(n)), memory(graph, glossary, namespace, n, None, None).text)
            )
            continue
        uri, pl = booted
        prio = pl.priority if pl is not None else 0
        loaded.append(((prio, str(uri)), memory(graph, glossary, namespace, n, uri, pl).text))
    loaded.sort()
    out = ["# Core Memories", f"# Loaded: {len(loaded)}/{len(nodes)} memories", ""]
    if failed:
        out += ["## Failed to load:", *sorted(failed), ""]
    out += [
        "## Contents:",
        "",
        "For a memory index, use: system://index/<domain> (e.g. system://index/core)",
        "For recent memories, use: system://recent",
    ]
    if loaded:
        out += [body for _, body in loaded]
    else:
        out += [
            "",
            "(No boot memories yet. Mark the memories every session needs with "
            "manage_boot(add=[uri]).)",
        ]
    out += ["", "---", "", recent(graph, namespace, 5, 5, now_ms)]
    return "\n".join(out)


def index(graph: GraphReader, namespace: str, domain: str, now_ms: int) -> str:
    entries: dict[str, list[tuple[Uri, int, str]]] = {}
    count = 0
    for n in graph.live_nodes(namespace):
        best = next(((u, p) for u, p in graph.uris(namespace, n) if u.domain == domain), None)
        if best is None:
            continue
        count += 1
        uri, prio = best
        entries.setdefault(uri.path[0], []).append((uri, prio, n))
    out = [
        "# Memory Index",
        f"# Generated: {when(now_ms)}",
        f"# Domain Filter: {domain}",
        f"# Total: {count} unique nodes",
        "#",
        "# ⚠️ ATTENTION (LLM):",
        "# This index ONLY shows ONE primary path per memory node.",
        "# Other aliases, triggers, and child nodes located under those hidden aliases ARE NOT "
        "SHOWN HERE.",
        "# To see ALL paths, aliases, and triggers for a memory, use read_memory() on its URI.",
        "#",
        "# Legend: [#ID] = Memory ID, [★N] = priority (lower = higher)",
        "",
        "# ══════════════════════════════════════",
        f"# DOMAIN: {domain}://",
        "# ══════════════════════════════════════",
    ]
    for head in sorted(entries):
        out += ["", f"## {head}"]
        for uri, prio, n in sorted(entries[head], key=lambda e: str(e[0])):
            out.append(f"  - {uri} [#{n}] [★{prio}]")
    return "\n".join(out) + "\n"


def recent(graph: GraphReader, namespace: str, limit: int, requested: int, now_ms: int) -> str:
    top: list[str] = []
    for n in graph.recent_nodes(namespace):  # newest first: stop once enough are reachable
        if len(top) >= limit:
            break
        if graph.uris(namespace, n, 1):
            top.append(n)
    out = [
        "# Recently Modified Memories",
        f"# Generated: {when(now_ms)}",
        f"# Showing: {len(top)} most recent entries (requested: {requested})",
        "",
    ]
    if not top:
        out.append("(No memories found.)")
    for i, n in enumerate(top, 1):
        el = graph.content(namespace, n)
        assert el is not None
        us = graph.uris(namespace, n)
        uri, prio = us[0]
        found = graph.resolve(namespace, uri)
        disc = found[1].disclosure if found and found[1] else ""
        out.append(
            f"{i}. {uri}  [★{prio}]  modified: {when(written_ms(el.winner))} by {author(el.winner)}"
        )
        out.append(f"   disclosure: {disc or '(NOT SET — consider adding one)'}")
    return "\n".join(out) + "\n"


def glossary_view(graph: GraphReader, namespace: str, now_ms: int) -> str:
    keywords = graph.keywords(namespace)
    rows: list[tuple[str, list[str]]] = []
    for kw in sorted(keywords, key=str.casefold):
        targets = sorted(
            str(u)
            for n in keywords[kw]
            if graph.is_live(namespace, n)
            for u, _ in graph.uris(namespace, n)
        )
        if targets:
            rows.append((kw, targets))
    if not rows:
        return (
            "(No glossary keywords defined yet.)\nUse manage_triggers(uri, add=[...]) to bind "
            "trigger words to memory nodes.\n"
        )
    out = ["# Glossary Index", f"# Generated: {when(now_ms)}", f"# Total: {len(rows)} keywords", ""]
    for kw, targets in rows:
        out.append(f"- {kw}")
        out += [f"  -> {t}" for t in targets]
    return "\n".join(out) + "\n"


def history(
    graph: GraphReader, namespace: str, node: str, uri: str, limit: int
) -> tuple[str, list]:
    el = graph.content(namespace, node)
    versions = sorted(el.versions or [], key=lambda o: o.order, reverse=True) if el else []
    heads = set((el.heads or {}) if el else ())
    rows = []
    out = [
        f"# History of {uri}",
        f"# Memory ID: {node}",
        f"# Versions kept: {len(versions)} (newest first; roll back with rollback_memory, or "
        "undo the change that wrote a version with undo_change)",
        "",
    ]
    for at, op in enumerate(versions[:limit]):
        state = "deleted" if op.val is None else f"{len(op.val['text'])} chars"
        current = el is not None and op.id == el.winner.id
        cur = " [current]" if current else (" [concurrent head]" if op.id in heads else "")
        stamp = when(written_ms(op))
        if written_ms(op) != op_time_ms(op):
            stamp += f" (imported {when(op_time_ms(op))})"
        out.append(
            f"- {version_id(op)}{cur} {stamp} by {author(op)}: {state} (change {change_id(op)})"
        )
        older = next((v.val for v in versions[at + 1 :] if v.val is not None), None)
        if op.val is not None and older is not None:
            out += [f"  {h}" for h in hunks(older["text"], op.val["text"])] or [
                "  (same text as the version before)"
            ]
        elif op.val is not None:
            first = " ".join(op.val["text"].split())[:80]
            out.append(f"  {first}")
        rows.append(
            {
                "version": version_id(op),
                "change": change_id(op),
                "time": when(written_ms(op)),
                "client": op.by,
                "machine": op.node,
                "deleted": op.val is None,
                "current": el is not None and op.id == el.winner.id,
            }
        )
    return "\n".join(out) + "\n", rows


def _text_of(graph: GraphReader, namespace: str, node: str) -> str:
    el = graph.content(namespace, node)
    return live_text(el) if el is not None else ""


def diagnostic(graph: GraphReader, namespace: str, domain: str, now_ms: int) -> str:
    nodes = []
    for n in graph.live_nodes(namespace):
        us = [u for u, _ in graph.uris(namespace, n) if u.domain == domain]
        if us:
            nodes.append((n, us))
    sections: list[list[str]] = []
    missing = [
        str(us[0])
        for n, us in nodes
        if any(not p.disclosure.strip() for p in graph.placements(namespace, n))
    ]
    if missing:
        sections.append(
            [
                "## Missing disclosures (never recalled by trigger)",
                *[f"- {u}" for u in sorted(missing)],
            ]
        )
    crowded = []
    for n, us in [(root(domain), [Uri(domain, ())]), *nodes]:
        kids = graph.children(namespace, n)
        if len(kids) > CROWDED:
            crowded.append(f"- {us[0]} ({len(kids)} children)")
    if crowded:
        sections.append(["## Crowded parents (more than 10 children: consider grouping)", *crowded])
    dups = []
    for n, us in nodes:
        per_parent = Counter(p.parent for p in graph.placements(namespace, n))
        for parent, c in per_parent.items():
            if c > 1:
                where = show_uri(graph, namespace, parent) if parent[0] != "@" else parent
                dups.append(f"- {us[0]}: {c} names under the same parent ({where})")
    if dups:
        sections.append(
            ["## Duplicate aliases under the same parent (delete the redundant one)", *dups]
        )
    sizes = [(us[0], len(_text_of(graph, namespace, n))) for n, us in nodes]
    large = [f"- {uri} ({size} chars)" for uri, size in sizes if size > LARGE_CHARS]
    if large:
        sections.append(["## Large memories (consider splitting into children)", *large])
    conf = [k for k, _ in graph.conflicts(namespace)]
    if conf:
        sections.append([f"## Conflicts: {len(conf)} (read system://conflicts)"])
    orph = graph.orphans(namespace)
    if orph:
        sections.append([f"## Orphans: {len(orph)} unreachable memories (read system://orphans)"])
    dangling = sorted(
        kw
        for kw, bound in graph.keywords(namespace).items()
        if not any(graph.is_live(namespace, n) for n in bound)
    )
    if dangling:
        sections.append(
            ["## Keywords bound only to deleted memories", *[f"- {k}" for k in dangling]]
        )
    out = [
        f"# Diagnostic: {domain}://",
        f"# Generated: {when(now_ms)}",
        f"# Memories in domain: {len(nodes)}",
        "",
    ]
    if not sections:
        out.append("No issues found. Memory system is healthy.")
    for s in sections:
        out += [*s, ""]
    return "\n".join(out).rstrip("\n") + "\n"
