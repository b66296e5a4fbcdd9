"""``noon export``: everything, in one of three forms.

- ``noon`` (the default): every op of every shard, lossless (history, conflicts, provenance);
  only noon reads it back.
- ``markdown``: a folder, one Markdown file a memory with its URIs and metadata as YAML front
  matter, and each namespace's knowledge graph as ``memory.jsonl`` (other tools read it; ``noon
  import`` reads it back): :mod:`noon.transfer.markdown_dir`.
- ``official``: the knowledge graph of one namespace as the official server's ``memory.jsonl``
  (byte-compatible with what it writes). It holds no URI memories, and says so when some exist.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from noon.config import add_store_flags, settings_from
from noon.store.access import kg_read, service
from noon.store.private import FILE_MODE
from noon.store.store import Store
from noon.transfer import markdown_dir, noon_format, official
from noon.transfer.errors import TransferError

FORMATS = ("noon", "markdown", "official")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="noon",
        help="noon (default): every operation, lossless, for noon import; markdown: a folder "
        "(-o DIR) of Markdown files with YAML front matter, one a memory, plus each namespace's "
        "knowledge graph as memory.jsonl; official: the knowledge graph of --namespace only, as "
        "the official memory server's memory.jsonl",
    )
    parser.add_argument(
        "-o", "--output", help="file to write (default: stdout); for markdown, a new folder"
    )
    add_store_flags(parser)


def _write(chunks: Iterable[bytes], output: str | None) -> None:
    if output is None:
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        return
    target = Path(output)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with open(fd, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)


def _memory_count(store: Store, namespace: str) -> int:
    return service(store).read(lambda s: sum(1 for _ in s.graph.live_nodes(namespace)))


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    store = Store(settings)
    if args.format == "noon":
        lines = list(noon_format.export_lines(store))
        _write((line + b"\n" for line in lines), args.output)
        return 0
    if args.format == "markdown":
        if args.output is None:
            raise TransferError("--format markdown writes a folder: name it with -o DIR")
        done = markdown_dir.export_dir(store, Path(args.output))
        print(
            f"Exported {done.memories} memories and {done.entities} entities with "
            f"{done.relations} relations of {len(done.namespaces)} namespace(s) into "
            f"{args.output}/ (read it back with: noon import {args.output})"
        )
        return 0
    graph = kg_read(store, settings.namespace, lambda view: view.graph())
    _write([official.render(graph).encode("utf-8", "surrogatepass")], args.output)
    left = _memory_count(store, settings.namespace)
    if left:
        print(
            f"noon: the official format holds the knowledge graph only; the {left} URI "
            f"memories of namespace {settings.namespace!r} are not in it (export them with "
            "--format noon or --format markdown -o DIR)",
            file=sys.stderr,
        )
    return 0
