"""Writing imported memories through the import shard, idempotently, with progress.

Each write is one all-or-nothing batch of at most :data:`CHUNK` items, planned against the fresh
state, so re-running an import (also one cut short by a crash) adds only what is missing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from itertools import islice
from typing import Any, TypeVar

from tqdm import tqdm

from noon.config import Settings
from noon.core.elements import WRITTEN, boot_key, content_key, edge_key, keyword_key
from noon.core.gcpause import paused
from noon.core.ops import Draft, Key
from noon.graph.reader import GraphReader
from noon.kg import plan
from noon.names import shard_file
from noon.store.access import kg_mutate
from noon.store.compact import compact_dir
from noon.store.store import Store
from noon.transfer.markdown_dir import MarkdownExport
from noon.transfer.nocturne import NocturneData, Version
from noon.transfer.nocturne_boot import BootPlan
from noon.transfer.official import OfficialGraph, OfficialLines

CLIENT = "import"
"""The client name and the edge (``via``) of every op an import writes."""
CHUNK = 2000
PROGRESS_FROM = 5000
"""Show a progress bar (stderr) for inputs with at least this many items."""
IMPORT_SUFFIX = "-import"

T = TypeVar("T")


def import_settings(settings: Settings) -> Settings:
    """The settings of the import shard: node id ``<node>-import``."""
    base = settings.node_id[: 64 - len(IMPORT_SUFFIX)]
    return replace(settings, node_id=base + IMPORT_SUFFIX)


@contextmanager
def import_store(settings: Settings) -> Iterator[Store]:
    """A store writing the import shard, compacted once when the import ends, if anything in
    the shard is superseded then (a second version of a memory; ops of an import that only adds
    supersede nothing, and a compaction would read every shard of the directory for nothing).
    A store compacts its shard every ``compact_after`` ops, and each compaction scans the whole
    directory: every chunk of an import crossed that mark, so a big import re-read all it had
    written, chunk after chunk (1,800 ops/s at 1M ops)."""
    own = import_settings(settings)
    store = Store(replace(own, compact_after=0))
    try:
        yield store
        store.refresh()
        superseded = store.fold.names_any_of(own.node_id)
    finally:
        store.close()
    if superseded:
        compact_dir(own.dir, [shard_file(own.node_id)], history=own.history)


def _chunks(items: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def _bar(total: int, what: str) -> tqdm[Any]:
    return tqdm(
        total=total,
        desc=what,
        unit=" items",
        file=sys.stderr,
        disable=total < PROGRESS_FROM,
        leave=False,
    )


def _mutate(store: Store, namespace: str, planner: Any, chunk: list[Any]) -> object:
    """One chunk of an official graph, planned and written with the cyclic collector paused
    (:mod:`noon.core.gcpause`): a chunk allocates tens of thousands of objects and no cycle,
    and the collector's passes over them were about 4 % of an import's CPU."""
    with paused():
        return kg_mutate(store, namespace, planner, chunk, CLIENT, CLIENT)


def import_official(
    store: Store, namespace: str, graph: OfficialGraph | OfficialLines, source: str
) -> str:
    total = len(graph.entities) + len(graph.relations)
    made_e = made_r = 0
    with _bar(total, "importing") as bar:
        for chunk in _chunks(graph.entities):
            created = _mutate(store, namespace, plan.create_entities, chunk)
            made_e += len(created)  # type: ignore[arg-type]
            bar.update(len(chunk))
        for chunk in _chunks(graph.relations):
            created = _mutate(store, namespace, plan.create_relations, chunk)
            made_r += len(created)  # type: ignore[arg-type]
            bar.update(len(chunk))
    return (
        f"Imported {made_e} of {len(graph.entities)} entities and {made_r} of "
        f"{len(graph.relations)} relations from {source} into namespace {namespace!r}."
    )


def _write_absent(store: Store, items: Sequence[tuple[Key, dict[str, Any]]], bar: Any) -> int:
    written = 0
    for chunk in _chunks(items):

        def absent(
            graph: GraphReader, chunk: Sequence[tuple[Key, dict[str, Any]]] = chunk
        ) -> list[Draft]:
            return [Draft(k, v) for k, v in chunk if graph.element(k) is None]

        written += len(store.write(absent, client=CLIENT, via=CLIENT))
        bar.update(len(chunk))
    return written


def _texts(graph: GraphReader, key: Key) -> list[str | None]:
    el = graph.element(key)
    if el is None:
        return []
    ordered = sorted(el.versions, key=lambda op: op.order)
    return [op.val.get("text") if op.val else None for op in ordered]


def content_value(version: Version) -> dict[str, Any]:
    """A content value; an imported version carries when it was first written (``written``,
    ms since the epoch), since its op is stamped now (a node's clock only moves forward)."""
    val: dict[str, Any] = {"text": version.text}
    if version.written_ms is not None:
        val[WRITTEN] = version.written_ms
    return val


def import_nocturne(
    store: Store, data: NocturneData, boot: BootPlan, source: str, default_ns: str
) -> str:
    namespaces = sorted(
        {p.namespace for p in data.placements}
        | {k[0] for k in data.keywords}
        | {b.namespace for b in boot.entries}
        | {default_ns}
    )
    # Content lives per namespace: a node is written into every namespace that places it; a
    # node placed nowhere (an orphan in Nocturne) goes to the default one, where noon lists it
    # as an orphan instead of losing it.
    homes: dict[str, set[str]] = {}
    for p in data.placements:
        homes.setdefault(p.namespace, set()).add(p.child)
    placed_somewhere = set().union(*homes.values()) if homes else set()
    homes.setdefault(default_ns, set()).update(set(data.versions) - placed_somewhere)
    total = sum(len(data.versions[n]) for nodes in homes.values() for n in nodes)
    total += len(data.placements) + len(data.keywords) + len(boot.entries)
    versions_written = 0
    depth = max((len(v) for v in data.versions.values()), default=0)
    with _bar(total, "importing") as bar:
        # one version level per batch, so each version's prev names the one before
        for level in range(depth):
            todo = [
                (
                    content_key(ns, node),
                    content_value(versions[level]),
                    [v.text for v in versions[:level]],
                )
                for ns in namespaces
                for node, versions in data.versions.items()
                if node in homes.get(ns, ()) and len(versions) > level
            ]
            for chunk in _chunks(todo):

                def next_version(graph: GraphReader, chunk: Sequence[Any] = chunk) -> list[Draft]:
                    return [
                        Draft(key, val)
                        for key, val, before in chunk
                        if _texts(graph, key) == before
                    ]

                versions_written += len(store.write(next_version, client=CLIENT, via=CLIENT))
                bar.update(len(chunk))
        placements = [
            (
                edge_key(p.namespace, p.parent, p.name),
                {"child": p.child, "priority": p.priority, "disclosure": p.disclosure},
            )
            for p in data.placements
        ]
        placed = _write_absent(store, placements, bar)
        keywords: list[tuple[Key, dict[str, Any]]] = [
            (keyword_key(ns, kw, node), {}) for ns, kw, node in data.keywords
        ]
        bound = _write_absent(store, keywords, bar)
        boots: list[tuple[Key, dict[str, Any]]] = [
            (boot_key(b.namespace, b.node), {"uri": b.uri}) for b in boot.entries
        ]
        booted = _write_absent(store, boots, bar)
    return (
        f"Imported from {source}: {versions_written} content versions of "
        f"{len(data.versions)} memories, {placed} of {len(placements)} placements, {bound} of "
        f"{len(keywords)} keywords and {booted} of {len(boots)} boot entries (boot list from "
        f"{boot.source}; what was already present is skipped)."
    )


def import_markdown(store: Store, export: MarkdownExport, source: str) -> str:
    """A Markdown export: each memory's current text (with when it was written), placements,
    keywords and boot entries; what is already present is skipped. Its knowledge graphs are
    imported by :func:`import_official`."""
    contents: list[tuple[Key, dict[str, Any]]] = []
    placements: list[tuple[Key, dict[str, Any]]] = []
    keywords: list[tuple[Key, dict[str, Any]]] = []
    boots: list[tuple[Key, dict[str, Any]]] = []
    for m in export.memories:
        when = m.history[-1] if m.history else None
        contents.append((content_key(m.namespace, m.node), content_value(Version(m.text, when))))
        placements += [
            (
                edge_key(m.namespace, p.parent, p.name),
                {"child": m.node, "priority": p.priority, "disclosure": p.disclosure},
            )
            for p in m.placements
        ]
        keywords += [(keyword_key(m.namespace, k, m.node), {}) for k in m.keywords]
        if m.boot is not None:
            boots.append((boot_key(m.namespace, m.node), {"uri": m.boot} if m.boot else {}))
    total = len(contents) + len(placements) + len(keywords) + len(boots)
    with _bar(total, "importing") as bar:
        made = _write_absent(store, contents, bar)
        placed = _write_absent(store, placements, bar)
        bound = _write_absent(store, keywords, bar)
        booted = _write_absent(store, boots, bar)
    return (
        f"Imported from {source}: {made} of {len(contents)} memories, {placed} of "
        f"{len(placements)} placements, {bound} of {len(keywords)} keywords and {booted} of "
        f"{len(boots)} boot entries (what was already present is skipped)."
    )
