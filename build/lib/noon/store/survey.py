"""What each shard file of a directory holds, read straight from the files (for ``noon status``
and ``noon doctor``): op counts, highest seq, the newest stamp, corrupt lines with their place.

Independent of the fold, so it still answers when the fold refuses a forked directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from noon.core.hlc import physical
from noon.names import shard_node
from noon.store.shard import Corrupt, ShardReader


@dataclass
class ShardSurvey:
    file: str
    node: str
    ops: int = 0
    seq: int = 0
    """Highest seq of the shard's own author (0: none)."""
    newest_ms: int = 0
    """Physical milliseconds of the greatest HLC stamp in the shard (0: no ops)."""
    newest_op: str = ""
    """``node:seq`` of that op."""
    size: int = 0
    corrupt: list[Corrupt] = field(default_factory=list)


def shard_files(directory: Path) -> list[str]:
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if shard_node(n) is not None)


def survey(directory: Path, name: str) -> ShardSurvey:
    """One shard. Raises OSError when the file cannot be read."""
    node = shard_node(name) or name
    result = ShardSurvey(name, node)
    reader = ShardReader(directory / name)
    polled = reader.poll()
    result.size = reader.offset
    result.corrupt = polled.corrupt
    newest = 0
    for op in polled.ops:
        result.ops += 1
        if op.node == node:
            result.seq = max(result.seq, op.seq)
        if op.hlc > newest:
            newest = op.hlc
            result.newest_op = f"{op.node}:{op.seq}"
    result.newest_ms = physical(newest) if newest else 0
    return result


def survey_dir(directory: Path) -> list[ShardSurvey]:
    return [survey(directory, name) for name in shard_files(directory)]
