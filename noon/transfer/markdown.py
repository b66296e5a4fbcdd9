"""One memory as a Markdown file with YAML front matter: what ``noon export --format markdown``
writes and ``noon import`` reads back.

A file is ``---``, one ``key: value`` line per field, ``---``, then the memory's text verbatim
(nothing added, nothing stripped). Every value is written in JSON syntax, which is YAML's flow
syntax, so any YAML front-matter reader (Obsidian, Hugo, Jekyll, PyYAML) reads the same values;
reading back here needs no YAML parser. The fields:

- ``id``: the node id (a re-import addresses the same memory);
- ``namespace``;
- ``uri``, ``aliases``: the memory's best URI and its others, as ``read_memory`` shows them;
- ``priority``, ``disclosure``: those of the placement ``uri`` comes from;
- ``placements``: every placement of the memory, exactly (``parent`` is a node id or a domain
  root ``core://``; ``name``, ``priority``, ``disclosure``): what an import writes;
- ``keywords``: its glossary keywords; ``boot``: ``false``, ``true`` (it boots under its best
  URI) or the URI it was listed by;
- ``created``, ``updated``, ``history``: when its first, current and every version was written
  (ISO 8601, UTC, oldest first).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any

from noon.core.elements import MAX_KEY_PART, MAX_TEXT
from noon.core.hlc import utc
from noon.graph.uri import DOMAIN, NODE_VIEW, ROOT_PREFIX
from noon.transfer.errors import TransferError

FENCE = "---"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
NODE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
FIELDS = (
    "id",
    "namespace",
    "uri",
    "aliases",
    "priority",
    "disclosure",
    "placements",
    "keywords",
    "boot",
    "created",
    "updated",
    "history",
)
MAX_FILE = MAX_TEXT + (4 << 20)
"""A file larger than this is refused: the text's own bound plus room for front matter."""
_NOT_YAML_PRINTABLE = re.compile("[\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff\u2028\u2029]")
"""What YAML does not allow raw in a file (or reads as a line break or byte-order mark); JSON
escapes only what is below U+0020."""


@dataclass(frozen=True)
class MdPlacement:
    parent: str
    """A node id, or a domain root as noon keeps it (``@core``)."""
    name: str
    priority: int
    disclosure: str


@dataclass
class MdMemory:
    namespace: str
    node: str
    text: str
    uri: str
    aliases: list[str] = field(default_factory=list)
    placements: list[MdPlacement] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    boot: str | None = None
    """The URI it boots under ("" when booted under its best URI), None when not booted."""
    history: list[int] = field(default_factory=list)
    """When each version was written, ms since the epoch, oldest first (the current one last)."""


def _json(value: object) -> str:
    out = json.dumps(value, ensure_ascii=False)
    return _NOT_YAML_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)


def _parent_text(parent: str) -> str:
    return parent[len(ROOT_PREFIX) :] + "://" if parent.startswith(ROOT_PREFIX) else parent


def render(memory: MdMemory) -> str:
    primary = memory.placements[0] if memory.placements else None
    values: dict[str, Any] = {
        "id": memory.node,
        "namespace": memory.namespace,
        "uri": memory.uri,
        "aliases": memory.aliases,
        "priority": primary.priority if primary else None,
        "disclosure": primary.disclosure if primary else None,
        "placements": [
            {
                "parent": _parent_text(p.parent),
                "name": p.name,
                "priority": p.priority,
                "disclosure": p.disclosure,
            }
            for p in memory.placements
        ],
        "keywords": memory.keywords,
        "boot": False if memory.boot is None else (memory.boot or True),
        "created": utc(memory.history[0], "iso_ms") if memory.history else None,
        "updated": utc(memory.history[-1], "iso_ms") if memory.history else None,
        "history": [utc(ms, "iso_ms") for ms in memory.history],
    }
    head = "\n".join(f"{key}: {_json(values[key])}" for key in FIELDS)
    return f"{FENCE}\n{head}\n{FENCE}\n{memory.text}"


