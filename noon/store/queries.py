"""The read model's public face for the layers above: its op log as changes, review marks and
overview counts, asked on one graph snapshot. Nothing outside :mod:`noon.store` touches the
read model's ``sqlite3`` connection (``tests/test_architecture.py`` checks it); each query here
is the :mod:`noon.store.readmodel` function of the same name with the connection bound."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Concatenate, Generic, ParamSpec, TypeVar

from noon.store.readmodel import changes, oplog, overview
from noon.store.readmodel.graph import SqlGraph

P = ParamSpec("P")
R = TypeVar("R")


class _Bound(Generic[P, R]):
    """A query function whose first argument, the connection, the :class:`Queries` supplies."""

    def __init__(self, fn: Callable[Concatenate[sqlite3.Connection, P], R]) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, owner: Queries, kind: type | None = None) -> Callable[P, R]:
        fn, conn = self.fn, owner._conn

        def bound(*args: P.args, **kwargs: P.kwargs) -> R:
            return fn(conn, *args, **kwargs)

        return bound


class Queries:
    """The queries of one snapshot (``graph``: the :class:`SqlGraph` a read or a write plan
    holds); valid while it is."""

    def __init__(self, graph: SqlGraph) -> None:
        self._conn = graph.conn

    # the op log as changes (noon.store.readmodel.changes)
    ref = _Bound(changes.ref)
    head = _Bound(changes.head)
    load_ops = _Bound(changes.load_ops)
    keys_of = _Bound(changes.keys_of)
    ops_on = _Bound(changes.ops_on)
    ops_under = _Bound(changes.ops_under)
    subject = _Bound(changes.subject)
    newest = _Bound(changes.newest)
    about = _Bound(changes.about)
    pending = _Bound(changes.pending)
    # review marks
    verdicts = _Bound(changes.verdicts)
    counts = _Bound(changes.counts)
    through = _Bound(changes.through)
    # ops one by one (noon.store.readmodel.oplog)
    recent_ops = _Bound(oplog.newest)
    versions = _Bound(oplog.versions)
    memory_keys = _Bound(oplog.memory_keys)
    entity_keys = _Bound(oplog.entity_keys)
    # overview (noon.store.readmodel.overview)
    namespaces = _Bound(overview.namespaces)
    child_counts = _Bound(overview.child_counts)
    summaries = _Bound(overview.summaries)
