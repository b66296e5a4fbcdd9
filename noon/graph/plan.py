"""Write planning: turn one graph edit into the drafts of one all-or-nothing batch.

Every planner runs against a graph that is current with the fold the store is about to append
to (inside ``Store.write``'s plan, under the shard lock), so its checks (path free, parent
exists, expected version, no cycle) hold at the moment of writing, also with several writer
processes on one node. Planners raise :class:`GraphError` to refuse an edit and
:class:`MemoryNotFound` for a memory that is not there (both: :data:`REFUSED`); nothing is
written then.
"""

from __future__ import annotations

from dataclasses import dataclass

from noon.core.elements import boot_key, content_key, edge_key, keyword_key
from noon.core.ops import Draft, Op, OpId
from noon.errors import Invalid, NotFound
from noon.graph.quote import QuoteEdit, QuoteError, replace_quoted
from noon.graph.reader import (
    GraphReader,
    Placement,
    last_placement,
    live_text,
    resolve_past,
)
from noon.graph.uri import NODE_VIEW, Uri, check_name, is_root, new_node_id, parse

MAX_KEYWORD = 100


class GraphError(Invalid):
    """An edit the graph refuses. The message tells the agent what to do instead."""


class MemoryNotFound(NotFound):
    """A URI (or a ``system://node/<id>``) that names no memory: not found, not invalid (HTTP
    404 on the page). The message points an agent at its tools; a command says its own next
    step from :attr:`uri` (None for a memory id)."""

    def __init__(self, message: str, uri: Uri | None) -> None:
        super().__init__(message)
        self.uri = uri


REFUSED: tuple[type[Exception], ...] = (GraphError, MemoryNotFound)
"""Every refusal a planner raises (an edit that makes no sense, or a memory that is not there)."""


def edge_val(child: str, priority: int, disclosure: str) -> dict[str, object]:
    return {"child": child, "priority": priority, "disclosure": disclosure}


def not_found(graph: GraphReader, namespace: str, uri: Uri) -> MemoryNotFound:
    """The refusal for a URI that names no memory, pointing at a domain that has memories."""
    domains = graph.domains(namespace)
    if uri.domain in domains:
        where = f"read system://index/{uri.domain} to see what exists"
    elif domains:
        where = (
            f"note that domain '{uri.domain}' has no memories (domains with memories: "
            f"{', '.join(domains)}; read system://index/{domains[0]})"
        )
    else:
        where = "note that there are no memories yet (create_memory under core:// makes one)"
    return MemoryNotFound(f"Memory '{uri}' not found. Search with search_memory, or {where}.", uri)


def resolve(graph: GraphReader, namespace: str, uri: Uri) -> tuple[str, Placement | None]:
    found = graph.resolve(namespace, uri)
    if found is None:
        raise not_found(graph, namespace, uri)
    return found


def resolve_memory(graph: GraphReader, namespace: str, uri: Uri) -> tuple[str, Placement]:
    node, placement = resolve(graph, namespace, uri)
    if placement is None:
        raise GraphError(f"'{uri}' is the root of a domain, not a memory.")
    return node, placement


def check_parent(graph: GraphReader, namespace: str, parent: Uri) -> str:
    found = graph.resolve(namespace, parent)
    if found is None:
        raise GraphError(
            f"Parent '{parent}' does not exist. Create the parent first, or use "
            f"'{parent.domain}://' to place it at the top of the domain."
        )
    return found[0]


def check_free(graph: GraphReader, namespace: str, uri: Uri) -> None:
    if graph.resolve(namespace, uri) is not None:
        raise GraphError(
            f"Path '{uri}' already exists. Read it and update it with update_memory, or choose "
            "another title."
        )


def check_disclosure(disclosure: str) -> str:
    if not disclosure.strip():
        raise GraphError(
            "disclosure is required: describe WHEN to recall this memory (e.g. 'When the user "
            "asks about deployment'). A memory without a trigger is never recalled."
        )
    return disclosure.strip()


