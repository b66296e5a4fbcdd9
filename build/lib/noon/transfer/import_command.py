"""``noon import FILE``: the official memory server's ``memory.jsonl`` / ``memory.json``, a
Nocturne Memory SQLite database, or a noon export (format detected from the content)."""

from __future__ import annotations

import argparse
from pathlib import Path

from noon.mcp.command import settings_from
from noon.store.store import Store
from noon.transfer import nocturne, noon_format, official
from noon.transfer.errors import TransferError
from noon.transfer.importer import import_nocturne, import_official, import_settings

FORMATS = ("auto", "official", "nocturne", "noon")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="memory.jsonl, memory.json, a Nocturne .db, or a noon export")
    parser.add_argument("--format", choices=FORMATS, default="auto", help="default: detect")
    parser.add_argument("--namespace", help="target namespace (default NOON_NAMESPACE)")
    parser.add_argument("--dir", help="memory directory (default NOON_DIR or ~/.noon)")
    parser.add_argument("--node-id", help="this machine's node id (default NOON_NODE_ID)")


def detect(path: Path) -> str:
    if nocturne.is_sqlite(path):
        return "nocturne"
    with open(path, "rb") as f:
        head = f.read(4096)
    return "noon" if noon_format.is_noon_export(head) else "official"


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise TransferError(f"{path}: no such file")
    settings = settings_from(args)
    kind = detect(path) if args.format == "auto" else args.format
    # Parse and validate everything before the first write: bad input imports nothing.
    if kind == "noon":
        export = noon_format.parse(path.read_bytes(), str(path))
        settings.dir.mkdir(parents=True, exist_ok=True)
        added, present = noon_format.restore(settings.dir, export, str(path))
        print(f"Restored {added} operations ({present} already present) from {path}.")
        return 0
    if kind == "nocturne":
        data = nocturne.read(path, settings.namespace)
        store = Store(import_settings(settings))
        try:
            print(import_nocturne(store, data, str(path), settings.namespace))
        finally:
            store.close()
        return 0
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TransferError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    graph = official.parse(text, str(path))
    store = Store(import_settings(settings))
    try:
        print(import_official(store, settings.namespace, graph, str(path)))
    finally:
        store.close()
    return 0
