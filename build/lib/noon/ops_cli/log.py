"""``noon log``: the newest changes to the memory, newest first: when, on which machine, by which
client (the MCP client's name, or ``cli``), and what changed. Every version still held counts,
including superseded ones (compaction keeps the last ``NOON_HISTORY`` per memory)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from noon.graph.model import Graph
from noon.ops_cli import journal
from noon.ops_cli.status import settings_from
from noon.store.store import Store


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Show the newest changes, newest first: time (UTC), machine (node id), client (the MCP "
        "client that wrote it, or cli) and what changed."
    )
    parser.add_argument("-n", "--limit", type=int, default=30, help="changes shown (default 30)")
    parser.add_argument("--node", help="only changes made on this machine (node id)")
    parser.add_argument("--by", help="only changes made by this client (e.g. claude-code)")
    parser.add_argument("--dir", type=Path, help="shard directory (default: $NOON_DIR)")
    parser.add_argument("--node-id", help="this node's id (default: $NOON_NODE_ID)")
    parser.add_argument("--json", action="store_true", help="print JSON lines")


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if not settings.dir.is_dir():
        print(f"noon: {settings.dir} does not exist; set NOON_DIR")
        return 1
    store = Store(settings)
    try:
        ns = settings.namespace
        fold = store.fold
        keys = [k for k in fold.elements if k[1] == ns]
        ops = journal.newest(
            journal.ops_of(fold, keys),
            max(1, args.limit),
            lambda o: (
                (args.node is None or o.node == args.node) and (args.by is None or o.by == args.by)
            ),
        )
        graph = Graph(fold)
        if args.json:
            for op in ops:
                print(json.dumps(journal.entry(graph, op)))
        else:
            print(journal.render(graph, ops))
    finally:
        store.close()
    return 0
