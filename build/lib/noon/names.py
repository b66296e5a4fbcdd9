"""Names in ``NOON_DIR``: node ids, shard file names, and what is never a shard."""

from __future__ import annotations

import re
import socket

from noon.core.ops import valid_node_id
from noon.errors import NoonError

SHARD_SUFFIX = ".jsonl"


class InvalidName(NoonError, ValueError):
    """A node id or shard name that could escape the directory or break a peer."""


def shard_file(node: str) -> str:
    """The file name of a node's shard. Refuses anything that is not a plain node id."""
    if not valid_node_id(node):
        raise InvalidName(
            f"invalid node id {node!r}: use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit, without '..'"
        )
    return node + SHARD_SUFFIX


def shard_node(file_name: str) -> str | None:
    """The node id a shard file name stands for, or None when it is not a valid shard name."""
    if not file_name.endswith(SHARD_SUFFIX):
        return None
    node = file_name[: -len(SHARD_SUFFIX)]
    return node if valid_node_id(node) else None


def sanitize_node_id(raw: str) -> str:
    """Turn a host name into a valid node id (lower case, unsafe characters to '-')."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", raw.strip().lower())
    cleaned = re.sub(r"\.{2,}", ".", cleaned).strip(".-_")[:64]
    return cleaned or "node"


def default_node_id() -> str:
    return sanitize_node_id(socket.gethostname())
