"""Regenerate docs/performance.md from a results file of ``bench.run``.

    python -m bench.readme_section [--results bench/results/latest.json]
                                   [--out docs/performance.md]

Every figure in its tables comes from the results file; the prose around them names what each
anchor is, and why noon misses a target or sits far from a floor where it does (the causes were
found by profiling and may quote the profile; each is shown only while its figure misses).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import orjson

from bench.table import markdown_table, section
from bench.targets import markdown_targets

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "latest.json"
OUT = ROOT / "docs" / "performance.md"

ANCHORS = [
    "**official server, same graph**: the official memory server "
    "(`@modelcontextprotocol/server-memory`, node) on the very `memory.jsonl` that `noon import` "
    "turned into noon's store; it reads the whole file on every call and keeps nothing between "
    "calls, so its first answer is node's start plus one read of the file.",
    "**Python start + MCP SDK import**: a fresh Python running `import mcp.server.lowlevel` "
    "and nothing else: the SDK as published, whose package `__init__` imports its client side "
    "too. `noon serve` imports less of it (`noon/mcp/sdk_import.py`), so a session can answer "
    "below this line.",
    "**Python start + the SDK's server side, as noon serve imports it**: a fresh Python running "
    "`noon.mcp.sdk_import.load_server_side()` and nothing else (neither the SDK's client nor "
    "its HTTP side): no session of noon answers sooner.",
    "**JSON decode of the same file / shard**: reading the bytes and decoding each line with "
    "orjson, as ops per second; anything that looks at every op is slower.",
    "**idle refresh / the same call, nothing new**: the same read when no shard grew (one "
    "`stat` per shard and a look at the read model's cursors), so the difference is the cost of "
    "folding the one remote op.",
    "**MCP ping, same client**: an empty request through the same client and server: the "
    "per-call cost of the SDK and the pipe, which no tool call goes below.",
    "**server-noonien (published)**: figures from its README, measured elsewhere (see below).",
    "**fsync floor, loopback round trip**: this machine's disk and socket, measured in the run.",
]

MISSES: list[tuple[str, str]] = [
    (
        "new session's first answer",
        "a new `noon serve` is a Python process: its start and the MCP SDK's import (the floor) "
        "already cost more than node's whole first answer; the rest is noon's own imports (the "
        "store, the tools' models) and opening the read model, which does not grow with the "
        "store.",
    ),
    (
        "RSS",
        "the session at 500k memories has loaded the `semantic` extra's embedding model and "
        "the memories' vectors (the hybrid `search_memory` loads them on first use, and this "
        "benchmark's machine has the extra). At 100k memories the same session took 205 MiB "
        "with them and 69 MiB with `NOON_SEMANTIC=off` (`python -m bench.uri_latency "
        "--memories 100000 --calls 30`, 2026-12-07, load under 1); a session without the extra "
        "never loads them.",
    ),
    (
        "read after one remote op",
        "profiled at 100k ops: the read stats every shard, takes the fold lock, opens one write "
        "transaction, folds the op (heads, derived rows) and commits; the largest single part is "
        "FTS5 rewriting the touched entity's trigram search document, which writes a new index "
        "segment on every commit. The rest is a dozen bookkeeping queries (cursors, meta, "
        "change log) of fixed cost.",
    ),
    (
        "search_memory",
        "profiled at 500k memories: the time is FTS5 reading the posting lists of the query's "
        "words. Each pass scores at most 1000 memories (the newest when more hold the words), "
        "so ranking no longer grows with the store, but a word held by most memories has a "
        "posting list as long as the store, and the second pass expands each word as a prefix "
        "(`term12*` reads every word starting so). A word held by more than half of the "
        "memories weighs nothing in BM25: once a search has found one, later searches leave it "
        "out of the match while the count of documents written proves it still holds, so its "
        "posting list is read once, not on every query (`noon/store/readmodel/weightless.py`).",
    ),
    (
        "noon import",
        "profiled at 100k ops: the import writes through the same path as a tool call, chunk by "
        "chunk: plan against the read model (a lookup per entity and relation), stamp, append "
        "and fsync, and fold it into the read model. The fold "
        "(the catch-up row) bounds it from above. Before this round each chunk also started a "
        "compaction that re-scanned the whole directory beside the import (1,839 ops/s at 1M "
        "ops in the previous large run); the import now compacts at its end, and only when "
        "something in its shard is superseded.",
    ),
    (
        "catch-up fold",
        "beyond decoding, each op is validated, its element's heads and winner are decided in "
        "Python (`noon.core.fold`), and ops, elements, derived rows and (for URI memories) "
        "search documents are written to SQLite with their indexes.",
    ),
    (
        "create_memory",
        "measured in one process at 1k / 100k children (2026-12-07): the write 1.2 / 1.9 ms of "
        "CPU (folding its own ops into the read model 0.6 / 1.1 ms of it, mostly the commit, "
        "where the search index writes a new segment), the duplicate hint 0.7 / 1.6 ms (made "
        "while the batch is fsync'd, so it overlaps the disk's wait), and the MCP SDK about "
        "0.65 ms, against a ping's 0.2 to 0.3 ms. The append and the auto-numbering do not grow "
        "with the parent (one index row names the next number).",
    ),
    (
        "knowledge-graph tool latencies",
        "each write is now also folded into the shared read model inside the call (one SQLite "
        "transaction with its indexes and the entity's trigram search document), where the "
        "in-memory fold of the earlier run only updated a dict; `read_graph` reads every entity, "
        "observation and relation back from SQLite (three covering-index scans) where the "
        "earlier run kept each entity's rendering in memory. Against the official server the "
        "tools stay level or faster at every size but bulk `create_entities` (500 a call) and "
        "`read_graph` at 50k entities.",
    ),
]
"""Why a target is missed, matched in the target's figure and measured text (first match
wins)."""
MISSES_BY_KEY = dict(MISSES)

CAUSES: list[tuple[str, str]] = [
    (
        "the machine's first session",
        "before its first answer it folds every shard into the machine's read model (the "
        "catch-up fold row): once per machine, not per session.",
    ),
    (
        "first answer",
        "a new `noon serve` is a Python process: starting Python and importing the MCP SDK "
        "(the floor) is most of its first answer, where node starts the official server and "
        "reads the whole file in a fraction of that.",
    ),
    (
        "ping between pings",
        "each server's ping right after the other server's ping and nothing else: node answers "
        "an empty request from a warm loop in about 0.1 ms, where every message through the "
        "Python MCP SDK is validated into a JSON-RPC model, handled in a task of its own past "
        "the SDK's protocol-era relay and serialised back; noon keeps the SDK's dispatch.",
    ),
    (
        "MCP ping",
        "each call goes through the Python MCP SDK, which validates and serialises every "
        "request and result with pydantic; the ping row is that per-call floor on each side.",
    ),
    (
        "read_graph",
        "profiled at 10k entities: most of the call is `SqlKg.graph` reading every entity and "
        "observation back from SQLite (one joined, sorted query), the rest the Python SDK "
        "validating and serialising the whole result; before the read model the rendering of "
        "each entity was cached in memory.",
    ),
    (
        "RSS",
        "a Python process with the MCP SDK, pydantic and SQLite's page cache, against node "
        "holding the graph as one JSON array.",
    ),
    (
        "create_entities ×500",
        "measured at 1k entities (2026-12-07): SQLite's statements are about 57% of the call: "
        "the rows, index entries and trigram search documents of 500 entities and their "
        "observations take 13 to 14 ms of CPU inserted with no Python around them, against the "
        "official server's 11 to 20 ms for its whole call; the rest is the fsynced append (the "
        "official server does not fsync) and the SDK's per-call floor, with no Python part "
        "above 2%.",
    ),
    (
        "create_entities",
        "each write is an fsynced append and a fold into the shared read model (the official "
        "server does not fsync), plus the SDK's per-call floor.",
    ),
    (
        "add_observations",
        "each write is an fsynced append and a fold into the shared read model (the official "
        "server does not fsync), plus the SDK's per-call floor.",
    ),
    (
        "search_nodes",
        "the trigram index finds the candidates, and each is checked with the official "
        "substring rule and read back with its observations from SQLite.",
    ),
    ("open_nodes", "the SDK's per-call floor dominates at this size."),
    (
        "written through MCP",
        "each call is an fsynced append and a fold into the read model; this run's fsync floor "
        "is in the floors group (the published figure comes from other hardware).",
    ),
    (
        "holds them all",
        "the peers hold each op right after it is written (push on change), so this follows "
        "the writer's pace, which its fsyncs set.",
    ),
    (
        "wire bytes per op per receiver",
        "a lone write travels as one frame on the stream kept open to each peer (PROTOCOL.md "
        "§5.1: the op line, a WebSocket header and a TLS record, and a short answer back), or "
        "as its own TLS-wrapped HTTP push while no stream is open; writes in a row coalesce "
        "into one frame or push and approach the op line itself.",
    ),
]
"""Why noon can be slower than a comparable implementation, by figure name (first match wins)."""

FLOOR_NOTES: list[tuple[str, str]] = [
    (
        "against its floor",
        "the rest is noon's own imports (the tools' models) and opening the read model.",
    ),
    (
        "first answer at",
        "the floor is starting Python and importing the MCP SDK; the rest is noon's imports and "
        "opening the read model (the machine's first session folds every shard before it).",
    ),
    (
        "append (one-op batch), fsync on",
        "each write takes the shard's cross-process lock, folds what arrived, encodes and "
        "appends its op, fsyncs, then folds its own op into the read model (one SQLite "
        "transaction); the fsync is the floor, the rest is per-write work, plus whatever else "
        "competes for the disk.",
    ),
    ("Store.refresh", MISSES_BY_KEY["read after one remote op"]),
    (
        "in a session",
        "the difference from the same call with nothing new is the fold of the one op.",
    ),
    ("noon import", MISSES_BY_KEY["noon import"]),
    ("catch-up fold", MISSES_BY_KEY["catch-up fold"]),
    ("search_memory", MISSES_BY_KEY["search_memory"]),
    ("create_memory", MISSES_BY_KEY["create_memory"]),
    (
        "_memory",
        "profiled at 50k memories: most of a read_memory or update_memory is walking the "
        "memory's URIs, one placement lookup by child per step, each a scan of the namespace's "
        "placements for want of planner statistics (see search_memory).",
    ),
    (
        "write → visible",
        "the daemon learns of a local write from inotify (where that is unavailable, by polling "
        "the shard's size every `NOOND_WATCH_INTERVAL`), then sends it on the stream open to "
        "each peer (PROTOCOL.md §5.1), and each receiver verifies, appends and fsyncs before the "
        "op counts as held; every daemon and the client share the machine's cores (`python -m "
        "bench.noond_mesh --push-vs-poll` measures polling, inotify with a POST per write, and "
        "streams side by side).",
    ),
    (
        "catch-up rate",
        "the source reads and gzips 1 MiB pages, the receiver decodes and checks "
        "every op, appends and fsyncs each page; not profiled further yet.",
    ),
]
"""Why a figure sits where it does relative to its floor or anchor (first match wins)."""


def _why(notes: list[tuple[str, str]], name: str) -> str | None:
    return next((text for key, text in notes if key in name), None)


def noonien_comparison(results: dict[str, Any]) -> list[str]:
    mesh = section(results["raw"], "mesh")
    if mesh is None:
        return []
    three = mesh["meshes"].get("3", {})
    lines = ["### Against server-noonien's published figures", ""]
    m = three.get("mcp_writes")
    if m:
        first, last = m["complete_s"][0], m["complete_s"][-1]
        lines += [
            f"- **Propagation.** Its run wrote 1000 ops through MCP on one of 3 nodes at ~246 "
            f"ops/s (4.06 s) and the peers held them all at +3.0 s and +5.1 s. The same workload "
            f"here ({m['calls']} `create_entities` calls of one entity with one observation, "
            f"{m['ops']} ops, fsync on) wrote at {m['ops_per_s']:,.0f} ops/s "
            f"({m['write_s']:.2f} s) and the peers held them all at +{first:.2f} s and "
            f"+{last:.2f} s from the first write, {(last - m['write_s']) * 1000:.0f} ms after "
            "the last one: each op reached both peers as it was written (push on change), not "
            "in periodic rounds. Caveat: its nodes were separate "
            "hosts over WireGuard with 0.5–2 s polling resolution; these are loopback daemons "
            "on one machine, so only the order of magnitude compares. Its 1689 ops/s came from "
            "a different workload (5000 writes after a full invalidation).",
        ]
        burst = three["burst"]
        lines += [
            f"- **Wire cost.** It moved ≈ 211 B per op per peer (the op's serialised size) and "
            f"≈ 220 B/op received including digest traffic. noon moved "
            f"{m['wire_bytes_per_op_per_receiver']:.0f} B/op per receiver in the MCP run "
            f"(op lines of {m['op_line_bytes']:.0f} B, plus TLS and HTTP framing), "
            f"{burst['wire_bytes_per_op_per_receiver']:.0f} B/op when writes come in a row, and "
            f"{mesh['catch_up']['wire_bytes_per_op']:.0f} B/op when a fresh node catches up "
            f"(bulk pulls are compressed; {mesh['catch_up']['bytes_on_disk_per_op']:.0f} B/op "
            "on disk).",
        ]
    lines += [
        "- **Everything else.** It publishes no fold speed, read latency, CPU or memory figures, "
        "so there is nothing to set noon's store, tool latency or RSS figures against.",
        "",
    ]
    return lines


def target_lines(results: dict[str, Any]) -> list[str]:
    found = results.get("targets") or []
    if not found:
        return []
    lines = [
        "### Issue 17's targets for the shared read model",
        "",
        "Every process of a machine reads one shared SQLite read model of the shards, folded "
        "incrementally by whichever process first sees new shard bytes. Issue 17 set these "
        "targets at 1M ops and 500k memories; a default run measures at a tenth of that (the "
        "size is in each figure), `--large` at the issue's sizes.",
        "",
        markdown_targets(found),
        "",
    ]
    missed = [t for t in found if not t["met"]]
    if missed:
        lines += ["Why the missed ones miss:", ""]
        told: set[str] = set()
        for t in missed:
            why = _why(MISSES, f"{t['figure']} {t['measured']}") or "not yet explained."
            lines.append(f"- {t['figure']}: {'the same cause.' if why in told else why}")
            told.add(why)
        lines.append("")
    return lines


def _grouped(found: list[tuple[str, float, str]]) -> list[str]:
    """One line per cause: the figures it explains with their ratios, then the cause."""
    by_cause: dict[str, list[str]] = {}
    for name, ratio, cause in found:
        by_cause.setdefault(cause, []).append(f"{name} ({ratio:.{1 if ratio >= 10 else 2}f}x)")
    return [f"- {'; '.join(names)}: {cause}" for cause, names in by_cause.items()]


def slower(results: dict[str, Any]) -> list[str]:
    """Rows where noon is slower than a comparable implementation (not a physical floor)."""
    found = []
    for r in results["rows"]:
        ratio = r["ratio"]
        if ratio is None or ratio <= 1.05:
            continue
        if not (r["anchor"].startswith("official") or r["anchor"].startswith("server-noonien")):
            continue
        cause = _why(CAUSES, r["name"]) or "not yet explained."
        found.append((r["name"].strip(), ratio, cause))
    return _grouped(found)


def floor_distances(results: dict[str, Any]) -> list[str]:
    """Figures at least 2x from a floor or a same-run anchor of noon's own, with the reason."""
    found = []
    for r in results["rows"]:
        ratio = r["ratio"]
        if ratio is None or ratio < 2 or r["anchor"].startswith(("official", "server-noonien")):
            continue
        note = _why(FLOOR_NOTES, r["name"])
        if note:
            found.append((f"{r['name'].strip()}, against {r['anchor']}", ratio, note))
    return _grouped(found)


