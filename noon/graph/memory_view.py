"""One memory as an agent reads it: its text, URIs, children, glossary links and the notes
replication can leave (concurrent versions, other placements). Format as Nocturne's; the
``system://`` views are in :mod:`noon.graph.views`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from noon.core.elements import edge_key
from noon.core.hlc import utc
from noon.core.ops import Op
from noon.graph.glossary import MAX_LINKS, Glossary
from noon.graph.reader import (
    GraphReader,
    Placement,
    last_placement,
    live_text,
    op_time_ms,
    past_uri,
    version_id,
    written_ms,
)
from noon.graph.uri import DEFAULT_DOMAIN, Uri, node_view

RULE = "=" * 60
SNIPPET = 100


def when(ms: int) -> str:
    return utc(ms)


def show_uri(graph: GraphReader, namespace: str, node: str) -> str:
    uri = graph.primary_uri(namespace, node)
    return str(uri) if uri is not None else node_view(node)


def show_uri_or_past(graph: GraphReader, namespace: str, node: str) -> str:
    """The memory's URI; for one no root reaches, its id and the URI it had last."""
    uri = graph.primary_uri(namespace, node)
    if uri is not None:
        return str(uri)
    past = past_uri(graph, namespace, node)
    return node_view(node) + (f" (was {past})" if past is not None else "")


def restore_call(graph: GraphReader, namespace: str, node: str) -> str:
    """The ``move_memory`` call that places a deleted or orphaned memory again where it was (or
    at the top of ``core://`` when that place is gone or taken), as it would be accepted: the
    priority and disclosure it had come back by themselves."""
    last = last_placement(graph, namespace, node)
    target = past_uri(graph, namespace, node)
    if (
        target is None
        or graph.resolve(namespace, target) is not None
        or (len(target.path) > 1 and graph.resolve(namespace, target.parent()) is None)
    ):
        target = Uri(DEFAULT_DOMAIN, (last.name if last is not None else node,))
    extra = "" if last is not None and last.disclosure.strip() else ", disclosure='When ...'"
    return f"move_memory(uri='{node_view(node)}', new_uri='{target}'{extra})"


def author(op: Op) -> str:
    """Who wrote an op: its client on its machine."""
    return f"{op.by or 'unknown'} on {op.node}"


@dataclass
class MemoryRead:
    text: str
    data: dict[str, Any] = field(default_factory=dict)


def memory(
    graph: GraphReader,
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
        lines.append(f"Last Modified: {when(written_ms(el.winner))} by {author(el.winner)}")
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
        shown_links = links[:MAX_LINKS]
        lines += [f"- {', '.join('@' + k for k in kws)} -> {target}" for target, kws in shown_links]
        if len(links) > MAX_LINKS:
            lines.append(
                f"- ... and {len(links) - MAX_LINKS} more linked memories (only the first "
                f"{MAX_LINKS} are listed; system://glossary lists every keyword)"
            )
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
        "memory_id": node,
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


def _notes(graph: GraphReader, namespace: str, node: str, uris: list[Uri]) -> list[str]:
    el = graph.content(namespace, node)
    notes: list[str] = []
    if el is not None and el.conflicted and el.heads:
        others = [h for h in el.heads.values() if h.id != el.winner.id]
        notes.append(
            f"⚠ CONCURRENT VERSIONS: this memory was edited on {len(el.heads)} machines at once. "
            "Shown is the latest; the other version(s) follow. Merge them with update_memory "
            "(any edit settles the conflict)."
        )
        for h in sorted(others, key=lambda o: o.order, reverse=True):
            body = "(deleted)" if h.val is None else h.val["text"]
            notes += [
                "",
                f"--- concurrent version {version_id(h)} ({author(h)}, {when(written_ms(h))}) ---",
                body,
                "--- end of concurrent version ---",
            ]
        notes += ["", f"--- current version {version_id(el.winner)} ---"]
    if el is not None and el.deleted:
        by = f"{author(el.winner)} at {when(op_time_ms(el.winner))}"
        placed = graph.placements(namespace, node)
        if placed:
            keepers = sorted(
                {
                    edge.winner.node
                    for p in placed
                    if (edge := graph.element(edge_key(namespace, p.parent, p.key_name)))
                    is not None
                }
                - {el.winner.node}
            )
            where = (
                f"while another machine ({', '.join(keepers)}) kept it placed"
                if keepers
                else f"but it is still placed at {uris[0] if uris else node_view(node)}"
            )
            notes.append(
                f"⚠ DELETED by {by}, {where}. Shown is its last text. Update it to keep it, "
                "or delete it."
            )
        else:
            notes.append(
                f"⚠ DELETED by {by}. Shown is its last text; its versions stay in "
                f"system://history/{node_view(node)} until the deletion is collected. Restore it "
                f"with {restore_call(graph, namespace, node)}."
            )
    elif not uris:
        notes.append(
            "⚠ ORPHAN: no domain root reaches this memory (concurrent moves or deletes). "
            f"Place it again with {restore_call(graph, namespace, node)}."
        )
    return notes


def _glossary_links(
    graph: GraphReader, glossary: Glossary, namespace: str, node: str, text: str
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
