"""``noon history URI``: every change held for one memory, newest first: its text versions, its
placements (moves, aliases), keywords and boot membership; or, for ``kg://NAME``, an entity's
creation, observations and relations. Each with the time, machine and client."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from noon.core.elements import EDGE, ENTITY, KEYWORD, OBS, REL, boot_key, content_key
from noon.core.fold import Fold
from noon.core.ops import Key
from noon.graph.model import Graph
from noon.graph.plan import GraphError, locate
from noon.graph.uri import UriError
from noon.kg import uri as kg_uri
from noon.ops_cli import journal
from noon.ops_cli.status import settings_from
from noon.store.store import Store


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Show who changed one memory, from which machine and when: text versions, placements, "
        "keywords and boot membership of a URI (core://a/b, system://node/<id>), or the "
        "observations and relations of a knowledge-graph entity (kg://NAME)."
    )
    parser.add_argument("uri", help="core://path, system://node/<id> or kg://EntityName")
    parser.add_argument("-n", "--limit", type=int, default=100, help="changes shown (default 100)")
    parser.add_argument("--dir", type=Path, help="shard directory (default: $NOON_DIR)")
    parser.add_argument("--node-id", help="this node's id (default: $NOON_NODE_ID)")
    parser.add_argument("--json", action="store_true", help="print JSON lines")


def memory_keys(fold: Fold, ns: str, node: str) -> list[Key]:
    """Every element that is part of memory ``node``: its content, every placement that ever
    put it somewhere, its keywords and its boot membership."""
    keys: list[Key] = [content_key(ns, node), boot_key(ns, node)]
    for key, el in fold.elements.items():
        if key[1] != ns:
            continue
        keyword = key[0] == KEYWORD and key[3] == node
        if keyword or (
            key[0] == EDGE
            and any(v.val is not None and v.val.get("child") == node for v in el.versions)
        ):
            keys.append(key)
    return keys


def entity_keys(fold: Fold, ns: str, name: str) -> list[Key]:
    return [
        key
        for key in fold.elements
        if key[1] == ns
        and (
            (key[0] in (ENTITY, OBS) and key[2] == name)
            or (key[0] == REL and name in (key[2], key[3]))
        )
    ]


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if not settings.dir.is_dir():
        print(f"noon: {settings.dir} does not exist; set NOON_DIR")
        return 1
    store = Store(settings)
    try:
        ns, fold = settings.namespace, store.fold
        graph = Graph(fold)
        name = kg_uri.entity_name(args.uri.strip())
        if name:
            keys = entity_keys(fold, ns, name)
            if not keys:
                print(f"noon: no entity named {name!r} was ever written here")
                return 1
        else:
            try:
                node, _, _ = locate(graph, ns, args.uri)
            except (GraphError, UriError) as exc:
                print(f"noon: {exc}")
                return 1
            keys = memory_keys(fold, ns, node)
        ops = journal.newest(journal.ops_of(fold, keys), max(1, args.limit))
        if args.json:
            for op in ops:
                print(json.dumps(journal.entry(graph, op)))
        else:
            print(f"# history of {args.uri.strip()} (newest first)")
            print(journal.render(graph, ops))
    finally:
        store.close()
    return 0