MEASURED_APART = ROOT / "bench" / "measured_apart.md"
"""Figures measured apart from ``bench.run`` (with their commands), kept by hand until it
measures them: copied into the page as they are."""


def page(results: dict[str, Any], results_dir: Path, out: Path) -> str:
    """The markdown page; plots are linked relative to ``out``, where it will be written."""
    m = results["machine"]
    rel = Path(os.path.relpath(results_dir, out.parent))
    flags = {"large": " --large", "tiny": " --tiny"}.get(results["size"], "")
    load = results["load_average"]
    failed = results.get("failed") or {}
    lines = [
        "## Performance",
        "",
        f"Measured by `python -m bench.run{flags}` on {results['date'][:10]}: {m['cpu']}, "
        f"{m['cores']} cores, {m['ram_gib']} GiB RAM, Python {m['python']}, Linux "
        f"{m['kernel']}, node {m['node'] or '(absent)'}; the whole run took "
        f"{results['duration_s'] / 60:.1f} min with a 1-minute load average of "
        f"{load['before']:.1f} before and {load['after']:.1f} after on {m['cores']} cores (the "
        "machine is shared: other work ran beside the benchmarks, which slows every figure "
        "somewhat and widens the p99s). Every figure in the tables comes from "
        "`bench/results/latest.json`; the explanations of misses quote profiles taken on the "
        "same kind of stores while the benchmarks were written, and are shown only while the "
        "figure they explain misses.",
        "",
        "Reproduce: `pip install -e '.[bench]'`, `scripts/install-official-server.sh` (the "
        "official server, for the comparisons), `python -m bench.run` (`--large` for 1M ops, "
        "500k memories, 50k entities and a 10-node mesh), then `python -m bench.readme_section` "
        "to rewrite this page.",
        "",
        *target_lines(results),
        *MEASURED_APART.read_text().splitlines(),
        "### Every figure",
        "",
        "The *ratio* is noon's cost relative to the anchor (noon ÷ anchor for times and bytes, "
        "anchor ÷ noon for rates): below 1 noon does better; against a floor it is the distance "
        "from the limit. Latencies are p50 / p99 over the calls made; the official server and "
        "noon run one after the other on the same machine through the same stdio MCP client, "
        "noon with fsync on. Loopback figures share the machine's cores between every daemon "
        "and the client. The anchors:",
        "",
        *(f"- {a}" for a in ANCHORS),
        "",
        markdown_table(results["rows"]),
        "",
        f"![first answer]({rel / 'first_answer.png'}) "
        f"![tool latency]({rel / 'kg_latency.png'}) "
        f"![propagation]({rel / 'propagation.png'})",
        "",
        *noonien_comparison(results),
        "### Where noon is slower than a comparable implementation",
        "",
        *(slower(results) or ["- Nowhere in this run."]),
        "",
        "### Distance from the floors",
        "",
        *(floor_distances(results) or ["- Every figure is within 2x of its floor."]),
        "",
    ]
    if failed:
        lines += ["### Sections that failed in this run", ""]
        lines += [f"- {name}: `{error}`" for name, error in failed.items()]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    results = orjson.loads(args.results.read_bytes())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(page(results, args.results.resolve().parent, args.out.resolve()))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
