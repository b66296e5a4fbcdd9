"""``noon export``: the knowledge graph in the official ``memory.jsonl`` format (byte-compatible
with what the official server writes), or everything losslessly in noon's own format."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from noon.kg.graph import View
from noon.kg.live import read
from noon.mcp.command import settings_from
from noon.store.store import Store
from noon.transfer import noon_format, official


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("official", "noon"),
        default="official",
        help="official: the knowledge graph as memory.jsonl (default); noon: every operation, "
        "lossless, for noon import",
    )
    parser.add_argument("-o", "--output", help="file to write (default: stdout)")
    parser.add_argument("--namespace", help="namespace of the knowledge graph (official format)")
    parser.add_argument("--dir", help="memory directory (default NOON_DIR or ~/.noon)")
    parser.add_argument("--node-id", help="this machine's node id (default NOON_NODE_ID)")


def _write(chunks: Iterable[bytes], output: str | None) -> None:
    if output is None:
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        return
    target = Path(output)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    store = Store(settings)
    if args.format == "noon":
        lines = list(noon_format.export_lines(store))
        _write((line + b"\n" for line in lines), args.output)
        return 0
    graph = read(store, settings.namespace, View.graph)
    _write([official.render(graph).encode("utf-8", "surrogatepass")], args.output)
    return 0
