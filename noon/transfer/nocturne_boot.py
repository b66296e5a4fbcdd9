"""Nocturne's boot list: which memories ``system://boot`` loads, per namespace.

In Nocturne it is configuration, not graph data, and it moved twice (reference/nocturne.md
§2.4, its ``backend/config.py`` and ``db/presets.py``):

1. ``CORE_MEMORY_URIS=core://a,core://b`` in ``.env`` (``CORE_MEMORY_URIS__<ns>`` per namespace);
2. ``"boot_uris": {"": [...], "<ns>": [...]}`` in ``config.json``, which replaced ``.env`` once
   it existed;
3. the active row of the database's ``presets`` table (v2.5.3), seeded from ``config.json``.

Nocturne reads the newest that exists; so does the import. ``--nocturne-config PATH`` (a
``config.json`` or a ``.env``) names the source explicitly and wins; otherwise the active preset,
then ``config.json``, then ``.env`` found in the database file's directory (where Nocturne keeps
them). A namespace without its own list uses the ``""`` list, as Nocturne does.

Each entry boots under the URI it was listed with (kept in the boot element's value), not under
another alias of the same memory.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from noon.transfer import jsontext
from noon.transfer.errors import TransferError
from noon.transfer.nocturne import NAMESPACE, BootEntry, NocturneData, parse_boot_map

ENV_KEY = "CORE_MEMORY_URIS"
CONFIG_NAME = "config.json"
DOTENV_NAME = ".env"
URI = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)://(.*)$")
MAX_CONFIG_BYTES = 16 << 20
"""A configuration file larger than this is refused (Nocturne's are a few kB)."""


@dataclass
class BootPlan:
    source: str
    """Where the boot list came from, for the report."""
    entries: list[BootEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What a person should know: URIs that name nothing, duplicates, no list at all."""


def _read_text(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise TransferError(f"{path}: larger than {MAX_CONFIG_BYTES >> 20} MiB; not a config")
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TransferError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise TransferError(f"{path}: cannot read: {exc.strerror}") from None


def parse_dotenv(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (``export`` prefix, quotes and ``#`` comments allowed)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        found[key.strip()] = value
    return found


def boot_map_of_dotenv(values: dict[str, str]) -> dict[str, list[str]] | None:
    """The boot lists a ``.env`` sets, or None when it sets none."""
    found: dict[str, list[str]] = {}
    for key, value in values.items():
        if key == ENV_KEY:
            found[""] = [u.strip() for u in value.split(",") if u.strip()]
        elif key.startswith(ENV_KEY + "__"):
            found[key[len(ENV_KEY) + 2 :]] = [u.strip() for u in value.split(",") if u.strip()]
    return found or None


def read_config(path: Path) -> dict[str, list[str]] | None:
    """The boot lists of a ``config.json`` or a ``.env``; None when it has none."""
    text = _read_text(path)
    if text.lstrip().startswith("{"):
        try:
            config = jsontext.loads(text)
        except json.JSONDecodeError as exc:
            raise TransferError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(config, dict):
            raise TransferError(f"{path}: a JSON object expected")
        if "boot_uris" not in config:
            return None
        return parse_boot_map(config["boot_uris"], f"{path}: boot_uris")
    return boot_map_of_dotenv(parse_dotenv(text))


def choose(
    data: NocturneData, explicit: Path | None, beside: Path | None
) -> tuple[dict[str, list[str]] | None, str]:
    """The boot lists and where they came from, in Nocturne's order (see the module doc)."""
    if explicit is not None:
        if not explicit.is_file():
            raise TransferError(f"--nocturne-config {explicit}: no such file")
        found = read_config(explicit)
        if found is None:
            raise TransferError(
                f"--nocturne-config {explicit}: holds no boot list (no boot_uris, no {ENV_KEY})"
            )
        return found, str(explicit)
    if data.preset is not None:
        return data.preset, "the database's active preset"
    for name in (CONFIG_NAME, DOTENV_NAME):
        candidate = beside / name if beside is not None else None
        if candidate is not None and candidate.is_file():
            found = read_config(candidate)
            if found is not None:
                return found, str(candidate)
    return None, ""


def parse_uri(raw: str) -> tuple[str, str]:
    """Nocturne's URI parsing: domain lowercased, path stripped of slashes; no ``://`` means a
    path in ``core``."""
    m = URI.match(raw.strip())
    if m is None:
        return "core", raw.strip().strip("/")
    return m.group(1).lower(), m.group(2).strip("/")


def plan(
    data: NocturneData, default_ns: str, explicit: Path | None, beside: Path | None
) -> BootPlan:
    lists, source = choose(data, explicit, beside)
    if lists is None:
        where = f" or beside it in {beside}" if beside is not None else ""
        return BootPlan(
            "none",
            notes=[
                "no boot list found (no active preset in the database, no config.json or .env "
                f"with boot_uris / {ENV_KEY}{where}): system://boot will load nothing. Import "
                "again with --nocturne-config PATH, or mark the memories every session needs "
                "with the manage_boot tool"
            ],
        )
    out = BootPlan(source)
    spaces = {ns for ns, _, _ in data.at} | set(lists)
    for ns in sorted(spaces):
        if ns and not NAMESPACE.match(ns):
            out.notes.append(f"boot list of namespace {ns!r} skipped: not a valid noon namespace")
            continue
        uris = lists.get(ns, lists.get("", []))
        target = ns or default_ns
        booted: dict[str, str] = {}
        for raw in uris:
            domain, path = parse_uri(raw)
            shown = f"{domain}://{path}"
            node = data.at.get((ns, domain, path))
            if node is None:
                out.notes.append(
                    f"boot URI {raw} names no memory in namespace {target!r}; skipped "
                    "(Nocturne showed it under 'Failed to load')"
                )
            elif node in booted:
                out.notes.append(
                    f"boot URI {raw} is the same memory as {booted[node]} in namespace "
                    f"{target!r}; it boots once, as {booted[node]}"
                )
            else:
                booted[node] = shown
                out.entries.append(BootEntry(target, node, shown))
    if not out.entries:
        out.notes.append(
            f"the boot list from {source} loads no memory: system://boot will load nothing"
        )
    return out
