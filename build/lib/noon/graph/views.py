"""Text an agent reads: one memory, and the generated ``system://`` views.

Every view is computed from the graph on read and never stored. Formats follow Nocturne's
(what agents prompted for it already expect), with node ids and version ids in place of row
ids, and notes where replication can leave more than one version of something.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from noon.core.elements import CONTENT
from noon.core.ops import Op
from noon.graph.glossary import Glossary
from noon.graph.model import Graph, Placement, live_text, op_time_ms, version_id
from noon.graph.uri import Uri, node_view, root, root_domain

RULE = "=" * 60
CROWDED = 10
LARGE_CHARS = 3200
SNIPPET = 100


def when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def show_uri(graph: Graph, namespace: str, node: str) -> str:
    uri = graph.primary_uri(namespace, node)
    return str(uri) if uri is not None else node_view(node)


def _author(op: Op) -> str:
    return f"{op.by or 'unknown'} on {op.node}"


@dataclass
class MemoryRead:
    text: str
    data: dict[str, Any] = field(default_factory=dict)


def memory(
    graph: Graph,
    glossary: Glossary,
    namespace: str,
    node: str,
    uri: Uri | None,
    placement: Placement | None,
) -> MemoryRead:
    """One memory with its metadata, glossary links and children."""
    el = graph.content(namespace, node)
    uris = [u for u, _ in graph.uris(namespace, node)]
    shown = str(uri) if uri is not None else (str(uris[0]) if uris else node_view(node))
    text = live_text(el) if el is not None else ""
    keywords = graph.keywords_of(namespace, node)
    lines = [RULE, "", f"MEMORY: {shown}", f"Memory ID: {node}"]
    version = version_id(el.winner) if el is not None else None
    if el is not None:
        lines.append(f"Version: {version}")
    lines.append(f"Other Aliases: {max(len(uris) - 1, 0)}")
    for other in uris:
        if str(other) != shown:
            lines.append(f"  - {other}")
    if placement is not None:
        lines.append(f"Priority: {placement.priority}")
    if el is not None:
        lines.append(f"Last Modified: {when(op_time_ms(el.winner))} by {_author(el.winner)}")
    if placement is not None:
        lines.append(f"Disclosure: {placement.disclosure or '(not set)'}")
    lines.append(f"Keywords: [{', '.join(keywords)}]" if keywords else "Keywords: (none)")
    notes = _notes(graph, namespace, node, uris)
    lines += ["", RULE, ""]
    if notes:
        lines += [*notes, ""]
    lines.append(text)
    links = _glossary_links(graph, glossary, namespace, node, text)
    if links:
        lines += ["", RULE, "", "GLOSSARY (keywords detected in this content)", ""]
        lines += [f"- {', '.join('@' + k for k in kws)} -> {target}" for target, kws in links]
    kids = graph.children(namespace, node)
    base = uri if uri is not None else (uris[0] if uris else None)
    if kids:
        lines += [
            "",
            RULE,
            "",
            "CHILD MEMORIES (Use 'read_memory' with URI to access)",
            "",
            RULE,
            "",
        ]
        for kid in kids:
            kid_uri = (
                str(base.child(kid.name))
                if base is not None
                else show_uri(graph, namespace, kid.child)
            )
            lines.append(f"- URI: {kid_uri}  ")
            lines.append(f"  Priority: {kid.priority}  ")
            if kid.disclosure:
                lines.append(f"  When to recall: {kid.disclosure}  ")
            else:
                kel = graph.content(namespace, kid.child)
                snip = " ".join((live_text(kel) if kel else "").split())
                more = "..." if len(snip) > SNIPPET else ""
                lines.append("  When to recall: (not set)  ")
                lines.append(f"  Snippet: {snip[:SNIPPET]}{more}  ")
            if not graph.is_live(namespace, kid.child):
                lines.append("  ⚠ deleted on another machine while placed here  ")
            lines.append("")
    data = {
        "uri": shown,
        "node_id": node,
        "version": version,
        "aliases": [str(u) for u in uris if str(u) != shown],
        "priority": placement.priority if placement else None,
        "disclosure": placement.disclosure if placement else None,
        "keywords": keywords,
        "conflicted": bool(el is not None and el.conflicted),
        "deleted": bool(el is None or el.deleted),
        "heads": sorted(version_id(h) for h in (el.heads or {}).values()) if el else [],
        "children": [k.name for k in kids],
    }
    return MemoryRead("\n".join(lines).rstrip("\n") + "\n", data)


def _notes(graph: Graph, namespace: str, node: str, uris: list[Uri]) -> list[str]:
    el = graph.content(namespace, node)
    notes: list[str] = []
    if el is not None and el.conflicted and el.heads:
        others = [h for h in el.heads.values() if h is not el.winner]
        notes.append(
            f"⚠ CONCURRENT VERSIONS: this memory was edited on {len(el.heads)} machines at once. "
            "Shown is the latest; the other version(s) follow. Merge them with update_memory "
            "(any edit settles the conflict)."
        )
        for h in sorted(others, key=lambda o: o.order, reverse=True):
            body = "(deleted)" if h.val is None else h.val["text"]
            notes += [
                "",
                f"--- concurrent version {version_id(h)} ({_author(h)}, {when(op_time_ms(h))}) ---",
                body,
                "--- end of concurrent version ---",
            ]
        notes += ["", f"--- current version {version_id(el.winner)} ---"]
    if el is not None and el.deleted:
        notes.append(
            f"⚠ DELETED by {_author(el.winner)} at {when(op_time_ms(el.winner))}, while another "
            "machine kept it placed. Shown is its last text. Update it to keep it, or delete it."
        )
    if not uris:
        notes.append(
            "⚠ ORPHAN: no domain root reaches this memory (concurrent moves or deletes). "
            "Place it again with move_memory."
        )
    return notes


def _glossary_links(
    graph: Graph, glossary: Glossary, namespace: str, node: str, text: str
) -> list[tuple[str, list[str]]]:
    per_target: dict[str, set[str]] = {}
    for kw, nodes in glossary.find(namespace, text).items():
        for n in nodes:
            if n == node or not graph.is_live(namespace, n):
                continue
            target = graph.primary_uri(namespace, n)
            if target is not None:
                per_target.setdefault(str(target), set()).add(kw)
    return sorted(((t, sorted(k)) for t, k in per_target.items()), key=lambda e: (-len(e[1]), e[0]))


def boot(graph: Graph, glossary: Glossary, namespace: str, now_ms: int) -> str:
    nodes = graph.boot_nodes(namespace)
    loaded: list[tuple[tuple[int, str], str]] = []
    failed: list[str] = []
    for n in nodes:
        if not graph.is_live(namespace, n):
            failed.append(f"- {n}: deleted")
            continue
        us = graph.uris(namespace, n)
        if not us:
            loaded.append(
                ((99, node_view(n)), memory(graph, glossary, namespace, n, None, None).text)
            )
            continue
        uri, prio = us[0]
        found = graph.resolve(namespace, uri)
        pl = found[1] if found else None
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


def index(graph: Graph, namespace: str, domain: str, now_ms: int) -> str:
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


def recent(graph: Graph, namespace: str, limit: int, requested: int, now_ms: int) -> str:
    def stamp(n: str) -> tuple[int, str, int]:
        el = graph.content(namespace, n)
        return el.winner.order if el is not None else (0, "", 0)

    live = list(graph.live_nodes(namespace))
    want = limit * 2 + 8
    while True:  # reachability is checked only for the newest few, not every memory
        newest = heapq.nlargest(want, live, key=stamp)
        top = [n for n in newest if graph.uris(namespace, n, 1)][:limit]
        if len(top) >= limit or len(newest) < want:
            break
        want *= 4
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
            f"{i}. {uri}  [★{prio}]  modified: {when(op_time_ms(el.winner))}"
            f" by {_author(el.winner)}"
        )
        out.append(f"   disclosure: {disc or '(NOT SET — consider adding one)'}")
    return "\n".join(out) + "\n"


def glossary_view(graph: Graph, namespace: str, now_ms: int) -> str:
    g = graph.ns(namespace)
    rows: list[tuple[str, list[str]]] = []
    for kw in sorted(g.keywords, key=str.casefold):
        targets = sorted(
            str(u)
            for n in g.keywords[kw]
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


def orphans(graph: Graph, namespace: str) -> str:
    found = graph.orphans(namespace)
    if not found:
        return "# Orphaned Memories\n\n(None: every memory is reachable from a domain root.)\n"
    out = [
        "# Orphaned Memories",
        f"# Total: {len(found)}",
        "# No domain root reaches these (concurrent moves, a cycle, or a parent deleted on "
        "another machine). Nothing is lost: read one by its system://node URI and place it "
        "with move_memory(uri=<that URI>, new_uri=...), or delete it.",
        "",
    ]
    for n in found:
        el = graph.content(namespace, n)
        snip = " ".join((live_text(el) if el else "").split())[:SNIPPET]
        last = [f"{p.parent}/{p.name}" for p in graph.placements(namespace, n)]
        out.append(f"- {node_view(n)}")
        out.append(f"  Snippet: {snip}")
        if last:
            out.append(f"  Still placed under (unreachable): {', '.join(last)}")
    return "\n".join(out) + "\n"


def conflicts(graph: Graph, namespace: str) -> str:
    items = graph.conflicts(namespace)
    if not items:
        return "# Conflicts\n\n(None: no memory has concurrent versions.)\n"
    out = [
        "# Conflicts",
        f"# Total: {len(items)}",
        "# Concurrent edits on different machines. The latest version is what reads show; "
        "the others are kept. Any later edit of the memory (or placement) settles it.",
        "",
    ]
    for key, el in items:
        heads = sorted((el.heads or {}).values(), key=lambda o: o.order, reverse=True)
        if key[0] == CONTENT:
            node = key[2]
            what = (
                "deleted while placed elsewhere"
                if el.deleted and not el.conflicted
                else "concurrent content versions"
            )
            out.append(f"- {show_uri(graph, namespace, node)} ({what})")
        else:
            parent, name = key[2], key[3]
            where = (
                f"{root_domain(parent)}://{name}"
                if parent == root(root_domain(parent))
                else f"{show_uri(graph, namespace, parent)}/{name}"
            )
            out.append(f"- placement {where} (concurrent placements)")
        for h in heads:
            mark = "winner" if h is el.winner else "other"
            if h.val is None:
                desc = "deleted"
            elif key[0] == CONTENT:
                desc = " ".join(h.val["text"].split())[:60]
            else:
                desc = f"-> {show_uri(graph, namespace, h.val['child'])}"
            out.append(f"  {version_id(h)} [{mark}] {when(op_time_ms(h))} by {_author(h)}: {desc}")
    return "\n".join(out) + "\n"


def history(graph: Graph, namespace: str, node: str, uri: str, limit: int) -> tuple[str, list]:
    el = graph.content(namespace, node)
    versions = sorted(el.versions or [], key=lambda o: o.order, reverse=True) if el else []
    heads = set((el.heads or {}) if el else ())
    rows = []
    out = [
        f"# History of {uri}",
        f"# Memory ID: {node}",
        f"# Versions kept: {len(versions)} (newest first; roll back with rollback_memory)",
        "",
    ]
    for op in versions[:limit]:
        state = "deleted" if op.val is None else f"{len(op.val['text'])} chars"
        current = el is not None and op is el.winner
        cur = " [current]" if current else (" [concurrent head]" if op.id in heads else "")
        out.append(f"- {version_id(op)}{cur} {when(op_time_ms(op))} by {_author(op)}: {state}")
        if op.val is not None:
            first = " ".join(op.val["text"].split())[:80]
            out.append(f"  {first}")
        rows.append(
            {
                "version": version_id(op),
                "time": when(op_time_ms(op)),
                "client": op.by,
                "machine": op.node,
                "deleted": op.val is None,
                "current": el is not None and op is el.winner,
            }
        )
    return "\n".join(out) + "\n", rows


def _text_of(graph: Graph, namespace: str, node: str) -> str:
    el = graph.content(namespace, node)
    return live_text(el) if el is not None else ""


def diagnostic(graph: Graph, namespace: str, domain: str, now_ms: int) -> str:
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
    g = graph.ns(namespace)
    dangling = sorted(
        kw for kw, ns_ in g.keywords.items() if not any(graph.is_live(namespace, n) for n in ns_)
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
