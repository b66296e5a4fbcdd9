"""Creating, editing, placing and deleting memories: each use case plans inside
:meth:`~noon.store.store.Store.write` (through :meth:`GraphService.write`), so its checks (path
free, parent exists, no cycle, expected version) hold at the moment of writing, and a refusal
raised by any planning run writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from noon.app.actor import Actor
from noon.app.versions import expect_version
from noon.core.elements import CONTENT, edge_key
from noon.core.ops import Draft, Op
from noon.errors import Conflict, Invalid
from noon.graph import plan
from noon.graph.plan import GraphError
from noon.graph.quote import QuoteError, append_text
from noon.graph.reader import GraphReader, Placement, live_text, version_id
from noon.graph.uri import Uri, parse
from noon.store.access import GraphService
from noon.store.readmodel.graph import SqlGraph


@dataclass(frozen=True)
class Created:
    uri: Uri
    node: str
    version: str


def create(
    svc: GraphService,
    who: Actor,
    parent: str,
    title: str | None,
    content: str,
    priority: int,
    disclosure: str,
    meanwhile: Callable[[str], None] | None = None,
) -> Created:
    """A new memory under ``parent`` (a memory or a domain root), named ``title`` or the next
    free number. ``meanwhile`` gets the new memory's id while it is fsync'd
    (:meth:`~noon.store.store.Store.write`)."""
    at = parse(parent)

    def fn(g: SqlGraph) -> tuple[list[Draft], tuple[str, Uri]]:
        drafts, node, uri = plan.create(g, who.namespace, at, title, content, priority, disclosure)
        return drafts, (node, uri)

    def during(info: tuple[str, Uri]) -> None:
        assert meanwhile is not None
        meanwhile(info[0])

    ops, (node, uri) = svc.write(fn, who.client, who.via, None if meanwhile is None else during)
    return Created(uri, node, version_id(ops[0]))


# -- editing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """An edit of a memory's text by quoting (``old``/``new``) or appending, and/or of the
    priority and disclosure of the placement its URI names."""

    uri: str
    old: str | None = None
    new: str | None = None
    replace_all: bool | None = None
    append: str | None = None
    priority: int | None = None
    disclosure: str | None = None
    expected_version: str | None = None


@dataclass(frozen=True)
class Edited:
    uri: str
    """The memory as shown (its URI, or how the caller named it)."""
    node: str
    version: str | None
    """The memory's version after the edit."""
    literal_newlines: bool = False
    """The quote matched only once its literal ``\\n`` sequences were read as line breaks."""
    normalised: bool = False
    """The quote matched only once quotes, dashes or whitespace were normalised."""
    concurrent: Op | None = field(default=None, compare=False)
    """The concurrent version the quote matched in (it did not match the current one)."""


def _check_modes(e: Edit, label: str) -> None:
    old, new, add = e.old, e.new, e.append
    if (old is not None or new is not None) and add is not None:
        raise Invalid(
            "Cannot use both old_string/new_string (patch) and append at the same time. Pick one."
        )
    if old is not None and new is None:
        raise Invalid(
            'old_string provided without new_string. To delete a section, use new_string="".'
        )
    if new is not None and old is None:
        raise Invalid("new_string provided without old_string. Both are required for patch mode.")
    if old is not None and old == new:
        raise Invalid("old_string and new_string are identical. No change would be made.")
    if add is not None and not add.strip():
        raise Invalid(f"Empty append for '{label}'. Provide non-empty text to append.")
    if old is None and add is None and e.priority is None and e.disclosure is None:
        raise Invalid(
            f"No update fields provided for '{label}'. Use patch mode (old_string + "
            "new_string), append mode (append), or metadata fields (priority/disclosure)."
        )
    if old is None and e.replace_all is not None:
        raise Invalid("replace_all only applies with old_string/new_string.")


