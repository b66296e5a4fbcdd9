"""``noon history URI``: every change held for one memory, newest first: its text versions, its
placements (moves, aliases), keywords and boot membership; or, for ``kg://NAME``, an entity's
creation, observations and relations. Each with the time, machine and client."""

from __future__ import annotations

import argparse
import json

from noon.app import history
from noon.commands import log_entries
from noon.commands.opening import open_store
from noon.commands.terminal import visible
from noon.config import add_store_flags, settings_from
from noon.errors import NotFound
from noon.graph.plan import MemoryNotFound


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Show who changed one memory, from which machine and when: text versions, placements, "
        "keywords and boot membership of a URI (core://a/b, system://node/<id>), or the "
        "observations and relations of a knowledge-graph entity (kg://NAME)."
    )
    parser.add_argument("uri", help="core://path, system://node/<id> or kg://EntityName")
    parser.add_argument("-n", "--limit", type=int, default=100, help="changes shown (default 100)")
    add_store_flags(parser)
    parser.add_argument("--json", action="store_true", help="print JSON lines")


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    with open_store(settings) as store:
        ns, graph = settings.namespace, store.graph
        with store.lock, graph.reading():
            try:
                ops = history.ops_about(graph, ns, args.uri, args.limit)
            except MemoryNotFound as exc:
                raise NotFound(
                    f"no memory at {exc.uri} in namespace {ns!r}; find it with "
                    "`noon query WORDS`, or see what changed lately with `noon log`"
                ) from None
            if args.json:
                out = "\n".join(json.dumps(log_entries.entry(graph, op)) for op in ops)
            else:
                out = (
                    f"# history of {visible(args.uri.strip())} (newest first)\n"
                    + log_entries.render(graph, ops)
                )
        print(out)
    return 0
