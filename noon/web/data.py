"""Everything the page reads and writes, in one narrow class: :class:`WebData`.

The routes and the page call only these methods and see only the JSON-ready values they return.
The page is one more reader of the machine's shared read model (``NOON_DIR/.noon/``): every read
refreshes it and runs on one snapshot of it through :func:`noon.store.access.service`; reads
and writes are the use cases of :mod:`noon.app` (the ones the MCP tools run), a write appended as
one batch per call with the client ``web``. The process keeps no index of the store: the review
queue (:mod:`noon.app.queue`), a memory's timeline, "approve all" and the pending count are
queries of the op log (:mod:`noon.store.readmodel.changes`); only the pending count is kept, per
namespace, until the read model's generation moves. Its helpers render, by job:
:mod:`noon.web.views` (memories, children, conflicts, orphans, the knowledge graph),
:mod:`noon.web.queue` (the review queue), :mod:`noon.web.undo_preview` (what a change did and
its undo), :mod:`noon.web.timeline` (a memory's or an entity's changes).

Conventions: ``ns`` is a namespace; ``uri`` is a memory URI or ``system://node/<id>`` (how
orphans and deleted memories are addressed); times are milliseconds since the epoch; a version
or change id is ``node:seq``. ``expected_version`` (a memory's version as the page loaded it)
makes a write refuse when the memory changed since. Refusals are the kinds of
:mod:`noon.errors` the use cases raise (:class:`~noon.errors.NotFound`, a
:class:`~noon.errors.Conflict` such as :class:`~noon.app.versions.VersionChanged` carrying what is
current, :class:`~noon.errors.Invalid`, ...), which :func:`noon.web.app.refusal` gives their HTTP
status; nothing is written then.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from noon.app import changes as app_changes
from noon.app import entities as app_entities
from noon.app import memories, search, status, versions
from noon.app import orphans as app_orphans
from noon.app import queue as app_queue
from noon.app.actor import WEB, Actor
from noon.config import Settings
from noon.core.ops import Key
from noon.daemon_link import api as daemon_api
from noon.errors import Invalid, NotFound
from noon.graph import plan
from noon.graph.uri import NODE_VIEW, Uri, node_view, parse
from noon.store.access import GraphService, service
from noon.store.queries import Queries
from noon.store.readmodel.changes import Pending
from noon.store.readmodel.graph import SqlGraph
from noon.store.readmodel.running import SEARCHES
from noon.store.store import Store, Touched
from noon.web import queue, timeline, undo_preview, views

T = TypeVar("T")
MAX_LIVE_KEYS = 500
"""Changed elements reported one by one to the live feed; beyond, the page reloads its view."""
PENDING_CACHED = 64
"""Namespaces whose pending count is kept (each until the read model's generation moves)."""


class WebData:
    """The page's reads and writes on one store. Thread-safe: every method holds the store's
    lock while it reads or plans, and blocks (call it from a worker thread)."""

    def __init__(self, store: Store, settings: Settings, daemon_url: str | None = None) -> None:
        self.store = store
        self.settings = settings
        self.daemon_url = daemon_url
        self.svc: GraphService = service(store)
        self._touched: set[Key] = set()
        self._reset = False
        self._guard = threading.Lock()
        self._pending: dict[str, tuple[int, Pending]] = {}
        """Namespace -> (read-model generation, its pending changes); read under the lock."""
        with store.lock:
            store.refresh()
            store.listeners.append(self._on_changes)

    # -- plumbing --------------------------------------------------------------------------

    def _on_changes(self, changed: Touched) -> None:
        """Every refresh of the store, whichever process folded: remember what to tell the
        live pages."""
        with self._guard:
            if changed.reset or len(self._touched) + len(changed.keys) > MAX_LIVE_KEYS:
                self._reset, self._touched = True, set()
            elif not self._reset:
                self._touched |= changed.keys

    def _read(self, fn: Callable[[SqlGraph], T]) -> T:
        return self.svc.read(lambda s: fn(s.graph))

    def _memory_of(self, graph: SqlGraph, ns: str, node: str, at: Uri | None) -> dict[str, Any]:
        found = graph.resolve(ns, at) if at is not None else None
        pl = found[1] if found is not None and found[0] == node else None
        shown = views.memory(graph, self.svc.glossary, ns, node, at if pl else None, pl)
        if shown is None:
            raise NotFound(f"No memory {node_view(node)}.")
        return shown

    def _pending_of(self, graph: SqlGraph, ns: str) -> Pending:
        """The changes of ``ns`` waiting for review, counted once per read-model generation."""
        generation = self.store.model.generation
        cached = self._pending.get(ns)
        if cached is not None and cached[0] == generation:
            return cached[1]
        found = Queries(graph).pending(ns, WEB)
        if len(self._pending) >= PENDING_CACHED:
            self._pending.clear()
        self._pending[ns] = (generation, found)
        return found

    # -- browse ----------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """``{node, namespace (the default), namespaces}``: namespaces holding memories or
        knowledge-graph data, and the default one."""

        def fn(g: SqlGraph) -> dict[str, Any]:
            spaces = Queries(g).namespaces() | {self.settings.namespace}
            return {
                "node": self.settings.node_id,
                "namespace": self.settings.namespace,
                "namespaces": sorted(spaces),
            }

        return self._read(fn)

    def domains(self, ns: str) -> list[dict[str, Any]]:
        """``[{domain, children}]``: ``core`` and every domain holding a memory, with the number
        of memories at its top."""
        return self._read(lambda g: views.domains(g, ns))

    def children(
        self, ns: str, uri: str, offset: int, limit: int, name_filter: str = ""
    ) -> dict[str, Any]:
        """One page of the children of a memory or of a domain root (``core://``), by priority
        then name, only those whose name or disclosure holds ``name_filter`` when given:
        ``{uri, node, total (matching), all, filter, offset, items: [{name, uri, node,
        priority, disclosure, children (how many it has), snippet, deleted, conflicted,
        boot}]}``."""
        return self._read(lambda g: views.children(g, ns, uri, offset, limit, name_filter))

    def memory(self, ns: str, uri: str) -> dict[str, Any]:
        """One memory: ``{namespace, uri, node, version, text, deleted, conflicted, orphan,
        heads (when conflicted: [{version, text (None: a deletion), winner, diff (from the shown
        text), time, client, machine}]), placement (the one ``uri`` reached it by:
        {parent_uri, name, priority, disclosure, version}, None for system://node URIs),
        aliases [{uri, priority}], placements [{parent_uri, name, priority, disclosure}],
        keywords, boot, glossary [{start, end, keyword, targets}] (character offsets in
        ``text``; the first ``MAX_SPANS`` places), glossary_more (whether the text has more
        linked places than marked), children (count), breadcrumbs [{name, uri}], modified
        {time, client, machine}}``."""

        def fn(g: SqlGraph) -> dict[str, Any]:
            node, at, _ = plan.locate(g, ns, uri)
            return self._memory_of(g, ns, node, at)

        return self._read(fn)

    def search(self, ns: str, query: str, domain: str | None, limit: int) -> list[dict[str, Any]]:
        """``search_memory``'s ranking (:func:`noon.app.search.search`): ``[{uri, node_id,
        score, priority, disclosure, version, snippet}]``."""
        with SEARCHES.held():  # the vectorizer waits (:mod:`noon.store.readmodel.running`)
            hits = self.svc.read(lambda s: search.search(s, ns, query, domain, limit).hits)
        return [
            {
                "uri": str(h.uri),
                "node_id": h.node,
                "score": h.score,
                "priority": h.priority,
                "disclosure": h.disclosure,
                "version": h.version,
                "snippet": h.snippet,
            }
            for h in hits
        ]

    def boot_list(self, ns: str) -> list[dict[str, Any]]:
        """The boot memories: ``[{uri, node, deleted}]``."""

        def fn(g: SqlGraph) -> list[dict[str, Any]]:
            rows = [
                {"uri": views.namer(g, ns)(n), "node": n, "deleted": not g.is_live(ns, n)}
                for n in g.boot_nodes(ns)
            ]
            return sorted(rows, key=lambda r: r["uri"])

        return self._read(fn)

    # -- review ----------------------------------------------------------------------------

    def changes(
        self, ns: str, view: str, group: str, before: str | None, limit: int
    ) -> dict[str, Any]:
        """Changes of ``ns``, newest first. ``view``: ``pending`` (made by agents, not reviewed
        yet), ``reviewed`` (approved or rolled back), ``all`` (the page's own too). ``group``:
        ``change`` (one item per tool call) or ``memory`` (one item per memory, gathering its
        changes in the view). ``before``: the ``next`` of the previous page. Returns ``{items:
        [{id, ids (the change ids it stands for), time, client, machine, ops, subject {kind,
        label, node | name}, what (sentences), more, status (pending | approved | rolled_back |
        web), reviewed_by, clients, machines, changes (memory groups)}], next, pending (count),
        frontier (author -> seq: what "approve all" approves)}``."""
        app_queue.check(view, group)
        before_at = app_queue.cursor(before)

        def fn(g: SqlGraph) -> dict[str, Any]:
            pending = self._pending_of(g, ns)
            found = app_queue.listing(
                g, self.store.fold, ns, view, group, before_at, limit, pending
            )
            return queue.listing(g, ns, found)

        return self._read(fn)

    def change(
        self, ns: str, ids: list[str], offset: int = 0, limit: int = undo_preview.STEPS_PAGE
    ) -> dict[str, Any]:
        """One change, or several taken together (a memory's group): ``{changes: [heads as in
        :meth:`changes`], steps: [{element, kind, known, before, after, current, later
        (current versions built on the changes) and concurrent (current versions written
        without knowing them) [{version, time, client, machine}], restore (what a rollback
        does to it, in words), writes, memory + diff (texts) | fields [[field, before,
        after]]}], total_steps, offset, undo: {possible, problems, writes, overwrites_later,
        basis}}``. ``steps`` are the elements ``offset`` to ``offset + limit`` of the
        ``total_steps`` they touched. ``before`` is an element's value before the first of the
        changes, ``after`` what they left, ``current`` what reads show now (texts are given as
        ``{chars}``: see ``diff``); pass ``undo.basis`` back to :meth:`rollback`. Above
        :data:`noon.app.changes.MAX_UNDO_OPS` ops the undo is not previewed (``problems`` says so,
        ``basis`` is None)."""

        def fn(g: SqlGraph) -> dict[str, Any]:
            return undo_preview.details(g, ns, app_changes.named(g, ns, ids), offset, limit)

        return self._read(fn)

    def history(self, ns: str, uri: str, offset: int, limit: int) -> dict[str, Any]:
        """A memory's timeline, newest first: every change that touched it (its texts,
        placements, keywords, boot membership): ``{uri, node, version, total, offset, items:
        [{...as in changes, version (the text version it wrote: {version, deleted, current}
        or None), steps (as in :meth:`change`, those about this memory)}]}``."""

        def fn(g: SqlGraph) -> dict[str, Any]:
            node = plan.locate(g, ns, uri)[0]
            return timeline.timeline(g, ns, node, offset, limit)

        return self._read(fn)

    def approve(
        self, ns: str, ids: list[str], through: dict[str, int] | None = None
    ) -> dict[str, Any]:
        """Mark changes reviewed: each of ``ids``, and with ``through`` (author -> seq, a
        listing's ``frontier``) every change of those authors up to there. Written as review ops
        that replicate: approving here clears the queue of every machine. ``{written}``."""
        return {"written": app_changes.approve(self.svc, self._actor(ns), ids, through)}

    def unreview(self, ns: str, change_id: str) -> dict[str, Any]:
        """Put a change back in the queue (a tombstone over every machine's verdict on it, each
        naming the verdict it withdraws). A change approved by "approve all" stays approved.
        ``{written}``."""
        return {"written": app_changes.unreview(self.svc, self._actor(ns), change_id)}

    def rollback(self, ns: str, ids: list[str], basis: str | None) -> dict[str, Any]:
        """Undo changes: every element they touched goes back to its value before the first of
        them (texts, placements and moves, aliases, keywords, boot membership, deleted
        memories, knowledge-graph data), written as one batch with the changes marked rolled
        back. Refused (409) when ``basis`` (from :meth:`change`) no longer matches what is
        current, and (400) when a version to restore is not held any more. ``{written, batch
        (the rollback's own change id: undo it to undo the rollback)}``."""
        done = app_changes.undo_changes(self.svc, self._actor(ns), ids, basis, review=True)
        return {"written": done.restored, "batch": done.batch}

    def restore_version(
        self, ns: str, uri: str, version: str, expected_version: str | None
    ) -> dict[str, Any]:
        """Roll a memory back to one of its text versions (from :meth:`history`): the text of
        then, and what the later text edits changed beside it (priority, placement, keywords,
        boot) as it was before them. ``{version (the new one), memory}``."""
        done = versions.rollback_to(self.svc, self._actor(ns), uri, version, expected_version)
        new = done.version if done.text_written else None
        return {"version": new, "memory": self._after(ns, uri, done.node)}

    # -- edit ------------------------------------------------------------------------------

    def _actor(self, ns: str) -> Actor:
        return Actor(ns, WEB, WEB)

    def _after(self, ns: str, uri: str, node: str) -> dict[str, Any]:
        """The memory as it is now, at ``uri`` when that still reaches it."""

        def fn(g: SqlGraph) -> dict[str, Any]:
            at = None if uri.strip().startswith(NODE_VIEW) else parse(uri)
            if at is not None and (g.resolve(ns, at) or ("", None))[0] != node:
                at = g.primary_uri(ns, node)
            return self._memory_of(g, ns, node, at)

        return self._read(fn)

    def save_text(self, ns: str, uri: str, text: str, expected_version: str | None) -> dict:
        """Replace a memory's text (settles concurrent versions). Returns the memory."""
        if not text.strip():
            raise Invalid("The text is empty: write something, or delete the memory.")
        node = memories.replace_text(self.svc, self._actor(ns), uri, text, expected_version)
        return self._after(ns, uri, node)

    def preview_text(self, ns: str, uri: str, text: str) -> dict[str, Any]:
        """The diff a save would make: ``{version, diff}`` (writes nothing)."""
        return self._read(lambda g: views.preview(g, ns, plan.locate(g, ns, uri)[0], text))

    def set_placement(
        self,
        ns: str,
        uri: str,
        priority: int | None,
        disclosure: str | None,
        expected_version: str | None,
        expected_placement: str | None,
    ) -> dict[str, Any]:
        """Set the priority and/or disclosure of the placement ``uri`` names (each URI of a
        memory has its own). ``expected_placement`` is the placement's version as loaded."""
        node = memories.set_placement(
            self.svc,
            self._actor(ns),
            uri,
            priority,
            disclosure,
            expected_version,
            expected_placement,
        )
        return self._after(ns, uri, node)

    def create(
        self, ns: str, parent: str, title: str | None, text: str, priority: int, disclosure: str
    ) -> dict[str, Any]:
        """A new memory under ``parent`` (a memory or a domain root). Returns the memory."""
        if not text.strip():
            raise Invalid("The text is empty.")
        made = memories.create(self.svc, self._actor(ns), parent, title, text, priority, disclosure)
        return self._after(ns, str(made.uri), made.node)

    def alias(
        self, ns: str, uri: str, new_uri: str, priority: int | None, disclosure: str | None
    ) -> dict[str, Any]:
        """Another URI for the memory (priority and disclosure default to this placement's)."""
        memories.alias(self.svc, self._actor(ns), uri, new_uri, priority, disclosure)
        return self.memory(ns, str(parse(new_uri)))

    def move(self, ns: str, uri: str, new_uri: str, expected_version: str | None) -> dict:
        """Move or rename the memory at ``uri`` (one atomic batch). Returns it at its new URI."""
        memories.move(
            self.svc,
            self._actor(ns),
            uri,
            new_uri,
            expected=expected_version,
            unplaced="Place an orphan from the Orphans page (it needs a disclosure).",
        )
        return self.memory(ns, str(parse(new_uri)))

    def delete(self, ns: str, uri: str, recursive: bool, expected_version: str | None) -> dict:
        """Remove the URI; with its last URI the memory is deleted (``recursive``: also the
        memories below that nothing else reaches). ``{deleted (memories), node}``."""
        gone = memories.delete(self.svc, self._actor(ns), uri, recursive, expected_version)
        return {"deleted": gone.deleted, "node": gone.node}

    def keywords(self, ns: str, uri: str, add: list[str], remove: list[str]) -> dict[str, Any]:
        """Bind and unbind glossary keywords. Returns the memory."""
        done = memories.triggers(self.svc, self._actor(ns), uri, add, remove)
        if not done.written:
            raise Invalid("Nothing changed: those keywords were already so.")
        return self._after(ns, uri, done.node)

    def boot(self, ns: str, add: list[str], remove: list[str]) -> list[dict[str, Any]]:
        """Add memories to (or remove them from) the boot list. Returns the boot list."""
        if not memories.boot(self.svc, self._actor(ns), add, remove):
            raise Invalid("Nothing changed: the boot list already reads so.")
        return self.boot_list(ns)

    # -- orphans -------------------------------------------------------------

    def orphans(self, ns: str, offset: int, limit: int) -> dict[str, Any]:
        """Live memories no domain root reaches: ``{total, offset, items: [{node, uri,
        snippet, unreachable_under, children, modified}]}``."""
        return views.orphans(*app_orphans.orphans(self.svc, ns, offset, limit), offset)

    def place_orphan(
        self, ns: str, node: str, new_uri: str, priority: int, disclosure: str
    ) -> dict[str, Any]:
        """Place an orphan at ``new_uri``. Returns the memory there."""
        at = str(parse(new_uri))
        memories.move(self.svc, self._actor(ns), node_view(node), at, priority, disclosure)
        return self.memory(ns, at)

    def delete_orphan(self, ns: str, node: str, recursive: bool) -> dict[str, Any]:
        """Delete an orphan for good (with ``recursive``, the orphans below it too)."""
        return self.delete(ns, node_view(node), recursive, None)

    # -- knowledge graph -------------------------------------------------------------------

    def entities(self, ns: str, query: str | None, offset: int, limit: int) -> dict[str, Any]:
        """Knowledge-graph entities in creation order, or those ``search_nodes`` finds for
        ``query`` (case-insensitive substring of name, type or an observation): ``{total,
        offset, items: [{name, type, observations (count), first}]}``."""
        return views.entities(*app_entities.entities(self.svc, ns, query, offset, limit), offset)

    def entity(self, ns: str, name: str) -> dict[str, Any]:
        """One entity: ``{name, type, observations: [text], relations: [{from, to,
        relationType}], changes: [change heads, newest first]}``."""

        shown = views.entity(app_entities.entity(self.svc, ns, name))
        return {**shown, "changes": self._read(lambda g: timeline.entity_changes(g, ns, name))}

    # -- mesh and live ---------------------------------------------------------------------

    def mesh(self) -> dict[str, Any]:
        """``noon status`` as data (:func:`noon.app.status.gather`): this node, its shards
        with each peer's lag, the peers' health, conflicts, frozen tombstones and forks. Asks
        the local daemon (blocking, a few seconds at most when it does not answer)."""
        url = self.daemon_url or daemon_api.local_url(self.settings)
        return status.gather(self.settings, url, 50, store=self.store)

    def poll(self) -> dict[str, Any] | None:
        """Fold in what the shards gained (writes of any process on this machine, and what
        ``noond`` replicated), then say what changed since the last poll: ``None``, or
        ``{reset}`` (reload everything shown), or ``{namespaces: {ns: {nodes (memories whose
        view changed), parents (memories or domain roots whose children changed), kg (bool),
        changes (bool: the review queue may differ)}}}``."""
        self.svc.read(lambda s: None)
        with self._guard:
            keys, reset = self._touched, self._reset
            self._touched, self._reset = set(), False
        if reset:
            return {"reset": True}
        if not keys:
            return None

        return self._read(lambda g: views.touched(g, keys))