def edit(svc: GraphService, who: Actor, e: Edit) -> Edited:
    """Quote-edit or append to a memory's text and/or set its placement's priority and
    disclosure. Any text edit settles concurrent versions (the new version names every head)."""
    label, ns = e.uri.strip(), who.namespace
    _check_modes(e, label)
    found: list[Edited] = []

    def fn(g: SqlGraph) -> tuple[list[Draft], None]:
        found.clear()  # the planner runs again when the store folded something meanwhile
        node, uri, pl = plan.locate(g, ns, label)
        shown = str(uri) if uri else label
        where = uri or Uri("system", ())
        expect_version(g, ns, node, uri, e.expected_version)
        drafts: list[Draft] = []
        result = Edited(shown, node, None)
        if e.old is not None or e.append is not None:
            text, result = _new_text(g, ns, node, where, shown, e)
            el = g.content(ns, node)
            unsettled = el is not None and (el.conflicted or el.deleted)
            if text == plan.current_text(g, ns, node, where) and not unsettled:
                raise GraphError(
                    f"Replacement produced identical content at '{shown}'. Check "
                    "for subtle whitespace differences."
                )
            drafts.append(plan.set_text(ns, node, text))
        if e.priority is not None or e.disclosure is not None:
            if pl is None:
                raise GraphError(
                    "priority and disclosure belong to a placement: address the "
                    "memory by a URI, not by its id."
                )
            prio = e.priority if e.priority is not None else pl.priority
            plan.check_priority(prio)
            disc = e.disclosure if e.disclosure is not None else pl.disclosure
            drafts.append(plan.place(g, ns, pl.parent, pl.key_name, node, prio, disc))
        found.append(result)
        return drafts, None

    ops, _ = svc.write(fn, who.client, who.via)
    done = found[-1]
    content_op = next((o for o in ops if o.el[0] == CONTENT), None)
    if content_op is not None:
        version: str | None = version_id(content_op)
    else:
        version = svc.read(lambda s: _version_of(s.graph, ns, done.node))
    return Edited(
        done.uri, done.node, version, done.literal_newlines, done.normalised, done.concurrent
    )


def _version_of(g: GraphReader, ns: str, node: str) -> str | None:
    el = g.content(ns, node)
    return version_id(el.winner) if el is not None else None


def _new_text(
    g: GraphReader, ns: str, node: str, uri: Uri, shown: str, e: Edit
) -> tuple[str, Edited]:
    current = plan.current_text(g, ns, node, uri)
    if e.old is None:
        return append_text(current, e.append or ""), Edited(shown, node, None)
    try:
        quoted = plan.edit_quoted(g, ns, node, uri, e.old, e.new or "", bool(e.replace_all))
    except QuoteError as exc:
        raise GraphError(f"In '{shown}': {exc}") from None
    q = quoted.edit
    found = Edited(shown, node, None, q.literal_newlines, q.normalised, quoted.concurrent)
    return q.text, found


def replace_text(svc: GraphService, who: Actor, uri: str, text: str, expected: str | None) -> str:
    """Write a memory's whole text (it settles concurrent versions); returns its node. Refused
    when the text is what the memory already reads, with nothing to settle."""
    ns = who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], str]:
        node, at, _ = plan.locate(g, ns, uri)
        expect_version(g, ns, node, at, expected)
        el = g.content(ns, node)
        if el is not None and live_text(el) == text and not (el.conflicted or el.deleted):
            raise Invalid("Nothing changed: the text is the same as the current version.")
        return [plan.set_text(ns, node, text)], node

    return svc.write(fn, who.client, who.via)[1]


def placement_version(graph: SqlGraph, ns: str, pl: Placement) -> str | None:
    """The version of the edge element that yields ``pl``: its winner, or for a placement
    listed beside a concurrent one (``name~xxxxxxxx``), the newest head that places its child."""
    el = graph.element(edge_key(ns, pl.parent, pl.key_name))
    if el is None:
        return None
    if pl.name != pl.key_name:
        heads = [h for h in el.heads.values() if h.val is not None and h.val["child"] == pl.child]
        if heads:
            return version_id(max(heads, key=lambda o: o.order))
    return version_id(el.winner)


def set_placement(
    svc: GraphService,
    who: Actor,
    uri: str,
    priority: int | None,
    disclosure: str | None,
    expected_version: str | None,
    expected_placement: str | None,
) -> str:
    """Set the priority and/or disclosure of the placement ``uri`` names (each URI of a memory
    has its own); ``expected_placement`` is the placement's version as the caller saw it.
    Returns the memory's node."""
    ns = who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], str]:
        node, at, pl = plan.locate(g, ns, uri)
        expect_version(g, ns, node, at, expected_version)
        if pl is None:
            raise Invalid("Priority and disclosure belong to a URI: open the memory by URI.")
        seen = placement_version(g, ns, pl)
        if expected_placement is not None and seen != expected_placement:
            raise Conflict(
                "This URI's priority or disclosure changed since the page loaded it.",
                {"placement": seen},
            )
        prio = plan.check_priority(priority if priority is not None else pl.priority)
        disc = plan.check_disclosure(disclosure) if disclosure is not None else pl.disclosure
        if (prio, disc) == (pl.priority, pl.disclosure):
            raise Invalid("Nothing changed: same priority and disclosure.")
        return [plan.place(g, ns, pl.parent, pl.key_name, node, prio, disc)], node

    return svc.write(fn, who.client, who.via)[1]


