"""The rows of the figures table, section by section, from the raw measurements of a run."""

from __future__ import annotations

from typing import Any

from bench.table import Row, k_label, section

NOONIEN = "server-noonien (published)"


def build_rows(raw: dict[str, Any]) -> list[Row]:
    """Every figure of a run, section by section; a failed section adds no rows."""
    rows: list[Row] = []
    for builder in (
        floor_rows,
        store_rows,
        read_model_rows,
        kg_rows,
        uri_rows,
        create_rows,
        mesh_rows,
        collection_rows,
        web_rows,
    ):
        rows += builder(raw)
    return rows


def floor_rows(raw: dict[str, Any]) -> list[Row]:
    fl = section(raw, "floors")
    if fl is None:
        return []
    rtt = fl["loopback_rtt_us"]
    return [
        Row("floors", "fsync of one 200-byte append", "µs", fl["fsync_us"]),
        Row("floors", "loopback TCP round trip, p50 / p99", "µs", rtt["p50"], rtt["p99"]),
        Row("floors", "start Python and import the MCP SDK", "s", fl["sdk_import_s"]),
    ]


def store_rows(raw: dict[str, Any]) -> list[Row]:
    core = section(raw, "core")
    if core is None:
        return []
    return [
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


SDK_FLOOR = "Python start + MCP SDK import"
SDK_SERVER_FLOOR = "Python start + the SDK's server side, as noon serve imports it"
OFFICIAL_SAME = "official server, same graph"


def read_model_rows(raw: dict[str, Any]) -> list[Row]:
    """The knowledge graph at scale in both servers (bench.kg_scale)."""
    scale = section(raw, "kg_scale")
    if scale is None:
        return []
    rows: list[Row] = []
    for size, e in scale["sizes"].items():
        n, official, floor = k_label(size), e.get("official"), e["floor"]["s"]
        imp, fold, shared, cold = e["import"], e["catch_up"], e["shared"], e["cold"]
        refresh, session = e["refresh"], e["session"]
        rows += [
            Row(
                "read model",
                f"noon import of an official memory.jsonl, {n} ops",
                "ops/s",
                imp["ops_per_s"],
                anchor="JSON decode of the same file",
                anchor_value=imp["decode_ops_per_s"],
                higher_is_better=True,
            ),
            Row(
                "read model",
                f"catch-up fold of {n} knowledge-graph ops",
                "ops/s",
                fold["ops_per_s"],
                anchor="JSON decode of the same shard",
                anchor_value=fold["decode_ops_per_s"],
                higher_is_better=True,
            ),
            Row(
                "read model",
                f"first answer at {n} ops, on the machine's read model",
                "s",
                shared["s"],
                anchor=OFFICIAL_SAME if official else "",
                anchor_value=official["s"] if official else None,
            ),
            Row(
                "read model",
                "  the same, against its floor",
                "s",
                shared["s"],
                anchor=SDK_FLOOR,
                anchor_value=floor,
            ),
            Row(
                "read model",
                f"first answer at {n} ops, the machine's first session (folds every shard)",
                "s",
                cold["s"],
                anchor=OFFICIAL_SAME if official else "",
                anchor_value=official["s"] if official else None,
            ),
            Row(
                "read model",
                f"noon serve RSS at {n} ops, after its first answer",
                "MiB",
                shared["rss_mib"]["rss"],
                anchor=OFFICIAL_SAME if official else "",
                anchor_value=official["rss_mib"]["rss"] if official else None,
            ),
            Row(
                "read model",
                f"  the first session's RSS, having folded {n} ops",
                "MiB",
                cold["rss_mib"]["peak"],
            ),
            Row(
                "read model",
                f"read after 1 remote op at {n} ops: Store.refresh, p50 / p99",
                "ms",
                refresh["remote_ms"]["p50"],
                refresh["remote_ms"]["p99"],
                "idle refresh (nothing new)",
                refresh["idle_ms"]["p50"],
                refresh["idle_ms"]["p99"],
            ),
            Row(
                "read model",
                f"read after 1 remote op at {n} ops: open_nodes in a session, p50 / p99",
                "ms",
                session["remote_ms"]["p50"],
                session["remote_ms"]["p99"],
                "the same call, nothing new",
                session["idle_ms"]["p50"],
                session["idle_ms"]["p99"],
            ),
        ]
    return rows


def kg_rows(raw: dict[str, Any]) -> list[Row]:
    kg = section(raw, "kg")
    if kg is None:
        return []
    fa = kg["first_answer"]
    rows = [
        Row(
            "kg",
            "first answer of a new session, empty graph",
            "s",
            fa["noon"],
            anchor="official server" if "official" in fa else "",
            anchor_value=fa.get("official"),
        )
    ]
    for size, entry in kg["sizes"].items():
        ours, theirs = entry["noon"], entry.get("official")
        for tool in kg_latency_tools(ours):
            label = "MCP ping (floor of a call)" if tool == "ping" else tool
            rows.append(
                Row(
                    "kg",
                    f"{label} at {k_label(size)} entities, p50 / p99",
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
                f"server RSS at {k_label(size)} entities",
                "MiB",
                ours["rss_mib"]["rss"],
                anchor="official server" if theirs else "",
                anchor_value=theirs["rss_mib"]["rss"] if theirs else None,
            )
        )
    return rows


def uri_rows(raw: dict[str, Any]) -> list[Row]:
    uri = section(raw, "uri")
    if uri is None:
        return []
    floor = (section(raw, "floors") or {}).get("sdk_import_s")
    n, fold = k_label(uri["memories"]), uri["catch_up"]
    rows = [
        Row(
            "uri",
            f"catch-up fold of {n} memories ({fold['ops']:,} ops, search documents included)",
            "ops/s",
            fold["ops_per_s"],
            anchor="JSON decode of the same shard",
            anchor_value=fold["decode_ops_per_s"],
            higher_is_better=True,
        ),
        Row(
            "uri",
            f"first answer at {n} memories, on the machine's read model",
            "s",
            uri["first_answer_s"],
            anchor=SDK_FLOOR if floor else "",
            anchor_value=floor,
        ),
    ]
    for label, what in (
        ("read_memory", "read_memory while the search index warms up"),
        ("search_memory", "search_memory, two words as common as the text's"),
        ("search_memory_rare", "search_memory, two rare words"),
        ("update_memory", "update_memory"),
        ("read_memory_warm", "read_memory after warm-up"),
    ):
        rows.append(
            Row(
                "uri",
                f"{what} at {n} memories, p50 / p99",
                "ms",
                uri[label]["p50"],
                uri[label]["p99"],
                "MCP ping, same client",
                uri["ping"]["p50"],
                uri["ping"]["p99"],
            )
        )
    rows.append(
        Row(
            "uri",
            f"noon serve RSS at {n} memories, after those calls",
            "MiB",
            uri["rss_mib"]["rss"],
        )
    )
    return rows


def create_rows(raw: dict[str, Any]) -> list[Row]:
    """create_memory as one parent grows: each size beside the smallest (issue 17: within 2x)."""
    create = section(raw, "create")
    if create is None:
        return []
    sizes = list(create["sizes"])
    base = create["sizes"][sizes[0]]
    rows = []
    for size in sizes:
        entry = create["sizes"][size]
        for key, how in (("untitled", "no title (auto-numbered)"), ("titled", "with a title")):
            smallest = size == sizes[0]
            anchor = entry["ping"] if smallest else base[key]
            rows.append(
                Row(
                    "create",
                    f"create_memory under a parent of {k_label(size)}, {how}, p50 / p99",
                    "ms",
                    entry[key]["p50"],
                    entry[key]["p99"],
                    "MCP ping, same client" if smallest else f"the same under {k_label(sizes[0])}",
                    anchor["p50"],
                    anchor["p99"],
                )
            )
    return rows


def mesh_rows(raw: dict[str, Any]) -> list[Row]:
    mesh, fl = section(raw, "mesh"), section(raw, "floors")
    if mesh is None or fl is None:
        return []
    rows: list[Row] = []
    rtt = fl["loopback_rtt_us"]
    uri = section(raw, "uri")
    decode_rate = uri["catch_up"]["decode_ops_per_s"] if uri else None
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
        Row("mesh", f"fresh node pulls {k_label(cu['ops'])} ops (incl. its startup)", "s", cu["s"]),
        Row(
            "mesh",
            "  catch-up rate once its daemon answers",
            "ops/s",
            cu["ops_per_s"],
            anchor="JSON decode rate of the same kind of ops" if decode_rate else "",
            anchor_value=decode_rate,
            higher_is_better=True,
        ),
        Row(
            "mesh",
            "  until noond's read model holds them too (incl. its startup)",
            "s",
            cu["readmodel_s"],
        ),
        Row(
            "mesh",
            "  a first session's answer after the catch-up"
            + (" (it had to fold)" if cu["first_session_folded"] else " (nothing left to fold)"),
            "s",
            cu["first_session_s"],
            anchor="Python start + MCP SDK import",
            anchor_value=cu["session_floor_s"],
        ),
    ]
    if "session_server_floor_s" in cu:  # runs since 2026-12-07
        rows.append(
            Row(
                "mesh",
                "  the same, against its server side alone",
                "s",
                cu["first_session_s"],
                anchor=SDK_SERVER_FLOOR,
                anchor_value=cu["session_server_floor_s"],
            )
        )
    rows += [
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
            f"noond RSS holding {k_label(cu['ops'])} ops",
            "MiB",
            max(v["rss"] for v in cu["noond_rss_mib"].values()),
        ),
        Row(
            "mesh",
            f"noond CPU per idle round holding {k_label(cu['ops'])} ops",
            "ms",
            cu["idle_cpu_s_per_round"] * 1000,
        ),
    ]
    for shards, value in mesh["idle_bytes"].items():
        rows.append(Row("mesh", f"wire bytes of an idle round, {shards} shards held", "B", value))
    return rows


def collection_rows(raw: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for c in section(raw, "collection") or []:
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
    return rows


def web_rows(raw: dict[str, Any]) -> list[Row]:
    """The page at the URI tools' store size, beside an MCP session on the same store."""
    web = section(raw, "web")
    if web is None:
        return []
    tools = section(raw, "uri") or {}
    n = k_label(web["memories"])
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
        (
            "topic_children_http_ms",
            f"first 100 of {k_label(max(1, web['memories'] // 100))} children",
        ),
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
    """The tools timed in one server's entry (beside them: ``rss_mib``, ``cpu_ms``)."""
    return [tool for tool, timed in entry.items() if isinstance(timed, dict) and "p50" in timed]
