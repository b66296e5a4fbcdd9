"""``noon import SOURCE``: the official memory server's ``memory.jsonl`` / ``memory.json`` (or
any ``{entities, relations}`` JSON document: server-noonien's ``export``, a ``read_graph``
result), server-noonien's shards (its ``NOONIEN_DIR`` or one ``<node>.jsonl``), a Nocturne
Memory database (a SQLite file or a PostgreSQL URL, with its boot list), a noon export, or a
folder ``noon export --format markdown`` wrote. The
format is detected from the content; ``--format`` names it.

Everything is read and validated before the first write: bad input imports nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from noon.config import Settings, add_store_flags, settings_from
from noon.store.private import make_dir
from noon.transfer import (
    markdown_dir,
    nocturne,
    nocturne_boot,
    noon_format,
    noonien,
    official,
    postgres,
)
from noon.transfer.errors import TransferError
from noon.transfer.importer import (
    import_markdown,
    import_nocturne,
    import_official,
    import_store,
)

FORMATS = ("auto", "official", "nocturne", "noonien", "noon", "markdown")
HEAD_BYTES = 4096


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        metavar="SOURCE",
        help="memory.jsonl or memory.json (official server), an {entities, relations} JSON "
        "export, server-noonien's directory (~/.noonien) or a shard of it, a Nocturne database "
        "(.db file or postgresql://user:password@host/db), a noon export, or a folder of "
        "noon export --format markdown",
    )
    parser.add_argument("--format", choices=FORMATS, default="auto", help="default: detect")
    parser.add_argument(
        "--nocturne-config",
        type=Path,
        metavar="PATH",
        help="Nocturne's config.json or .env holding the boot list (boot_uris, "
        "CORE_MEMORY_URIS); default: the database's active preset, else config.json or .env "
        "beside the database file",
    )
    add_store_flags(parser)


def detect(path: Path) -> str:
    if markdown_dir.is_markdown_export(path):
        return "markdown"
    if path.is_dir():
        return "noonien"
    if nocturne.is_sqlite(path):
        return "nocturne"
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    if noon_format.is_noon_export(head):
        return "noon"
    return "noonien" if noonien.looks_like_shard(head) else "official"


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args, migrating=True)
    if postgres.is_url(args.source):
        data = postgres.read_postgres(args.source, settings.namespace)
        return _nocturne(settings, data, postgres.shown(args.source), args.nocturne_config, None)
    path = Path(args.source).expanduser()
    if not path.exists():
        raise TransferError(f"{path}: no such file or directory")
    kind = detect(path) if args.format == "auto" else args.format
    if path.is_dir() and kind not in ("noonien", "markdown"):
        raise TransferError(
            f"{path}: a directory; only server-noonien's directory and a noon Markdown export "
            "import as one"
        )
    if kind == "markdown":
        return _markdown(settings, markdown_dir.read_dir(path), str(path))
    if kind == "noon":
        export = noon_format.parse(path.read_bytes(), str(path))
        make_dir(settings.dir)
        added, present = noon_format.restore(settings.dir, export, str(path))
        print(f"Restored {added} operations ({present} already present) from {path}.")
        return 0
    if kind == "nocturne":
        data = nocturne.read_sqlite(path, settings.namespace)
        return _nocturne(settings, data, str(path), args.nocturne_config, path.parent)
    if kind == "noonien":
        found = noonien.read(path)
        for warning in found.warnings:
            print(f"noon: {warning}", file=sys.stderr)
        source = f"{path} (server-noonien: {found.ops} operations in {', '.join(found.shards)})"
        return _official(settings, found.graph, source)
    lines = official.open_lines(path, str(path))
    if lines is not None:
        return _official(settings, lines, str(path))
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TransferError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return _official(settings, official.parse(text, str(path)), str(path))


def _markdown(settings: Settings, export: markdown_dir.MarkdownExport, source: str) -> int:
    with import_store(settings) as store:
        print(import_markdown(store, export, source))
        for ns, graph in sorted(export.graphs.items()):
            print(import_official(store, ns, graph, f"{source}/{ns}/{markdown_dir.KG_FILE}"))
    return 0


def _official(
    settings: Settings, graph: official.OfficialGraph | official.OfficialLines, source: str
) -> int:
    with import_store(settings) as store:
        print(import_official(store, settings.namespace, graph, source))
    return 0


def _nocturne(
    settings: Settings,
    data: nocturne.NocturneData,
    source: str,
    config: Path | None,
    beside: Path | None,
) -> int:
    boot = nocturne_boot.plan(data, settings.namespace, config, beside)
    with import_store(settings) as store:
        print(import_nocturne(store, data, boot, source, settings.namespace))
    for note in boot.notes:
        print(f"noon: warning: {note}", file=sys.stderr)
    if data.deprecated_only:
        shown = ", ".join(data.deprecated_only[:5]) + (
            ", ..." if len(data.deprecated_only) > 5 else ""
        )
        print(
            f"noon: warning: {len(data.deprecated_only)} Nocturne memory(ies) hold only "
            f"deprecated versions (deleted in Nocturne) and were not imported: {shown}",
            file=sys.stderr,
        )
    if data.undated:
        print(
            f"noon: warning: {data.undated} version(s) had no readable created_at and show "
            "the import's time",
            file=sys.stderr,
        )
    return 0