def check_priority(priority: int) -> int:
    if not 0 <= priority <= 1000:
        raise GraphError(
            f"priority must be between 0 and 1000 (lower = recalled first), got {priority}."
        )
    return priority


def _heads_of_child(
    graph: GraphReader, key: tuple[str, ...], child: str
) -> tuple[OpId, ...] | None:
    """The heads of an edge that are about ``child`` (or tombstones): what a write about that
    placement replaces, leaving a concurrently placed *other* child alone."""
    el = graph.element(key)
    if el is None or not el.heads:
        return None
    return tuple(sorted(i for i, h in el.heads.items() if h.val is None or h.val["child"] == child))


def place(
    graph: GraphReader,
    namespace: str,
    parent: str,
    name: str,
    child: str,
    priority: int,
    disclosure: str,
) -> Draft:
    key = edge_key(namespace, parent, name)
    return Draft(key, edge_val(child, priority, disclosure), _heads_of_child(graph, key, child))


def unplace(graph: GraphReader, namespace: str, pl: Placement) -> Draft:
    """Remove one placement. When a concurrent writer placed another node under the same name,
    that node takes the name over instead of disappearing with the tombstone."""
    key = edge_key(namespace, pl.parent, pl.key_name)
    el = graph.element(key)
    others = (
        [
            h
            for h in (el.heads or {}).values()
            if el is not None and h.val is not None and h.val["child"] != pl.child
        ]
        if el is not None
        else []
    )
    if others:
        best = max(others, key=lambda o: o.order)
        return Draft(key, dict(best.val or {}))
    return Draft(key, None)


def auto_name(graph: GraphReader, namespace: str, parent: str) -> str:
    """The next number after the parent's highest numbered child: free, since every larger
    number would be the highest; a read of one index row, however many children the parent has."""
    return str(graph.highest_number(namespace, parent) + 1)


def create(
    graph: GraphReader,
    namespace: str,
    parent: Uri,
    title: str | None,
    text: str,
    priority: int,
    disclosure: str,
) -> tuple[list[Draft], str, Uri]:
    disclosure = check_disclosure(disclosure)
    check_priority(priority)
    parent_node = check_parent(graph, namespace, parent)
    if title is not None:
        check_name(title)
    name = title if title is not None else auto_name(graph, namespace, parent_node)
    uri = parent.child(name)
    check_free(graph, namespace, uri)
    node = new_node_id()
    drafts = [
        Draft(content_key(namespace, node), {"text": text}),
        place(graph, namespace, parent_node, name, node, priority, disclosure),
    ]
    return drafts, node, uri


def current_text(graph: GraphReader, namespace: str, node: str, uri: Uri) -> str:
    el = graph.content(namespace, node)
    if el is None:
        raise GraphError(f"Memory '{uri}' has no content.")
    return live_text(el)


@dataclass(frozen=True)
class QuotedEdit:
    edit: QuoteEdit
    """The edit; ``edit.text`` is the memory's new text."""
    concurrent: Op | None
    """The concurrent version the quote matched in, when it did not match the current one."""


def edit_quoted(
    graph: GraphReader, namespace: str, node: str, uri: Uri, old: str, new: str, replace_all: bool
) -> QuotedEdit:
    """Apply a quote edit to the memory's current text, or, when the memory has concurrent
    versions and the quote is in none but one of the others (an agent quoting the version it
    read, which lost), to that version: the edit then continues what that agent saw, and the
    write (naming every head) settles the conflict. Raises :class:`QuoteError` with the
    current text's hint when the quote is nowhere."""
    current = current_text(graph, namespace, node, uri)
    try:
        return QuotedEdit(replace_quoted(current, old, new, replace_all=replace_all), None)
    except QuoteError as exc:
        el = graph.content(namespace, node)
        if exc.kind != "not_found" or el is None or not el.conflicted:
            raise
        others = [h for h in el.heads.values() if h is not el.winner and h.val is not None]
        for head in sorted(others, key=lambda o: o.order, reverse=True):
            text: str = (head.val or {})["text"]
            try:
                edit = replace_quoted(text, old, new, replace_all=replace_all)
            except QuoteError:
                continue
            return QuotedEdit(edit, head)
        raise