class MarkdownError(TransferError):
    """A file that is not a memory as :func:`render` writes it; the message says what."""


def _ms(text: object, what: str) -> int:
    if not isinstance(text, str):
        raise MarkdownError(f"{what} must be an ISO 8601 time")
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise MarkdownError(f"{what} {text!r:.60} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return (when - _EPOCH) // dt.timedelta(milliseconds=1)  # exact, unlike a float timestamp


def _string(values: dict[str, Any], key: str, limit: int = MAX_KEY_PART) -> str:
    value = values.get(key)
    if not isinstance(value, str) or len(value) > limit:
        raise MarkdownError(f"'{key}' must be text of at most {limit} characters")
    return value


def _placement(raw: object, at: int) -> MdPlacement:
    if not isinstance(raw, dict):
        raise MarkdownError(f"placements[{at}] must be a mapping")
    parent, name = _string(raw, "parent"), _string(raw, "name")
    priority, disclosure = raw.get("priority"), _string(raw, "disclosure", MAX_TEXT)
    if parent.endswith("://"):
        domain = parent[:-3]
        if not DOMAIN.match(domain) or domain in ("system", "kg"):
            raise MarkdownError(f"placements[{at}]: {parent!r} is not a domain root")
        parent = ROOT_PREFIX + domain
    elif not NODE_ID.match(parent):
        raise MarkdownError(f"placements[{at}]: parent {parent!r:.80} is not a node id")
    if not name or "/" in name or any(ord(c) < 32 for c in name):
        raise MarkdownError(f"placements[{at}]: name {name!r:.80} is not a path segment")
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise MarkdownError(f"placements[{at}]: priority must be an integer")
    return MdPlacement(parent, name, priority, disclosure)


def parse(text: str) -> MdMemory:
    """A memory from a file's text; :class:`MarkdownError` says what is wrong."""
    if not text.startswith(FENCE + "\n"):
        raise MarkdownError("does not start with a '---' front matter line")
    end = text.find(f"\n{FENCE}\n", len(FENCE))
    if end < 0:
        raise MarkdownError("its front matter has no closing '---' line")
    values: dict[str, Any] = {}
    for no, line in enumerate(text[len(FENCE) + 1 : end].split("\n"), 2):
        key, sep, raw = line.partition(": ")
        if not sep or key not in FIELDS:
            raise MarkdownError(f"line {no}: expected 'field: value' with a known field")
        try:
            values[key] = json.loads(raw)
        except json.JSONDecodeError:
            raise MarkdownError(f"line {no}: the value of '{key}' is not JSON") from None
    node = _string(values, "id")
    if not NODE_ID.match(node):
        raise MarkdownError(f"id {node!r:.80} is not a node id")
    body = text[end + len(FENCE) + 2 :]
    if len(body) > MAX_TEXT:
        raise MarkdownError(f"its text is longer than {MAX_TEXT} characters")
    placements, keywords = values.get("placements", []), values.get("keywords", [])
    if not isinstance(placements, list):
        raise MarkdownError("'placements' must be a list")
    if not isinstance(keywords, list) or not all(
        isinstance(k, str) and 0 < len(k) <= MAX_KEY_PART for k in keywords
    ):
        raise MarkdownError("'keywords' must be a list of words")
    boot = values.get("boot", False)
    if not isinstance(boot, (bool, str)):
        raise MarkdownError("'boot' must be true, false or a URI")
    history = values.get("history", [])
    if not isinstance(history, list):
        raise MarkdownError("'history' must be a list of times")
    return MdMemory(
        namespace=_string(values, "namespace"),
        node=node,
        text=body,
        uri=str(values.get("uri") or NODE_VIEW + node),
        placements=[_placement(p, i) for i, p in enumerate(placements)],
        keywords=list(keywords),
        boot=None if boot is False else ("" if boot is True else boot),
        history=[_ms(h, f"history[{i}]") for i, h in enumerate(history)],
    )
