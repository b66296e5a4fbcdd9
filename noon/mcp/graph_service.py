"""The URI graph of one store, for the tools: consistent reads and planned writes.

One service per :class:`Store` (shared by every session of a server process). A read refreshes
the store (folding whatever the shards gained, whichever process wrote it) and runs the view on
one snapshot of the read model; a write plans through :meth:`Store.write`, whose checks are
atomic with the append. The glossary's automata are the only thing kept in memory, per
namespace, rebuilt when that namespace's keywords change.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TypeVar

from noon.core.ops import Draft, Op
from noon.graph.glossary import Glossary
from noon.store.readmodel.graph import SqlGraph
from noon.store.store import Store

T = TypeVar("T")

_services: weakref.WeakKeyDictionary[Store, GraphService] = weakref.WeakKeyDictionary()
_services_lock = threading.Lock()


class GraphService:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.lock: threading.RLock = store.lock
        self.graph = store.graph
        self.search = store.search
        self.glossary = Glossary(store.graph)

    def read(self, fn: Callable[[GraphService], T]) -> T:
        with self.lock:
            self.store.refresh()
            with self.graph.reading():
                return fn(self)

    def write(
        self, plan: Callable[[SqlGraph], tuple[list[Draft], T]], client: str
    ) -> tuple[list[Op], T]:
        """Plan against the fresh graph and append the drafts as one durable batch."""
        out: list[T] = []

        def planner(graph: SqlGraph) -> list[Draft]:
            drafts, info = plan(graph)
            out.append(info)
            return drafts

        ops = self.store.write(planner, client=client)
        return ops, out[-1]


def service(store: Store) -> GraphService:
    with _services_lock:
        svc = _services.get(store)
        if svc is None:
            svc = _services[store] = GraphService(store)
        return svc
