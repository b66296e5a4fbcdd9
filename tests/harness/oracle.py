"""The reference the read model is held to: a fresh in-memory fold of a directory's shard files,
read by the same file rules (complete batches, each shard's own ops, a collection's journal
honoured), and the views of the pure in-memory graph over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from noon.app import conflicts
from noon.graph import memory_view, views
from noon.graph.glossary import Glossary
from noon.graph.reader import GraphReader
from noon.kg.graph import KgReader
from noon.names import shard_node
from noon.store import cut
from noon.store.shard import ShardReader, list_shards
from tests.harness.fold import Fold


def fold_of_dir(directory: Path) -> Fold:
    """Every complete batch of every shard of ``directory``, folded from scratch."""
    hidden = cut.pending(directory)
    fold = Fold()
    for name in list_shards(directory):
        node = shard_node(name)
        ops = ShardReader(directory / name).poll().ops
        fold.apply_all(op for op in ops if op.node == node and op.id not in hidden)
    return fold


NOW_MS = 1_800_000_000_000


def observe(graph: GraphReader, kg: KgReader, fold: Any, ns: str = "default") -> dict[str, Any]:
    """Everything a reader can observe in namespace ``ns``: every view and tool answer of the
    URI graph and the knowledge graph, and the folded elements themselves. Two readers of the
    same shards must return equal observations."""
    glossary = Glossary(graph)
    nodes = list(graph.memory_nodes(ns))
    domains = graph.domains(ns)
    out: dict[str, Any] = {
        "domains": domains,
        "live": list(graph.live_nodes(ns)),
        "recent": list(graph.recent_nodes(ns)),
        "orphans": graph.orphans(ns),
        "boot": sorted(graph.boot_nodes(ns)),
        "keywords": {k: sorted(v) for k, v in graph.keywords(ns).items()},
        "conflicts": [(key, sorted(el.heads), el.winner.id) for key, el in graph.conflicts(ns)],
        "views": {
            "boot": views.boot(graph, glossary, ns, NOW_MS),
            "recent": views.recent(graph, ns, 10, 10, NOW_MS),
            "glossary": views.glossary_view(graph, ns, NOW_MS),
            "conflicts": conflicts.found_in(graph, ns),
            **{f"index/{d}": views.index(graph, ns, d, NOW_MS) for d in domains},
            **{f"diagnostic/{d}": views.diagnostic(graph, ns, d, NOW_MS) for d in domains},
        },
        "memories": {},
        "kg": {
            "graph": kg.graph(),
            **{f"search/{q}": kg.search(q) for q in ("", "t", "tea", "σοφ", "xxx", "PERSON")},
            "open": kg.open(["ann", "bob", "nobody"]),
            "states": kg.entity_states(["ann", "bob", "cat", "nobody"]),
            "observations_of": kg.observations_of(["bob", "ann", "nobody", "ann"]),
        },
        "frontier": fold.frontier(),
    }
    for node in nodes:
        el = graph.content(ns, node)
        uris = graph.uris(ns, node)
        memory = memory_view.memory(graph, glossary, ns, node, None, None)
        out["memories"][node] = {
            "winner": el.winner.id if el else None,
            "heads": sorted(el.heads) if el else [],
            "uris": [(str(u), p) for u, p in uris],
            "placements": graph.placements(ns, node),
            "children": graph.children(ns, node),
            "highest_number": graph.highest_number(ns, node),
            "keywords": graph.keywords_of(ns, node),
            "subtree": sorted(graph.subtree(ns, node)),
            "read": (memory.text, memory.data),
            "history": views.history(graph, ns, node, node, 50),
        }
        for uri, _ in uris:
            out["memories"][node].setdefault("resolves", []).append(graph.resolve(ns, uri))
    out["elements"] = {
        key: (fold.elements[key].winner.id, sorted(fold.elements[key].heads))
        for key in sorted(fold.elements)
        if key[1] == ns
    }
    return out
