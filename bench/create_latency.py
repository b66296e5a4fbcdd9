"""``create_memory`` under one parent as the parent grows: no write may scan the store (issue 17
asks for the cost at 100k memories within 2x of the cost at 1k).

    python -m bench.create_latency [--children 1000 100000] [--calls 50] [--before DIR]

One parent, ``core://big``, gets its children as a peer's shard (numbered names, as
``create_memory`` without a title gives them; ~200 characters of Zipf-worded text, so the
duplicate hint has common words to look up). At each size a new ``noon serve --tools uri``
session on the machine's read model makes ``calls`` calls of ``create_memory`` under it without
a title (auto-numbered: the usual call) and ``calls`` with one, beside an MCP ping; each with
the session process's CPU ms per call (``cpu_ms``, from /proc: the steadiest figure under load,
though its background threads' work, such as embedding the new memories, counts where it falls).
``--before DIR`` adds a session of the noon whose ``noon`` package sits in DIR (``git archive
OLD noon | tar -x -C DIR``) on the same store, the two sessions' calls interleaved round by
round, so a change of the machine's load hits each alike.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.core import settings
from bench.kg_latency import noon_client
from bench.pipe import PipeClient
from bench.shards import ShardWriter
from bench.stats import cpu_seconds, percentiles
from bench.uri_latency import NS, text_of
from noon.core.elements import content_key, edge_key
from noon.core.ops import Draft
from noon.graph.plan import edge_val
from noon.graph.uri import new_node_id, root
from noon.store.store import Store

PARENT = "core://big"
BATCH = 5000
"""Children per batch of the peer's shard."""


class Parent:
    """The peer's shard holding ``core://big`` and its children."""

    def __init__(self, directory: Path) -> None:
        self.writer = ShardWriter(directory, "peer")
        self.node = new_node_id()
        self.children = 0
        self.last_name = 0
        """The highest number a child is named by (sessions name theirs after it)."""
        self.rnd = random.Random(7)
        self.writer.batch(
            [
                Draft(content_key(NS, self.node), {"text": "Everything, one memory each."}),
                Draft(edge_key(NS, root("core"), "big"), edge_val(self.node, 1, "always")),
            ]
        )

    def grow_to(self, n: int) -> None:
        while self.children < n:
            drafts = []
            for _ in range(min(BATCH, n - self.children)):
                self.children += 1
                self.last_name += 1
                child = new_node_id()
                text = f"Note {self.last_name}: {text_of(self.rnd, 30)}"
                drafts.append(Draft(content_key(NS, child), {"text": text}))
                name = str(self.last_name)
                drafts.append(Draft(edge_key(NS, self.node, name), edge_val(child, 2, "when")))
            self.writer.batch(drafts)

    def created(self, untitled: int, titled: int) -> None:
        """A session created children named after :attr:`last_name` and titled ones."""
        self.children += untitled + titled
        self.last_name += untitled


def _timed(client: PipeClient, tool: str, args: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    reply = client.call(tool, args)
    elapsed = (time.perf_counter() - t0) * 1000
    if reply.get("isError") or "__error__" in reply:
        raise RuntimeError(f"{tool} failed: {str(reply)[:500]}")
    return elapsed


def measure(
    directory: Path, calls: int, rnd: random.Random, start: int, before: Path | None = None
) -> dict[str, Any]:
    """One session (two with ``before``): ``calls`` creates without a title, ``calls`` with
    one, pings between; with ``before`` its figures are under ``"before"``."""
    codes: dict[str, Path | None] = {"now": None}
    if before is not None:
        codes["before"] = before
    clients = {
        name: noon_client(directory, tools="uri", timeout=600, code=code)
        for name, code in codes.items()
    }
    times: dict[str, dict[str, list[float]]] = {
        name: {"ping": [], "untitled": [], "titled": []} for name in clients
    }
    cpu: dict[str, dict[str, float]] = {name: dict.fromkeys(times[name], 0.0) for name in clients}

    def timed(name: str, kind: str, tool: str, args: dict[str, Any]) -> None:
        pid = clients[name].proc.pid
        used, t0 = cpu_seconds(pid), time.perf_counter()
        if tool == "ping":
            clients[name].request("ping")
        else:
            _timed(clients[name], tool, args)
        times[name][kind].append((time.perf_counter() - t0) * 1000)
        cpu[name][kind] += cpu_seconds(pid) - used

    try:
        for k in range(calls):
            for n, name in enumerate(clients):
                timed(name, "ping", "ping", {})
                args = {"parent_uri": PARENT, "priority": 2, "disclosure": "when it comes up"}
                timed(name, "untitled", "create_memory", {**args, "content": text_of(rnd, 30)})
                title = f"new{start + k * len(clients) + n}"
                content = text_of(rnd, 30)
                timed(name, "titled", "create_memory", {**args, "content": content, "title": title})
    finally:
        for client in clients.values():
            client.close()

    def figures(name: str) -> dict[str, Any]:
        out: dict[str, Any] = {kind: percentiles(v) for kind, v in times[name].items()}
        out["cpu_ms"] = {kind: 1000 * used / calls for kind, used in cpu[name].items()}
        return out

    out = figures("now")
    if before is not None:
        out["before"] = figures("before")
    return out


def run(sizes: list[int], calls: int, before: Path | None = None) -> dict[str, Any]:
    """{children: latencies} for each size of the parent, in increasing order, in one store."""
    out: dict[str, Any] = {"sizes": {}}
    rnd = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="noon-bench-create-") as tmp:
        d = Path(tmp)
        parent = Parent(d)
        for k, size in enumerate(sorted(sizes)):
            parent.grow_to(size)
            Store(settings(d, "bench")).close()  # fold the new children before the session
            sessions = 1 if before is None else 2
            out["sizes"][str(size)] = measure(d, calls, rnd, k * calls * sessions, before)
            parent.created(calls * sessions, calls * sessions)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--children", type=int, nargs="+", default=[1000, 100_000])
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--before", type=Path, default=None, metavar="DIR")
    args = ap.parse_args()
    print(json.dumps(run(args.children, args.calls, args.before), indent=1))


if __name__ == "__main__":
    main()
