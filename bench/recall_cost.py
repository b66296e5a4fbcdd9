"""What semantic search costs a machine, beside what it finds (:mod:`bench.recall`): the disk the
``semantic`` extra takes once installed, and a ``noon serve`` session's memory with the model
loaded, beside the same session with ``NOON_SEMANTIC=off``.

    python -m bench.recall_cost [--memories 1000]

The install size is read from the installed distributions' own file lists (``RECORD``): every
distribution the extra names and those they require in turn. The session is a real ``noon serve
--tools uri`` over stdio on a store of ``--memories`` synthetic memories (:mod:`bench.uri_latency`):
it is asked ``search_memory`` until an answer says it ranked ``hybrid`` (the model loads on the
first search, in the background), then its resident memory is read from ``/proc``. Its worker
embeds the store's memories meanwhile, so the figure is a session that has started doing so.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench.stats import rss_mib
from bench.uri_latency import build, serve_params, server_pid
from noon.store.readmodel.embedder import available

ROOT = Path(__file__).resolve().parent.parent
QUERY = "Which musical instrument does Lena play?"
HYBRID_WITHIN_S = 300.0
"""Bound on the wait for the first hybrid answer (the model's load took 3.5-8.5 s under load)."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _required(requirement: str) -> tuple[str, str]:
    """A requirement string's distribution name and its marker ('' when none)."""
    spec, _, marker = requirement.partition(";")
    found = _NAME.match(spec.strip())
    return (found.group(0) if found else spec.strip()), marker.strip()


def extra_size(extra: str = "semantic") -> dict[str, Any]:
    """MiB on disk of each installed distribution noon's ``extra`` brings (those it names, and
    what they require without a condition), and their total; ``None`` when it is not
    installed."""
    wanted = [
        name
        for name, marker in map(_required, metadata.requires("noon") or [])
        if re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", marker)
    ]
    sizes: dict[str, float] = {}
    while wanted:
        name = wanted.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return {"installed": None, "missing": name}
        if dist.metadata["Name"] in sizes:
            continue
        files = [Path(str(f.locate())) for f in dist.files or []]
        sizes[dist.metadata["Name"]] = sum(f.stat().st_size for f in files if f.is_file()) / 2**20
        wanted += [n for n, marker in map(_required, dist.requires or []) if not marker]
    return {"installed": round(sum(sizes.values()), 1), "mib": sizes}


async def session_rss(directory: Path, semantic: bool) -> dict[str, Any]:
    """A ``noon serve`` session on ``directory``: with ``semantic``, asked until it answers by
    meaning; else asked once. Its resident memory then (MiB), and how long that took."""
    params = serve_params(directory, NOON_SEMANTIC="on" if semantic else "off")
    start = time.perf_counter()
    async with Client(params) as client:
        ranking = ""
        while time.perf_counter() - start < HYBRID_WITHIN_S:
            answer = await client.call_tool("search_memory", {"query": QUERY})
            assert not answer.is_error, answer.content
            ranking = (answer.structured_content or {}).get("ranking", "")
            if not semantic or ranking == "hybrid":
                break
            await anyio.sleep(0.1)  # a paced client; the condition is the answer's ranking
        if semantic and ranking != "hybrid":
            raise RuntimeError(f"no hybrid answer within {HYBRID_WITHIN_S:.0f} s")
        return {
            "ranking": ranking,
            "after_s": round(time.perf_counter() - start, 2),
            "rss_mib": rss_mib(server_pid()),
        }


def sessions(memories: int) -> dict[str, Any]:
    """A session's memory on a store of ``memories`` memories, lexical and (with the extra)
    with the model loaded."""
    with tempfile.TemporaryDirectory(prefix="noon-bench-cost-") as d:
        build(Path(d), memories)
        out = {"memories": memories, "lexical": anyio.run(session_rss, Path(d), False)}
        if available():
            out["hybrid"] = anyio.run(session_rss, Path(d), True)
        else:
            out["hybrid"] = "skipped: the semantic extra is not installed, or NOON_SEMANTIC is off"
        return out


def measure(memories: int) -> dict[str, Any]:
    return {"install": extra_size(), "session": sessions(memories)}


def print_cost(cost: dict[str, Any]) -> None:
    size = cost["install"]
    if size["installed"] is None:
        print(f"semantic extra: not installed ({size['missing']} is absent)")
    else:
        parts = ", ".join(f"{n} {mib:.1f}" for n, mib in sorted(size["mib"].items()))
        print(f"semantic extra installed: {size['installed']:.1f} MiB ({parts})")
    s = cost["session"]
    for how in ("lexical", "hybrid"):
        r = s[how]
        if isinstance(r, str):
            print(f"noon serve session, {how}: {r}")
            continue
        rss = r["rss_mib"]
        print(
            f"noon serve session at {s['memories']} memories, {how} (answered {r['ranking']} "
            f"after {r['after_s']:.1f} s): RSS {rss['rss']:.0f} MiB, peak {rss['peak']:.0f} MiB"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=1000)
    args = ap.parse_args(argv)
    print_cost(measure(args.memories))
    return 0


if __name__ == "__main__":
    sys.exit(main())