def set_text(namespace: str, node: str, text: str) -> Draft:
    """A new content version replacing every current head (settles concurrent versions)."""
    return Draft(content_key(namespace, node), {"text": text})


def locate(
    graph: GraphReader, namespace: str, text: str
) -> tuple[str, Uri | None, Placement | None]:
    """A memory by URI, or by ``system://node/<id>`` (how orphans are addressed)."""
    if text.strip().startswith(NODE_VIEW):
        node = text.strip()[len(NODE_VIEW) :].strip("/")
        if graph.content(namespace, node) is None:
            raise MemoryNotFound(
                f"No memory with id '{node}'. See system://orphans for unplaced ones.", None
            )
        return node, None, None
    uri = parse(text)
    node, pl = resolve_memory(graph, namespace, uri)
    return node, uri, pl


def locate_past(graph: GraphReader, namespace: str, text: str) -> tuple[str, Uri | None]:
    """A memory as :func:`locate` finds it, or, for a URI whose memory was deleted since, the
    memory it named last (its history is still held until the deletion is collected)."""
    try:
        node, uri, _ = locate(graph, namespace, text)
        return node, uri
    except REFUSED as refusal:
        if text.strip().startswith(NODE_VIEW):
            raise
        uri = parse(text)
        past = resolve_past(graph, namespace, uri)
        if past is None or graph.content(namespace, past) is None:
            raise refusal from None
        return past, uri


def delete(
    graph: GraphReader, namespace: str, node: str, label: str, pl: Placement | None, recursive: bool
) -> tuple[list[Draft], int]:
    """Remove the placement ``pl``. When it was the node's last one (or ``pl`` is None: an
    orphan addressed by id), the node is deleted too; with ``recursive`` so is every descendant
    no other path reaches. Returns the drafts and the number of memories deleted."""
    placements = graph.placements(namespace, node)
    if pl is not None and len(placements) > 1:
        return [unplace(graph, namespace, pl)], 0
    drafts = [unplace(graph, namespace, p) for p in placements]
    doomed = {node}
    below = graph.subtree(namespace, node)[1:]
    changed = True
    while changed:
        changed = False
        for n in below:
            if n not in doomed and all(p.parent in doomed for p in graph.placements(namespace, n)):
                doomed.add(n)
                changed = True
    stranded = [n for n in doomed if n != node]
    if stranded and not recursive:
        shown = [kid.name for kid in graph.children(namespace, node) if kid.child in doomed]
        raise GraphError(
            f"Cannot delete '{label}': {len(stranded)} memory(ies) below it would become "
            f"unreachable (children: {', '.join(shown[:5])}{', ...' if len(shown) > 5 else ''})."
            " Move or delete them first, or pass recursive=true to delete the whole subtree."
        )
    for n in sorted(doomed):
        drafts.append(Draft(content_key(namespace, n), None))
        for kid in graph.children(namespace, n):
            drafts.append(Draft(edge_key(namespace, n, kid.key_name), None))
        for kw in graph.keywords_of(namespace, n):
            drafts.append(Draft(keyword_key(namespace, kw, n), None))
        if n in graph.boot_nodes(namespace):
            drafts.append(Draft(boot_key(namespace, n), None))
    return _dedupe(drafts), len(doomed)


def _dedupe(drafts: list[Draft]) -> list[Draft]:
    """One draft per element (a batch writes each element once)."""
    seen: dict[tuple[str, ...], Draft] = {}
    for d in drafts:
        seen.setdefault(d.el, d)
    return list(seen.values())


def check_no_cycle(
    graph: GraphReader, namespace: str, node: str, new_parent: str, what: str
) -> None:
    if not is_root(new_parent) and graph.is_ancestor(namespace, node, new_parent):
        raise GraphError(
            f"Cannot {what}: the memory would sit inside its own subtree (a cycle). Choose a "
            "parent outside it."
        )


