"""The figures table: each measured figure beside its anchor (the official server, a published
figure of server-noonien, or a physical floor measured in the same run) and the cost ratio."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

NOONIEN = "server-noonien (published)"


@dataclass(frozen=True)
class Row:
    group: str
    name: str
    unit: str
    value: float
    p99: float | None = None
    anchor: str = ""
    anchor_value: float | None = None
    anchor_p99: float | None = None
    higher_is_better: bool = False

    @property
    def ratio(self) -> float | None:
        """noon's cost relative to the anchor: below 1 noon does better."""
        if not self.anchor_value or not self.value:
            return None
        if self.higher_is_better:
            return self.anchor_value / self.value
        return self.value / self.anchor_value

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    if unit in ("ops/s", "B", "MiB"):
        return f"{value:,.0f}"
    if unit == "x":
        return f"{value:.1f}"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def figure(value: float | None, p99: float | None, unit: str) -> str:
    if value is None:
        return ""
    text = fmt(value, unit)
    if p99 is not None:
        text += f" / {fmt(p99, unit)}"
    return f"{text} {unit}"


def _k(n: int | str) -> str:
    n = int(n)
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def build_rows(raw: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    fl, core, kg, uri, mesh = raw["floors"], raw["core"], raw["kg"], raw["uri"], raw["mesh"]
    rtt = fl["loopback_rtt_us"]
    rows += [
        Row("floors", "fsync of one 200-byte append", "µs", fl["fsync_us"]),
        Row("floors", "loopback TCP round trip, p50 / p99", "µs", rtt["p50"], rtt["p99"]),
        Row("floors", "start Python and import the MCP SDK", "s", fl["sdk_import_s"]),
    ]
    rows += [
        Row(
            "store",
            "append (one-op batch), fsync on",
            "ops/s",
            core["append_fsync_per_s"],
            anchor="fsync floor",
            anchor_value=core["fsync_floor_per_s"],
            higher_is_better=True,
        ),
        Row(
            "store",
            "append (one-op batch), fsync off",
            "ops/s",
            core["append_nofsync_per_s"],
            higher_is_better=True,
        ),
    ]
    decode_rate = 0.0
    for size, r in core["sizes"].items():
        raw_s = r["raw_decode_s"]
        decode_rate = r["ops"] / raw_s
        rows += [
            Row(
                "store",
                f"cold fold, {_k(size)} ops",
                "s",
                r["cold"]["open_s"],
                anchor="JSON decode of the same bytes",
                anchor_value=raw_s,
            ),
            Row(
                "store",
                f"open the read model, {_k(size)} ops",
                "s",
                r["warm"]["open_s"],
                anchor="JSON decode of the same bytes",
                anchor_value=raw_s,
            ),
            Row(
                "store",
                f"read after 1 remote op, {_k(size)} ops",
                "ms",
                r["warm"]["incremental_s"] * 1000,
                anchor="idle refresh (one stat per shard)",
                anchor_value=r["warm"]["idle_refresh_s"] * 1000,
            ),
            Row("store", f"RSS after a cold fold of {_k(size)} ops", "MiB", r["cold"]["rss_mib"]),
        ]
    fa = kg["first_answer"]
    rows.append(
        Row(
            "kg",
            "first answer of a new session, empty graph",
            "s",
            fa["noon"],
            anchor="official server" if "official" in fa else "",
            anchor_value=fa.get("official"),
        )
    )
    for size, entry in kg["sizes"].items():
        ours, theirs = entry["noon"], entry.get("official")
        for tool in kg_latency_tools(ours):
            label = "MCP ping (floor of a call)" if tool == "ping" else tool
            rows.append(
                Row(
                    "kg",
                    f"{label} at {_k(size)} entities, p50 / p99",
                    "ms",
                    ours[tool]["p50"],
                    ours[tool]["p99"],
                    "official server" if theirs else "",
                    theirs[tool]["p50"] if theirs else None,
                    theirs[tool]["p99"] if theirs else None,
                )
            )
        rows.append(
            Row(
                "kg",
                f"server RSS at {_k(size)} entities",
                "MiB",
                ours["rss_mib"]["rss"],
                anchor="official server" if theirs else "",
                anchor_value=theirs["rss_mib"]["rss"] if theirs else None,
            )
        )
    tools = uri["tools"]
    for label, what in (
        ("read_memory", "read_memory while the search index warms up"),
        ("search_memory", "search_memory"),
        ("update_memory", "update_memory"),
        ("read_memory_warm", "read_memory after warm-up"),
    ):
        rows.append(
            Row(
                "uri",
                f"{what} at {_k(tools['memories'])} memories, p50 / p99",
                "ms",
                tools[label]["p50"],
                tools[label]["p99"],
                "MCP ping, same client",
                tools["ping"]["p50"],
                tools["ping"]["p99"],
            )
        )
    for size, entry in uri["first_answer"].items():
        for label in ("cold", "shared"):
            how = (
                "on the machine's read model"
                if label == "shared"
                else "first session (folds every shard)"
            )
            rows.append(
                Row(
                    "uri",
                    f"first answer at {_k(size)} ops, {how}",
                    "s",
                    entry[label]["s"],
                    anchor="Python start + MCP SDK import",
                    anchor_value=fl["sdk_import_s"],
                )
            )
        rows.append(
            Row(
                "uri",
                f"noon serve RSS at {_k(size)} ops",
                "MiB",
                entry["shared"]["rss_mib"]["rss"],
            )
        )
    push_floor = fl["fsync_us"] / 1000 + rtt["p50"] / 1000
    for n, entry in mesh["meshes"].items():
        lat, burst = entry["latency"], entry["burst"]
        rows += [
            Row(
                "mesh",
                f"write → visible on all {n} nodes, p50 / p99",
                "ms",
                lat["p50"],
                lat["p99"],
                "fsync + loopback round trip",
                push_floor,
            ),
            Row(
                "mesh",
                f"wire bytes per op per receiver, lone writes, {n} nodes",
                "B",
                lat["wire_bytes_per_op_per_receiver"],
                anchor="the op line itself",
                anchor_value=lat["op_line_bytes"],
            ),
            Row(
                "mesh",
                f"wire bytes per op per receiver, {burst['writes']} writes in a row, {n} nodes",
                "B",
                burst["wire_bytes_per_op_per_receiver"],
                anchor=f"{NOONIEN}: 211 B/op",
                anchor_value=211,
            ),
        ]
        if "mcp_writes" in entry:
            m = entry["mcp_writes"]
            rows += [
                Row(
                    "mesh",
                    f"{m['ops']} ops written through MCP on 1 of 3 nodes",
                    "ops/s",
                    m["ops_per_s"],
                    anchor=f"{NOONIEN}: 246 ops/s",
                    anchor_value=246,
                    higher_is_better=True,
                ),
                Row(
                    "mesh",
                    "  first peer holds them all, from the first write",
                    "s",
                    m["complete_s"][0],
                    anchor=f"{NOONIEN}: +3.0 s",
                    anchor_value=3.0,
                ),
                Row(
                    "mesh",
                    "  last peer holds them all, from the first write",
                    "s",
                    m["complete_s"][-1],
                    anchor=f"{NOONIEN}: +5.1 s",
                    anchor_value=5.1,
                ),
                Row(
                    "mesh",
                    "  wire bytes per op per receiver",
                    "B",
                    m["wire_bytes_per_op_per_receiver"],
                    anchor=f"{NOONIEN}: 220 B/op received",
                    anchor_value=220,
                ),
            ]
        rows.append(Row("mesh", f"noond RSS in the {n}-node mesh", "MiB", lat["noond_rss_mib"]))
    cu = mesh["catch_up"]
    rows += [
        Row("mesh", f"fresh node pulls {_k(cu['ops'])} ops (incl. its startup)", "s", cu["s"]),
        Row(
            "mesh",
            "  catch-up rate once its daemon answers",
            "ops/s",
            cu["ops_per_s"],
            anchor="JSON decode rate of the same kind of ops",
            anchor_value=decode_rate,
            higher_is_better=True,
        ),
        Row(
            "mesh",
            "  catch-up wire bytes per op",
            "B",
            cu["wire_bytes_per_op"],
            anchor="bytes per op on disk",
            anchor_value=cu["bytes_on_disk_per_op"],
        ),
        Row(
            "mesh",
            f"noond RSS holding {_k(cu['ops'])} ops",
            "MiB",
            max(v["rss"] for v in cu["noond_rss_mib"].values()),
        ),
        Row(
            "mesh",
            f"noond CPU per idle round holding {_k(cu['ops'])} ops",
            "ms",
            cu["idle_cpu_s_per_round"] * 1000,
        ),
    ]
    for shards, value in mesh["idle_bytes"].items():
        rows.append(Row("mesh", f"wire bytes of an idle round, {shards} shards held", "B", value))
    for c in raw.get("collection", []):
        rows.append(
            Row(
                "collection",
                f"shard shrink, {c['scenario']} ({c['before']:,} → {c['after']:,} ops)",
                "x",
                c["factor"],
                anchor=f"{NOONIEN}: {c['reference']}" if c["reference_factor"] else "",
                anchor_value=c["reference_factor"],
                higher_is_better=True,
            )
        )
        rows.append(
            Row("collection", f"  collection time, {c['scenario']}", "ms", c["collect_s"] * 1000)
        )
    rows += web_rows(raw.get("web"), uri["tools"])
    return rows


def web_rows(web: dict[str, Any] | None, tools: dict[str, Any]) -> list[Row]:
    """The page at the URI tools' store size, beside an MCP session on the same store."""
    if not web:
        return []
    n = _k(web["memories"])
    same = tools.get("memories") == web["memories"]
    read = tools.get("read_memory_warm", {}) if same else {}
    tree = web["tree_http_ms"]
    rows = [
        Row("web", f"noon web start (loads {n} memories)", "s", web["start_s"]),
        Row("web", f"tree over HTTP, {n} memories, first visit", "ms", tree["cold"]),
    ]
    for key, what in (
        ("tree_http_ms", "tree over HTTP"),
        ("memory_http_ms", "a memory over HTTP"),
        ("topic_children_http_ms", f"first 100 of {_k(max(1, web['memories'] // 100))} children"),
        ("review_http_ms", "review queue, first page"),
    ):
        anchored = key == "memory_http_ms" and bool(read)
        rows.append(
            Row(
                "web",
                f"{what}, {n} memories, p50 / p99",
                "ms",
                web[key]["p50"],
                web[key]["p99"],
                anchor="read_memory through stdio MCP" if anchored else "",
                anchor_value=read.get("p50") if anchored else None,
                anchor_p99=read.get("p99") if anchored else None,
            )
        )
    for key, what in (("tree_ms", "tree"), ("memory_ms", "a memory")):
        if web.get("browser"):
            rows.append(
                Row("web", f"{what} drawn in headless Chromium, {n}", "ms", web["browser"][key])
            )
    serve_rss = tools.get("rss_mib", {}).get("rss") if same else None
    rows.append(
        Row(
            "web",
            f"page server RSS, {n} memories",
            "MiB",
            web["rss_mib"]["rss"],
            anchor="noon serve on the same store" if serve_rss else "",
            anchor_value=serve_rss,
        )
    )
    return rows


def kg_latency_tools(entry: dict[str, Any]) -> list[str]:
    return [tool for tool in entry if tool != "rss_mib"]


HEADER = ("figure", "noon", "anchor", "anchor value", "ratio")


def cells(row: Row) -> tuple[str, str, str, str, str]:
    ratio = row.ratio
    return (
        row.name,
        figure(row.value, row.p99, row.unit),
        row.anchor,
        figure(row.anchor_value, row.anchor_p99, row.unit),
        f"{ratio:.2f}" if ratio is not None else "",
    )


def format_table(rows: list[Row]) -> str:
    table = [HEADER, *(cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    out, group = [], None
    for i, line in enumerate(table):
        if i and rows[i - 1].group != group:
            group = rows[i - 1].group
            out.append(f"-- {group}")
        out.append(
            "  ".join(
                c.ljust(w) if j in (0, 2) else c.rjust(w)
                for j, (c, w) in enumerate(zip(line, widths, strict=True))
            )
        )
    return "\n".join(out)


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| figure | noon | anchor | anchor value | ratio |", "|---|---:|---|---:|---:|"]
    for d in rows:
        row = Row(**{k: v for k, v in d.items() if k != "ratio"})
        name, value, anchor, anchor_value, ratio = cells(row)
        lines.append(f"| {name.strip()} | {value} | {anchor} | {anchor_value} | {ratio} |")
    return "\n".join(lines)
