"""Element kinds: what an op's element key looks like and what its value must hold.

An element key is a tuple of strings ``(kind, namespace, *parts)``. The kind decides the number
of parts, how a value is validated, and whether superseded versions are worth keeping as
history through compaction (memory texts and placements are; keywords and the like are not).
Every kind keeps conflict heads (see :mod:`noon.core.fold`).

A kind missing from :data:`KINDS` is unknown to this version of noon: its ops are stored,
replicated and relayed verbatim, and skipped by the fold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from noon.errors import NoonError

MAX_KEY_PART = 4096
MAX_TEXT = 1 << 20


class InvalidValue(NoonError, ValueError):
    """A value that does not fit its element kind."""


def _str_field(val: Mapping[str, Any], name: str, *, limit: int = MAX_TEXT) -> None:
    v = val.get(name)
    if not isinstance(v, str):
        raise InvalidValue(f"field {name!r} must be a string")
    if len(v) > limit:
        raise InvalidValue(f"field {name!r} is longer than {limit} characters")


def _int_field(val: Mapping[str, Any], name: str) -> None:
    v = val.get(name)
    if not isinstance(v, int) or isinstance(v, bool) or not -(2**31) <= v < 2**31:
        raise InvalidValue(f"field {name!r} must be a 32-bit integer")


def _content(val: Mapping[str, Any]) -> None:
    _str_field(val, "text")


WRITTEN = "written"
"""Optional field of a content value: when its text was first written, in ms since the epoch
(UTC), where that was before the op (an import from another system stamps its ops now, since a
node's clock only moves forward). Shown in history and reads; never used for ordering. A value
that is not such an integer is ignored, not refused: see :func:`written_at`."""


def written_at(val: Mapping[str, Any] | None) -> int | None:
    w = val.get(WRITTEN) if val else None
    if isinstance(w, int) and not isinstance(w, bool) and 0 <= w < 1 << 48:
        return w
    return None


def _edge(val: Mapping[str, Any]) -> None:
    _str_field(val, "child", limit=MAX_KEY_PART)
    _int_field(val, "priority")
    _str_field(val, "disclosure")


def _entity(val: Mapping[str, Any]) -> None:
    _str_field(val, "type", limit=MAX_KEY_PART)


def _anything(val: Mapping[str, Any]) -> None:
    return None


REVIEW_VERDICTS = frozenset(("approved", "rolled_back"))
MAX_REVIEW_AUTHORS = 10_000


def _review(val: Mapping[str, Any]) -> None:
    verdict = val.get("verdict")
    if verdict is not None and verdict not in REVIEW_VERDICTS:
        raise InvalidValue(f"field 'verdict' must be one of {sorted(REVIEW_VERDICTS)}")
    through = val.get("through")
    if through is None:
        return
    if not isinstance(through, dict) or len(through) > MAX_REVIEW_AUTHORS:
        raise InvalidValue(f"field 'through' must map at most {MAX_REVIEW_AUTHORS} nodes to seqs")
    for node, seq in through.items():
        if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq < 2**53:
            raise InvalidValue(f"field 'through' has a bad seq for {node!r:.80}")


CONTENT = "content"
EDGE = "edge"
KEYWORD = "keyword"
BOOT = "boot"
ENTITY = "entity"
OBS = "obs"
REL = "rel"
REVIEW = "review"
KG_KINDS = frozenset((ENTITY, OBS, REL))
"""The kinds of the knowledge graph (the drop-in for the official memory server)."""


@dataclass(frozen=True)
class Kind:
    name: str
    parts: int
    """Number of key parts after the namespace."""
    history: bool
    """Keep superseded versions (up to ``NOON_HISTORY``) through compaction."""
    validate: Callable[[Mapping[str, Any]], None]


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        # URI graph
        Kind(CONTENT, 1, True, _content),  # (node_id) -> {"text", "written"?}
        Kind(EDGE, 2, True, _edge),  # (parent, name) -> {"child", "priority", "disclosure"}
        Kind(KEYWORD, 2, False, _anything),  # (keyword, node_id) -> {}
        Kind(BOOT, 1, False, _anything),  # (node_id) -> {"uri"?}: the URI it was listed by
        # knowledge graph (drop-in for the official memory server)
        Kind(ENTITY, 1, False, _entity),  # (name) -> {"type"}
        Kind(OBS, 3, False, _anything),  # (entity, observation, slot) -> {} or {"text"}
        Kind(REL, 4, False, _anything),  # (from, to, relation type, slot) -> {}
        # review state of the web page (replicated: approving on one machine clears the queue on
        # every machine); one element per reviewing machine, so two machines never conflict
        Kind(REVIEW, 2, False, _review),  # (change id or "upto", reviewer node) -> see below
    )
}


def content_key(ns: str, node: str) -> tuple[str, ...]:
    """The text of memory ``node``."""
    return (CONTENT, ns, node)


def edge_key(ns: str, parent: str, name: str) -> tuple[str, ...]:
    """The placement named ``name`` under ``parent`` (a node id or a domain root)."""
    return (EDGE, ns, parent, name)


def keyword_key(ns: str, keyword: str, node: str) -> tuple[str, ...]:
    """A glossary binding of ``keyword`` to ``node``."""
    return (KEYWORD, ns, keyword, node)


def boot_key(ns: str, node: str) -> tuple[str, ...]:
    """``node``'s membership in the boot list."""
    return (BOOT, ns, node)


def entity_key(ns: str, name: str) -> tuple[str, ...]:
    return (ENTITY, ns, name)


def obs_key(ns: str, entity: str, observation_id: str, slot: int) -> tuple[str, ...]:
    """One occurrence (``slot``) of an observation, by the id :func:`noon.kg.graph.obs_id`
    derives from its text."""
    return (OBS, ns, entity, observation_id, str(slot))


def rel_key(ns: str, src: str, dst: str, rtype: str, slot: int) -> tuple[str, ...]:
    return (REL, ns, src, dst, rtype, str(slot))


def review_key(ns: str, subject: str, reviewer: str) -> tuple[str, ...]:
    """The review of ``subject`` by machine ``reviewer``. ``subject`` is a change id
    ``node:seq`` (value ``{"verdict": "approved" | "rolled_back"}``), or ``"upto"`` (value
    ``{"through": {author: seq}}``: every change of each author up to that seq is reviewed)."""
    return (REVIEW, ns, subject, reviewer)


def kind_of(key: tuple[str, ...]) -> Kind | None:
    """The kind of a well-formed key, or None when this version does not know it."""
    kind = KINDS.get(key[0])
    if kind is None or len(key) != kind.parts + 2:
        return None
    return kind


def keeps_history(key: tuple[str, ...]) -> bool:
    kind = kind_of(key)
    return kind is not None and kind.history
