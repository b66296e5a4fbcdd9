"""URIs, names and node ids of the memory graph.

A URI is ``domain://seg/seg/...``. It is never stored: it is derived by walking placement
(``edge``) names down from the root of its domain. The root of domain ``core`` is the parent id
``@core`` (node ids never start with ``@``), so every (namespace, domain) has its own root and
top-level placements of different domains never share an edge.

``system://`` is reserved for generated views; ``system://node/<node_id>`` addresses any node
by id, which is how an orphan (a node no root reaches) is read and placed again.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from noon.errors import Invalid

ROOT_PREFIX = "@"
SYSTEM = "system"
KG = "kg"
DEFAULT_DOMAIN = "core"
"""The domain every namespace has, written to or not."""
"""``kg://<name>`` reads a knowledge-graph entity (see :mod:`noon.kg.uri`)."""
NODE_VIEW = "system://node/"

DOMAIN = re.compile(r"^[a-z_][a-z0-9_]{0,31}$")
_URI = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)://(.*)$", re.DOTALL)
NAME = re.compile(r"^[\w][\w.-]{0,127}$")
"""A path segment: letters (any script), digits, ``_``, ``.``, ``-``; no slash or space."""
MAX_SEGMENTS = 64


class UriError(Invalid):
    """A URI, name or domain that cannot be used. The message says why and what to do."""


def root(domain: str) -> str:
    """The parent id that stands for the root of ``domain``."""
    return ROOT_PREFIX + domain


def is_root(parent: str) -> bool:
    return parent.startswith(ROOT_PREFIX)


def root_domain(parent: str) -> str:
    return parent[len(ROOT_PREFIX) :]


def new_node_id() -> str:
    """A random 96-bit id: unique without coordination between machines and processes."""
    return secrets.token_hex(12)


@dataclass(frozen=True)
class Uri:
    domain: str
    path: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.domain}://" + "/".join(self.path)

    @property
    def is_root(self) -> bool:
        return not self.path

    def parent(self) -> Uri:
        return Uri(self.domain, self.path[:-1])

    def child(self, name: str) -> Uri:
        return Uri(self.domain, (*self.path, name))


def parse(text: str) -> Uri:
    """Parse ``domain://a/b``. The domain is case-insensitive; surrounding slashes are ignored."""
    if not isinstance(text, str) or not text.strip():
        raise UriError("URI is empty. Use the form 'core://path/to/memory'.")
    m = _URI.match(text.strip())
    if m is None:
        raise UriError(
            f"'{text}' is not a memory URI. Use the form 'domain://path', e.g. 'core://agent'."
        )
    domain = m.group(1).lower()
    check_domain(domain)
    raw = m.group(2).strip("/")
    path = tuple(raw.split("/")) if raw else ()
    if len(path) > MAX_SEGMENTS:
        raise UriError(f"URI has more than {MAX_SEGMENTS} segments.")
    # Reading is lenient (imported graphs may hold names noon would not create): any non-empty
    # segment without control characters. Names are checked where they are made.
    for seg in path:
        if not seg or any(ord(c) < 32 for c in seg):
            raise UriError(f"'{text.strip()}' has an empty or invalid path segment.")
    return Uri(domain, path)


def check_domain(domain: str) -> None:
    if domain == SYSTEM:
        raise UriError("'system://' is reserved for generated views and cannot hold memories.")
    if domain == KG:
        raise UriError(
            "'kg://' names knowledge-graph entities (read-only here); edit them with "
            "the knowledge-graph tools, or put memories in another domain."
        )
    if not DOMAIN.match(domain):
        raise UriError(
            f"Invalid domain '{domain}': use lowercase letters, digits and '_' (at most 32), "
            "starting with a letter."
        )


def check_name(name: str, *, what: str = "title") -> None:
    if not NAME.match(name) or ".." in name:
        raise UriError(
            f"Invalid {what}: use letters, digits, '_', '-' or '.' (no spaces or slashes, at "
            "most 128 characters)."
        )


def node_view(node_id: str) -> str:
    return NODE_VIEW + node_id
