"""``noon log``: the newest changes to the memory, newest first: when, on which machine, by which
client (the MCP client's name, or ``cli``), and what changed. Every version still held counts,
including superseded ones (compaction keeps the last ``NOON_HISTORY`` per memory)."""

from __future__ import annotations

import argparse
import json

from noon.app import history
from noon.commands import log_entries
from noon.commands.opening import open_store
from noon.config import add_store_flags, settings_from


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Show the newest changes, newest first: time (UTC), machine (node id), client (the MCP "
        "client that wrote it, or cli) and what changed."
    )
    parser.add_argument("-n", "--limit", type=int, default=30, help="changes shown (default 30)")
    parser.add_argument("--node", help="only changes made on this machine (node id)")
    parser.add_argument("--by", help="only changes made by this client (e.g. claude-code)")
    add_store_flags(parser)
    parser.add_argument("--json", action="store_true", help="print JSON lines")


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    with open_store(settings) as store:
        graph = store.graph
        with store.lock, graph.reading():
            ops = history.newest_ops(
                graph, settings.namespace, args.limit, node=args.node, client=args.by
            )
            if args.json:
                out = "\n".join(json.dumps(log_entries.entry(graph, op)) for op in ops)
            else:
                out = log_entries.render(graph, ops)
        print(out)
    return 0
