"""Shards for bulk-fold tests: two authors' memories written, edited, placed and tagged, and
entities with observations, after a stub of compacted ops, with a line that is not an op."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from noon.core.chain import Stub
from noon.core.ops import encode

NODES = ("node0", "node1")


def write_shards(directory: Path, per_node: int) -> None:
    """Memories written, edited, placed and tagged, and entities with observations, by two
    authors, after a stub of ten compacted ops; a line that is not an op in the middle of each
    shard."""
    rnd = random.Random(per_node)
    stamp = 1_700_000_000_000 << 16
    for node in NODES:
        lines = [Stub(node, 1, bytes(16 * 10), 0x1234).encode()]
        for seq in range(11, per_node + 1):
            stamp += rnd.randint(1, 1 << 16)
            mem = f"{node}.{rnd.randint(0, per_node // 4)}"
            r = rnd.random()
            if r < 0.4:
                el: tuple[str, ...] = ("content", "default", mem)
                val: dict[str, Any] = {"text": "memory text " * rnd.randint(1, 9)}
            elif r < 0.6:
                el = ("edge", "default", "@core", f"name{seq % 300}")
                val = {"child": mem, "priority": 1, "disclosure": "when"}
            elif r < 0.7:
                el = ("keyword", "default", f"kw{seq % 50}", mem)
                val = {}
            elif r < 0.8:
                el = ("entity", "default", f"e{seq % 400}")
                val = {"type": "person"}
            else:
                el = ("obs", "default", f"e{seq % 400}", f"seen {seq % 700}", "")
                val = {}
            lines.append(encode(node=node, seq=seq, hlc=stamp, el=el, val=val, by="test"))
            if seq == per_node // 2:
                lines.append(b'{"not": "an op"}')
        (directory / f"{node}.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
