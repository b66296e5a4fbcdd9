"""Reading a URI: a memory, a domain root, a knowledge-graph entity (``kg://``), or a generated
``system://`` view; and the resources and resource templates that expose the same reads.

All of it runs inside :meth:`GraphService.read` (the graph is current and stays still).
"""

from __future__ import annotations

import time
from typing import Any

import mcp.types as types

from noon.app import conflicts, orphans
from noon.graph import memory_view, plan, views
from noon.graph.plan import GraphError
from noon.graph.uri import SYSTEM, Uri, node_view, parse
from noon.kg import uri as kg_uri
from noon.mcp.spec import ResourceSpec, ToolContext
from noon.store.access import GraphService, service
from noon.store.readmodel.graph import SqlGraph

RECENT_DEFAULT = 10
RECENT_MAX = 100
HISTORY_IN_VIEW = 50

Reading = tuple[str, dict[str, Any]]

VIEWS = (
    "system://boot, system://index/<domain>, system://recent[/N], system://glossary, "
    "system://diagnostic/<domain>, system://conflicts, system://orphans, "
    "system://history/<uri>, system://node/<id>"
)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _domain_arg(svc: GraphService, ns: str, rest: str, view: str) -> str:
    domains = svc.graph.domains(ns)
    if not rest:
        raise GraphError(
            f"{view} requires a domain (e.g. system://{view}/{domains[0] if domains else 'core'})"
            f". Domains with memories: {', '.join(domains) or '(none yet)'}."
        )
    if rest not in domains:
        raise GraphError(
            f"Unknown domain '{rest}'. Domains with memories: {', '.join(domains) or '(none yet)'}."
        )
    return rest


def read_view(svc: GraphService, ns: str, uri_text: str) -> Reading:
    g, now = svc.graph, _now_ms()
    rest = uri_text.strip()[len("system://") :].strip()
    head, _, tail = rest.partition("/")
    tail = tail.strip("/") if head != "history" else tail.strip()
    data: dict[str, Any] = {"uri": uri_text.strip(), "view": head}
    if head == "boot" and not tail:
        return views.boot(g, svc.glossary, ns, now), data
    if head == "index":
        return views.index(g, ns, _domain_arg(svc, ns, tail, "index"), now), data
    if head == "diagnostic":
        return views.diagnostic(g, ns, _domain_arg(svc, ns, tail, "diagnostic"), now), data
    if head == "recent":
        n = RECENT_DEFAULT
        if tail:
            try:
                n = int(tail)
            except ValueError:
                raise GraphError(
                    f"Invalid number in URI '{uri_text}'. Usage: system://recent or "
                    "system://recent/N (e.g. system://recent/20)"
                ) from None
        return views.recent(g, ns, max(1, min(RECENT_MAX, n)), n, now), data
    if head == "glossary" and not tail:
        return views.glossary_view(g, ns, now), data
    if head == "conflicts" and not tail:
        return _conflicts(g, ns), data
    if head == "orphans" and not tail:
        return _orphans(g, ns), data
    if head == "history":
        node, uri = plan.locate_past(g, ns, tail)
        text, rows = views.history(g, ns, node, str(uri or node_view(node)), HISTORY_IN_VIEW)
        return text, {**data, "memory_id": node, "versions": rows}
    if head == "node" and tail:
        node, _, _ = plan.locate(g, ns, uri_text)
        read = memory_view.memory(g, svc.glossary, ns, node, None, None)
        return read.text, {**data, **read.data}
    raise GraphError(f"Unknown view '{uri_text.strip()}'. Views: {VIEWS}.")


def _orphans(g: SqlGraph, ns: str) -> str:
    """``system://orphans``: every one of :func:`noon.app.orphans.found_in`, each with the call
    that places it again."""
    total, found = orphans.found_in(g, ns, 0, None)
    if not total:
        return "# Orphaned Memories\n\n(None: every memory is reachable from a domain root.)\n"
    out = [
        "# Orphaned Memories",
        f"# Total: {total}",
        "# No domain root reaches these (concurrent moves, a cycle, or a parent deleted on "
        "another machine). Nothing is lost: read one by its system://node URI, place it again "
        "with the call shown under it, or delete it.",
        "",
    ]
    for o in found:
        out.append(f"- {memory_view.show_uri_or_past(g, ns, o.node)}")
        out.append(f"  Snippet: {' '.join(o.text.split())[: memory_view.SNIPPET]}")
        out.append(f"  Place it again: {memory_view.restore_call(g, ns, o.node)}")
        if o.unreachable_under:
            out.append(f"  Still placed under (unreachable): {', '.join(o.unreachable_under)}")
    return "\n".join(out) + "\n"


