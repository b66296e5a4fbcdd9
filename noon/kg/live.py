"""The knowledge graph of a live store: consistent reads and planned writes for the nine tools
(the one module of ``noon.kg`` that knows :class:`~noon.store.store.Store`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from noon.core.ops import Draft
from noon.kg.graph import KgReader
from noon.kg.plan import Planned
from noon.store.readmodel.graph import SqlGraph
from noon.store.store import Store

T = TypeVar("T")
A = TypeVar("A")


def read(store: Store, namespace: str, fn: Callable[[KgReader], T]) -> T:
    """Refresh, then run ``fn`` on one consistent snapshot of the namespace's graph."""
    with store.lock:
        store.refresh()
        with store.graph.reading():
            return fn(store.kg(namespace))


def mutate(
    store: Store, namespace: str, planner: Callable[[KgReader, A], Planned], arg: A, client: str
) -> object:
    """Plan one tool call against the fresh state and write it as one batch; return its
    result. A :class:`~noon.kg.plan.KGError` raised by the planner writes nothing."""
    box: list[object] = []

    def plan(graph: SqlGraph) -> list[Draft]:
        planned = planner(store.kg(namespace), arg)
        box.append(planned.result)
        return planned.drafts

    store.write(plan, client=client)
    return box[-1]
