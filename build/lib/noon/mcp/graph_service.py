"""The URI graph of one store, kept current by the store's change listener.

One service per :class:`Store` (shared by every session of a server process). Reads hold the
store's lock while they refresh and read, so a concurrent refresh by another tool family can
never change the fold under a view being built. Writes plan inside ``Store.write``, on the
graph caught up under the shard lock, so their checks are atomic with the append.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import TypeVar

from noon.core.fold import Fold
from noon.core.ops import Draft, Op
from noon.graph.glossary import Glossary
from noon.graph.model import Graph
from noon.graph.search import SearchIndex
from noon.store.store import Changes, Store

T = TypeVar("T")
WARM_SLICE = 200
"""Documents indexed per hold of the lock while warming the search index."""
WARM_PAUSE = 0.002

_services: weakref.WeakKeyDictionary[Store, GraphService] = weakref.WeakKeyDictionary()
_services_lock = threading.Lock()


class GraphService:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.lock: threading.RLock = store.lock  # the store's own lock: one order, no deadlock
        with self.lock:
            self.graph = Graph(store.fold)
            self.search = SearchIndex(self.graph)
            self.glossary = Glossary(self.graph)
            store.listeners.append(self._on_changes)
        threading.Thread(target=self._warm_search, name="noon-search-warmup", daemon=True).start()

    def _warm_search(self) -> None:
        """Build the search index in slices in the background, so a session's first search
        does not pay for it, while reads still get the lock between slices."""
        more = True
        while more:
            with self.lock:
                more = self.search.build_some(WARM_SLICE)
            # The lock is not fair: pause between slices so a waiting tool call gets it first.
            time.sleep(WARM_PAUSE)

    def _on_changes(self, changes: Changes) -> None:
        self.graph.update(self.store.fold, changes.keys, reset=changes.reset)

    def read(self, fn: Callable[[GraphService], T]) -> T:
        with self.lock:
            self.store.refresh()
            self.graph.update(self.store.fold, ())
            return fn(self)

    def write(
        self, plan: Callable[[Graph], tuple[list[Draft], T]], client: str
    ) -> tuple[list[Op], T]:
        """Plan against the fresh graph and append the drafts as one durable batch."""
        out: list[T] = []

        def planner(fold: Fold) -> list[Draft]:
            self.graph.update(fold, ())
            drafts, info = plan(self.graph)
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