def alias(
    graph: GraphReader, namespace: str, new_uri: Uri, node: str, priority: int, disclosure: str
) -> Draft:
    if new_uri.is_root:
        raise GraphError("Cannot create an alias at the root of a domain.")
    check_priority(priority)
    parent = check_parent(graph, namespace, new_uri.parent())
    check_name(new_uri.path[-1], what="alias name")
    check_free(graph, namespace, new_uri)
    check_no_cycle(graph, namespace, node, parent, f"create alias '{new_uri}'")
    return place(graph, namespace, parent, new_uri.path[-1], node, priority, disclosure)


def move(
    graph: GraphReader,
    namespace: str,
    node: str,
    old: Placement | None,
    new_uri: Uri,
    priority: int | None,
    disclosure: str | None,
) -> list[Draft]:
    """Place ``node`` at ``new_uri`` and remove ``old`` in one batch. With ``old`` None (an
    orphan addressed by id) this only places it."""
    if new_uri.is_root:
        raise GraphError("Cannot move a memory onto the root of a domain; give it a name.")
    parent = check_parent(graph, namespace, new_uri.parent())
    name = new_uri.path[-1]
    check_name(name, what="new name")
    check_free(graph, namespace, new_uri)
    check_no_cycle(graph, namespace, node, parent, f"move to '{new_uri}'")
    # Unnamed, priority and disclosure stay those of the placement moved, or for an orphan or a
    # deleted memory placed again, those of the placement it had last.
    before = old if old is not None else last_placement(graph, namespace, node)
    prio = before.priority if priority is None and before is not None else (priority or 0)
    disc = before.disclosure if disclosure is None and before is not None else (disclosure or "")
    if old is None and not disc.strip():
        raise GraphError(
            "disclosure is required when placing an orphan that never had one: say when to "
            "recall it (disclosure='When ...')."
        )
    check_priority(prio)
    drafts = [place(graph, namespace, parent, name, node, prio, disc)]
    if old is not None:
        drafts.append(unplace(graph, namespace, old))
    el = graph.content(namespace, node)
    if old is None and el is not None and any(h.val is None for h in el.heads.values()):
        # Placing again a memory that a concurrent delete removed keeps its text: the new
        # version replaces the delete (and any concurrent version) as the current one.
        drafts.append(set_text(namespace, node, live_text(el)))
    return drafts


def check_keyword(kw: str) -> str:
    kw = kw.strip()
    if not kw or len(kw) > MAX_KEYWORD or "\n" in kw:
        raise GraphError(f"Invalid keyword {kw!r}: use 1 to {MAX_KEYWORD} characters on one line.")
    return kw


def triggers(
    graph: GraphReader, namespace: str, node: str, add: list[str], remove: list[str]
) -> tuple[list[Draft], dict[str, list[str]]]:
    adds = list(dict.fromkeys(check_keyword(k) for k in add))
    removes = list(dict.fromkeys(check_keyword(k) for k in remove))
    both = sorted(set(adds) & set(removes))
    if both:
        raise GraphError(f"Cannot add and remove the same keywords at once: {', '.join(both)}")
    have = set(graph.keywords_of(namespace, node))
    report: dict[str, list[str]] = {"added": [], "existing": [], "removed": [], "missing": []}
    drafts = []
    for kw in adds:
        if kw in have:
            report["existing"].append(kw)
        else:
            report["added"].append(kw)
            drafts.append(Draft(keyword_key(namespace, kw, node), {}))
    for kw in removes:
        if kw in have:
            report["removed"].append(kw)
            drafts.append(Draft(keyword_key(namespace, kw, node), None))
        else:
            report["missing"].append(kw)
    return drafts, report


def boot(graph: GraphReader, namespace: str, add: list[str], remove: list[str]) -> list[Draft]:
    have = graph.boot_nodes(namespace)
    drafts = [Draft(boot_key(namespace, n), {}) for n in dict.fromkeys(add) if n not in have]
    drafts += [Draft(boot_key(namespace, n), None) for n in dict.fromkeys(remove) if n in have]
    return drafts
