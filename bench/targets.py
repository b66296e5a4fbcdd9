"""Issue 17's targets for the shared read model, judged from the raw measurements of a run.

Each target names the figure it reads, the size it was measured at (the issue sets them at 1M
ops and 500k memories: only a ``--large`` run measures there) and whether it was met.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.table import k_label, section

BEFORE = Path(__file__).resolve().parent / "results" / "before-read-model.json"
NOISE = 1.25
"""Tool latencies count as "no worse than before" within this factor of the earlier run's
ratio to the official server (both runs measured noon and the official server side by side;
the ratio cancels most of the machine's load, not all of it)."""


@dataclass(frozen=True)
class Target:
    figure: str
    target: str
    measured: str
    met: bool


def _largest(sizes: dict[str, Any]) -> tuple[str, Any]:
    size = max(sizes, key=int)
    return size, sizes[size]


def _first_answer(raw: dict[str, Any]) -> list[Target]:
    scale = section(raw, "kg_scale")
    if scale is None:
        return []
    size, e = _largest(scale["sizes"])
    n = k_label(size)
    out = []
    if "official" in e:
        out.append(
            Target(
                f"new session's first answer at {n} ops (read model present)",
                "no slower than the official server on the same data",
                f"{e['shared']['s']:.2f} s vs {e['official']['s']:.2f} s; floor (Python start "
                f"+ MCP SDK import) {e['floor']['s']:.2f} s",
                e["shared"]["s"] <= e["official"]["s"],
            )
        )
    sessions = {f"knowledge graph at {n} ops": e["session"]["rss_mib"]["rss"]}
    uri = section(raw, "uri")
    if uri:
        sessions[f"URI tools at {k_label(uri['memories'])} memories"] = uri["rss_mib"]["rss"]
    worst = max(sessions, key=lambda k: sessions[k])
    out.append(
        Target(
            "RSS of a noon serve session",
            "under 200 MiB",
            ", ".join(f"{v:.0f} MiB ({k})" for k, v in sessions.items()),
            sessions[worst] < 200,
        )
    )
    refresh = e["refresh"]
    out.append(
        Target(
            f"read after one remote op at {n} ops (Store.refresh, p50)",
            "under 2 ms",
            f"{refresh['remote_ms']['p50']:.2f} ms (idle {refresh['idle_ms']['p50']:.2f} ms); "
            f"through a session {e['session']['remote_ms']['p50']:.2f} ms against "
            f"{e['session']['idle_ms']['p50']:.2f} ms with nothing new",
            refresh["remote_ms"]["p50"] < 2,
        )
    )
    rate = e["import"]["ops_per_s"]
    out.append(
        Target(
            f"noon import of an official memory.jsonl, {n} ops",
            "50k ops/s or more",
            f"{rate:,.0f} ops/s",
            rate >= 50_000,
        )
    )
    folds = {"knowledge graph": e["catch_up"]["ops_per_s"]}
    if uri:
        folds[f"{k_label(uri['memories'])} URI memories"] = uri["catch_up"]["ops_per_s"]
    out.append(
        Target(
            f"fresh node's catch-up fold ({n} ops of knowledge graph)",
            "50k ops/s or more",
            ", ".join(f"{v:,.0f} ops/s ({k})" for k, v in folds.items()),
            min(folds.values()) >= 50_000,
        )
    )
    return out


def _search(raw: dict[str, Any]) -> list[Target]:
    uri = section(raw, "uri")
    if uri is None:
        return []
    p50 = uri["search_memory"]["p50"]
    return [
        Target(
            f"search_memory p50 at {k_label(uri['memories'])} memories",
            "under 10 ms (at 500k memories)",
            f"{p50:.1f} ms for two words as common as the text's (p99 "
            f"{uri['search_memory']['p99']:.1f} ms), {uri['search_memory_rare']['p50']:.1f} ms "
            f"for two rare words; MCP ping {uri['ping']['p50']:.1f} ms",
            p50 < 10,
        )
    ]


def _create(raw: dict[str, Any]) -> list[Target]:
    create = section(raw, "create")
    if create is None or len(create["sizes"]) < 2:
        return []
    small, large = min(create["sizes"], key=int), max(create["sizes"], key=int)
    a, b = create["sizes"][small]["untitled"]["p50"], create["sizes"][large]["untitled"]["p50"]
    return [
        Target(
            f"create_memory under a parent of {k_label(large)} vs {k_label(small)} (p50)",
            "within 2x",
            f"{b:.1f} ms vs {a:.1f} ms ({b / a:.1f}x)",
            b <= 2 * a,
        )
    ]


def _tools(raw: dict[str, Any], before: dict[str, Any]) -> list[Target]:
    kg = section(raw, "kg")
    if kg is None:
        return []
    out = []
    for size, then in before["sizes"].items():
        now = kg["sizes"].get(size)
        if not now or "official" not in now:
            continue
        worst, worst_growth = "", 0.0
        for tool, was in then["noon"].items():
            ratio_then = was["p50"] / then["official"][tool]["p50"]
            ratio_now = now["noon"][tool]["p50"] / now["official"][tool]["p50"]
            if ratio_now / ratio_then > worst_growth:
                worst, worst_growth = tool, ratio_now / ratio_then
        out.append(
            Target(
                f"knowledge-graph tool latencies at {k_label(size)} entities",
                f"no worse than before the read model (run {before['commit']}), as a ratio to "
                f"the official server, within {NOISE}x",
                f"worst: {worst} at {worst_growth:.2f}x its earlier ratio (p50 "
                f"{now['noon'][worst]['p50']:.2f} ms, was {then['noon'][worst]['p50']:.2f} ms)",
                worst_growth <= NOISE,
            )
        )
    return out


def targets(raw: dict[str, Any], before: Path = BEFORE) -> list[Target]:
    """Every target this run measured, in the issue's order."""
    earlier = json.loads(before.read_text()) if before.exists() else {"sizes": {}}
    found = _first_answer(raw) + _search(raw) + _create(raw) + _tools(raw, earlier)
    order = ("new session", "RSS", "read after", "search", "noon import", "fresh node", "create")
    return sorted(
        found, key=lambda t: next((i for i, k in enumerate(order) if k in t.figure), len(order))
    )


def as_dicts(found: list[Target]) -> list[dict[str, Any]]:
    return [asdict(t) for t in found]


def format_targets(found: list[Target]) -> str:
    return "\n".join(
        f"{'met ' if t.met else 'MISS'}  {t.figure}: {t.measured} (target: {t.target})"
        for t in found
    )


def markdown_targets(found: list[dict[str, Any]]) -> str:
    lines = ["| figure | target | measured | met |", "|---|---|---|---|"]
    lines += [
        f"| {t['figure']} | {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |"
        for t in found
    ]
    return "\n".join(lines)
