"""Read model size beside the shards it derives from: a store of memories with several
versions each (the op log keeps every version), folded, then the SQLite file measured table by
table (``dbstat``), FTS5 shadow tables counted under their table.

    python -m bench.readmodel_size --memories 5000 --versions 3
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from bench.shards import ShardWriter
from bench.uri_latency import NS, TOPICS, WORDS, text_of
from noon.config import Settings
from noon.core.elements import content_key, edge_key
from noon.core.ops import Draft
from noon.graph.plan import edge_val
from noon.graph.uri import new_node_id, root
from noon.store.readmodel.schema import FILE_NAME
from noon.store.store import Store

FTS_SHADOWS = ("_data", "_idx", "_content", "_docsize", "_config")


def _owner(name: str) -> str:
    for suffix in FTS_SHADOWS:
        if name.endswith(suffix) and name.removesuffix(suffix).endswith("_fts"):
            return name.removesuffix(suffix)
    return name


def build(directory: Path, memories: int, versions: int) -> None:
    """``memories`` memories under 100 topics, then ``versions - 1`` later edits of each (one
    writer: each edit names the version it replaces, as a tool's does)."""
    writer = ShardWriter(directory, "bench")
    rnd = random.Random(memories)
    nodes: list[tuple[str, int]] = []
    per = max(1, memories // TOPICS)
    for t in range(TOPICS):
        topic = new_node_id()
        drafts = [
            Draft(content_key(NS, topic), {"text": f"Topic {t}: " + text_of(rnd, 20)}),
            Draft(edge_key(NS, root("core"), f"topic{t}"), edge_val(topic, 1, "when t")),
        ]
        for i in range(per):
            node = new_node_id()
            drafts.append(
                Draft(content_key(NS, node), {"text": f"Memory {t}/{i}: " + text_of(rnd, 30)})
            )
            drafts.append(
                Draft(
                    edge_key(NS, topic, f"m{i}"),
                    edge_val(node, 2, f"When {rnd.choice(WORDS)} comes up"),
                )
            )
        writer.batch(drafts)
        nodes += [
            (d.el[2], writer.seq - len(drafts) + j + 1)
            for j, d in enumerate(drafts)
            if d.el[0] == "content"
        ]
    for v in range(1, versions):
        for start in range(0, len(nodes), 1000):
            chunk = nodes[start : start + 1000]
            first = writer.seq + 1
            writer.batch(
                [
                    Draft(
                        content_key(NS, n),
                        {"text": f"v{v}: " + text_of(rnd, 30)},
                        prev=(("bench", seq),),
                    )
                    for n, seq in chunk
                ]
            )
            nodes[start : start + 1000] = [(n, first + j) for j, (n, _) in enumerate(chunk)]


def measure(directory: Path) -> dict[str, Any]:
    Store(Settings.from_env({}, dir=directory, node_id="bench", fsync=False)).close()
    path = directory / ".noon" / FILE_NAME
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables: dict[str, int] = {}
        for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            tables[_owner(name)] = tables.get(_owner(name), 0) + int(size)
    finally:
        conn.close()
    shards = sum(p.stat().st_size for p in directory.glob("*.jsonl"))
    model = path.stat().st_size
    return {
        "shard_bytes": shards,
        "read_model_bytes": model,
        "ratio": round(model / shards, 2),
        "largest": dict(sorted(tables.items(), key=lambda kv: -kv[1])[:12]),
    }


def run(memories: int, versions: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="noon-bench-size-") as d:
        build(Path(d), memories, versions)
        return {"memories": memories, "versions": versions, **measure(Path(d))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=5000)
    ap.add_argument("--versions", type=int, default=3)
    args = ap.parse_args()
    print(json.dumps(run(args.memories, args.versions), indent=1))


if __name__ == "__main__":
    main()