# -- placing and deleting ----------------------------------------------------------------------


@dataclass(frozen=True)
class Deleted:
    node: str
    deleted: int
    """Memories deleted (0: only this URI went, the memory stays reachable by another)."""


def delete(
    svc: GraphService, who: Actor, uri: str, recursive: bool, expected: str | None = None
) -> Deleted:
    """Remove the URI; with its last URI the memory is deleted (``recursive``: also the
    memories below that nothing else reaches; without it such a delete is refused)."""
    label, ns = uri.strip(), who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], Deleted]:
        node, at, pl = plan.locate(g, ns, label)
        expect_version(g, ns, node, at, expected)
        drafts, deleted = plan.delete(g, ns, node, label, pl, recursive)
        return drafts, Deleted(node, deleted)

    return svc.write(fn, who.client, who.via)[1]


def alias(
    svc: GraphService,
    who: Actor,
    target: str,
    new_uri: str,
    priority: int | None,
    disclosure: str | None,
) -> str:
    """Another URI for the memory ``target`` names; priority and disclosure default to those of
    the placement ``target`` names (0 and none for a memory named by its id). Returns its node."""
    at, ns = parse(new_uri), who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], str]:
        node, _, pl = plan.locate(g, ns, target)
        prio = priority if priority is not None else (pl.priority if pl else 0)
        disc = disclosure if disclosure is not None else (pl.disclosure if pl else "")
        return [plan.alias(g, ns, at, node, prio, disc)], node

    return svc.write(fn, who.client, who.via)[1]


def move(
    svc: GraphService,
    who: Actor,
    uri: str,
    new_uri: str,
    priority: int | None = None,
    disclosure: str | None = None,
    expected: str | None = None,
    unplaced: str | None = None,
) -> str:
    """Move or rename the memory ``uri`` names in one batch (children, keywords, history and
    boot membership follow); an orphan (``system://node/<id>``) is placed. ``unplaced``, when
    given, refuses placing an orphan with that message. Returns the memory's node."""
    at, ns = parse(new_uri), who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], str]:
        node, found, pl = plan.locate(g, ns, uri)
        expect_version(g, ns, node, found, expected)
        if pl is None and unplaced is not None:
            raise Invalid(unplaced)
        return plan.move(g, ns, node, pl, at, priority, disclosure), node

    return svc.write(fn, who.client, who.via)[1]


# -- triggers and boot ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Triggered:
    node: str
    added: list[str]
    existing: list[str]
    removed: list[str]
    missing: list[str]
    written: bool


def triggers(
    svc: GraphService, who: Actor, uri: str, add: list[str], remove: list[str]
) -> Triggered:
    """Bind and unbind glossary keywords of the memory ``uri`` names."""
    ns = who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], tuple[str, dict[str, list[str]]]]:
        node, _, _ = plan.locate(g, ns, uri.strip())
        drafts, report = plan.triggers(g, ns, node, add, remove)
        return drafts, (node, report)

    ops, (node, r) = svc.write(fn, who.client, who.via)
    return Triggered(node, r["added"], r["existing"], r["removed"], r["missing"], bool(ops))


def boot(svc: GraphService, who: Actor, add: list[str], remove: list[str]) -> bool:
    """Add the memories ``add`` names to the boot list and take those ``remove`` names off it
    (kept by memory, so moves do not break it). Whether anything was written."""
    ns = who.namespace

    def fn(g: SqlGraph) -> tuple[list[Draft], None]:
        adds = [plan.locate(g, ns, u)[0] for u in add]
        removes = [plan.locate(g, ns, u)[0] for u in remove]
        return plan.boot(g, ns, adds, removes), None

    ops, _ = svc.write(fn, who.client, who.via)
    return bool(ops)
