"""Reading and writing the two graphs of a live store, as the tools, the page and the CLI do.

The URI graph: one :class:`GraphService` per :class:`~noon.store.store.Store` (shared by every
session of a process). A read refreshes the store (folding whatever the shards gained, whichever
process wrote it) and runs the view on one snapshot of the read model; a write plans through
:meth:`~noon.store.store.Store.write`, whose checks are atomic with the append. The glossary's
automata are the only thing kept in memory, per namespace, rebuilt when its keywords change.

The knowledge graph: :func:`kg_read` and :func:`kg_mutate`, the same two paths for the nine
tools of the official memory server.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TypeVar

from noon.core.ops import Draft, Op
from noon.graph.glossary import Glossary
from noon.kg.graph import KgReader
from noon.kg.plan import Planned
from noon.store.readmodel.graph import SqlGraph
from noon.store.store import Store

T = TypeVar("T")
A = TypeVar("A")

_services: weakref.WeakKeyDictionary[Store, GraphService] = weakref.WeakKeyDictionary()
_services_lock = threading.Lock()


class GraphService:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.lock: threading.RLock = store.lock
        self.graph = store.graph
        self.search = store.search
        self.glossary = Glossary(store.graph)

    def read(self, fn: Callable[[GraphService], T], *, refresh: bool = True) -> T:
        """``fn`` on one consistent snapshot, after folding what the shards gained;
        ``refresh=False`` reads what this process last folded, which right after its own write
        holds that write (a read meant to follow it, without looking at the shards again)."""
        with self.lock:
            if refresh:
                self.store.refresh()
            with self.graph.reading():
                return fn(self)

    def write(
        self,
        plan: Callable[[SqlGraph], tuple[list[Draft], T]],
        client: str,
        via: str = "cli",
        meanwhile: Callable[[T], None] | None = None,
    ) -> tuple[list[Op], T]:
        """Plan against the fresh graph and append the drafts as one durable batch;
        ``meanwhile`` gets the plan's info while the batch is fsync'd (:meth:`Store.write`)."""
        out: list[T] = []

        def planner(graph: SqlGraph) -> list[Draft]:
            drafts, info = plan(graph)
            out.append(info)
            return drafts

        during = None if meanwhile is None else lambda: meanwhile(out[-1])
        ops = self.store.write(planner, client=client, via=via, meanwhile=during)
        return ops, out[-1]


def service(store: Store) -> GraphService:
    with _services_lock:
        svc = _services.get(store)
        if svc is None:
            svc = _services[store] = GraphService(store)
        return svc


def kg_read(store: Store, namespace: str, fn: Callable[[KgReader], T]) -> T:
    """Refresh, then run ``fn`` on one consistent snapshot of the namespace's graph."""
    with store.lock:
        store.refresh()
        with store.graph.reading():
            return fn(store.kg(namespace))


def kg_mutate(
    store: Store,
    namespace: str,
    planner: Callable[[KgReader, A], Planned],
    arg: A,
    client: str,
    via: str = "cli",
) -> object:
    """Plan one tool call against the fresh state and write it as one batch; return its
    result. A :class:`~noon.kg.plan.KGError` raised by the planner writes nothing."""
    box: list[object] = []

    def plan(graph: SqlGraph) -> list[Draft]:
        planned = planner(store.kg(namespace), arg)
        box.append(planned.result)
        return planned.drafts

    store.write(plan, client=client, via=via)
    return box[-1]