def _conflicts(g: SqlGraph, ns: str) -> str:
    """``system://conflicts``: :func:`noon.app.conflicts.found_in`, each version on a line."""
    found = conflicts.found_in(g, ns)
    if not found:
        return "# Conflicts\n\n(None: no memory has concurrent versions.)\n"
    out = [
        "# Conflicts",
        f"# Total: {len(found)}",
        "# Concurrent edits on different machines. The latest version is what reads show; "
        "the others are kept. Any later edit of the memory (or placement) settles it.",
        "",
    ]
    for c in found:
        if c.node is not None:
            alone = c.deleted_while_placed and len(c.heads) == 1
            what = "deleted while placed elsewhere" if alone else "concurrent content versions"
            out.append(f"- {memory_view.show_uri_or_past(g, ns, c.node)} ({what})")
        else:
            parent = c.parent_uri or ""
            where = parent + (c.name or "") if parent.endswith("://") else f"{parent}/{c.name}"
            out.append(f"- placement {where} (concurrent placements)")
        for v in c.versions:
            if c.node is not None:
                desc = "deleted" if v.text is None else " ".join(v.text.split())[:60]
            else:
                desc = "deleted" if v.child is None else f"-> {v.child}"
            mark = "winner" if v.winner else "other"
            by = f"{v.client} on {v.machine}"
            out.append(f"  {v.version} [{mark}] {memory_view.when(v.written_ms)} by {by}: {desc}")
    return "\n".join(out) + "\n"


def read(svc: GraphService, ns: str, uri_text: str) -> Reading:
    """What ``read_memory`` shows for ``uri_text``."""
    if uri_text.strip().lower().startswith(f"{SYSTEM}://"):
        return read_view(svc, ns, uri_text)
    name = kg_uri.entity_name(uri_text.strip())
    if name is not None:
        return _read_entity(svc, ns, name)
    uri = parse(uri_text)
    if uri.is_root:
        return _read_root(svc, ns, uri)
    node, placement = plan.resolve(svc.graph, ns, uri)
    r = memory_view.memory(svc.graph, svc.glossary, ns, node, uri, placement)
    return r.text, r.data


def _read_entity(svc: GraphService, ns: str, name: str) -> Reading:
    """``kg://<name>``: a knowledge-graph entity, read-only (edited with the kg tools)."""
    view = svc.store.kg(ns)
    if not name:
        return kg_uri.render_index(view), {"uri": kg_uri.SCHEME}
    text = kg_uri.render_entity(view, name)
    if text is None:
        raise GraphError(f"No entity named '{name}' in the knowledge graph.")
    return text, {"uri": kg_uri.SCHEME + name}


def _read_root(svc: GraphService, ns: str, uri: Uri) -> Reading:
    kids = svc.graph.children(ns, f"@{uri.domain}")
    lines = [
        memory_view.RULE,
        "",
        f"MEMORY: {uri}",
        f"Root of domain '{uri.domain}'.",
        "",
        memory_view.RULE,
        "",
        "CHILD MEMORIES (Use 'read_memory' with URI to access)",
        "",
    ]
    if not kids:
        lines.append("(empty: create the first memory here with create_memory)")
    for k in kids:
        lines += [
            f"- URI: {uri.child(k.name)}  ",
            f"  Priority: {k.priority}  ",
            f"  When to recall: {k.disclosure or '(not set)'}  ",
            "",
        ]
    return "\n".join(lines) + "\n", {"uri": str(uri), "children": [k.name for k in kids]}


# -- resources -------------------------------------------------------------------------------


def read_resource(ctx: ToolContext, uri: str) -> str:
    """A resource's text: the same as ``read_memory`` shows for the URI."""
    return service(ctx.store).read(lambda s: read(s, ctx.namespace, uri)[0])


def _fixed(uri: str, name: str, title: str, description: str) -> ResourceSpec:
    return ResourceSpec(
        uri, name, title, description, "text/plain", lambda ctx: read_resource(ctx, uri)
    )


RESOURCES = [
    _fixed(
        "system://boot",
        "boot",
        "Boot memories",
        "The memories every session starts with, plus recent changes.",
    ),
    _fixed(
        "system://recent",
        "recent",
        "Recently modified memories",
        "The ten most recently modified memories.",
    ),
    _fixed(
        "system://glossary",
        "glossary",
        "Glossary",
        "Every glossary keyword and the memories it links to.",
    ),
    _fixed(
        "system://conflicts",
        "conflicts",
        "Conflicts",
        "Memories edited concurrently on different machines.",
    ),
    _fixed(
        "system://orphans",
        "orphans",
        "Orphans",
        "Memories no domain root reaches; place them with move_memory.",
    ),
]


def _template(template: str, name: str, title: str, description: str) -> types.ResourceTemplate:
    return types.ResourceTemplate(
        uri_template=template,
        name=name,
        title=title,
        description=description,
        mime_type="text/plain",
    )


TEMPLATES = [
    _template(
        "{domain}://{+path}",
        "memory",
        "Memory",
        "A memory by URI (e.g. core://agent/identity), as read_memory shows it.",
    ),
    _template("system://index/{domain}", "index", "Domain index", "Every memory of a domain."),
    _template(
        "system://recent/{n}", "recent-n", "Recently modified", "The N most recently modified."
    ),
    _template(
        "system://diagnostic/{domain}",
        "diagnostic",
        "Diagnostic",
        "Crowded parents, stale and orphaned memories of a domain.",
    ),
    _template(
        "system://history/{+uri}", "history", "History", "A memory's kept versions, newest first."
    ),
    _template("system://node/{id}", "node", "Memory by id", "A memory by its id (also orphans)."),
    _template("kg://{name}", "entity", "Knowledge-graph entity", "An entity of the kg tools."),
]
