"""The knowledge-graph index kept current on a live store (the one module of ``noon.kg`` that
knows :class:`~noon.store.store.Store`; it does no I/O of its own)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TypeVar

from noon.core.fold import Fold
from noon.core.ops import Draft
from noon.kg.graph import Index, View
from noon.kg.plan import Planned
from noon.store.store import Changes, Store

T = TypeVar("T")
A = TypeVar("A")

_indexes: weakref.WeakKeyDictionary[Store, Index] = weakref.WeakKeyDictionary()


def index_for(store: Store) -> Index:
    """The store's index, created on first use and then updated by every refresh."""
    with store.lock:  # the store's own lock orders this with refresh and write
        index = _indexes.get(store)
        if index is not None:
            return index
        index = Index.build(store.fold)
        ref = weakref.ref(store)

        def follow(changes: Changes) -> None:
            owner = ref()
            if owner is None:
                return
            if changes.reset:
                _indexes[owner] = Index.build(owner.fold)
            else:
                _indexes[owner].add(changes.keys)

        store.listeners.append(follow)
        _indexes[store] = index
        return index


def read(store: Store, namespace: str, fn: Callable[[View], T]) -> T:
    """Refresh, then run ``fn`` on a consistent view (no refresh can run meanwhile)."""
    with store.lock:
        index_for(store)
        store.refresh()
        return fn(View(store.fold, _indexes[store], namespace))


def view_of(store: Store, fold: Fold, namespace: str) -> View:
    """A view on ``fold`` inside a write plan (the store lock is held, the fold is fresh)."""
    return View(fold, index_for(store), namespace)


def mutate(
    store: Store, namespace: str, planner: Callable[[View, A], Planned], arg: A, client: str
) -> object:
    """Plan one tool call against the fresh state and write it as one batch; return its
    result. A :class:`~noon.kg.plan.KGError` raised by the planner writes nothing."""
    box: list[object] = []

    def plan(fold: Fold) -> list[Draft]:
        planned = planner(view_of(store, fold, namespace), arg)
        box.append(planned.result)
        return planned.drafts

    store.write(plan, client=client)
    return box[0]
