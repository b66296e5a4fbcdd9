"""The layering docs/architecture.md describes, checked: every import of noon, noond, the test kit
(tests/harness) and bench is read from the source (static ``import`` statements, top level or
nested), and a forbidden edge or a cycle between packages fails with the file and line that made
it."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.harness.mesh import ROOT

LAYER = {
    "noon.errors": 0,
    "noon.core": 1,
    "noon.names": 2,
    "noon.config": 2,
    "noon.setting": 2,
    "noon.logging_setup": 2,
    "noon.net": 2,
    "noon.package": 2,
    "noon.codecache": 2,
    "noon.graph": 3,
    "noon.kg": 3,
    "noon.store": 4,
    "noon.app": 5,
    "noon.certs": 5,
    "noon.daemon_link": 5,
    "noon.mcp": 6,
    "noon.web": 6,
    "noon.commands": 6,
    "noon.transfer": 6,
    "noon.demo": 6,
    "noon.cli": 7,
    "noon.__main__": 7,
    "noond": 8,
    "tests.harness": 9,
    "bench": 10,
}
"""A package may import packages of a lower layer; within a layer, only what ALLOWED says."""

ALLOWED = {
    ("noon.config", "noon.names"),
    ("noon.config", "noon.errors"),
    ("noon.config", "noon.setting"),
    ("noon.names", "noon.errors"),
    ("noon.logging_setup", "noon.config"),
    ("noon.logging_setup", "noon.errors"),
    ("noon.__main__", "noon.cli"),
    ("noon.daemon_link", "noon.certs"),
    ("noon.app", "noon.daemon_link"),  # status asks the local noond
}
ROWS: list[tuple[tuple[str, ...], str, str]] = [
    (
        ("noon.errors",),
        "the exception root every error derives from, and the six refusal kinds (not "
        "found, conflict, invalid, refused, limit, unavailable) each edge maps to its "
        "form once",
        "stdlib",
    ),
    (
        ("noon.core",),
        "the pure core: HLC and time rendering (`hlc`), the op format (`ops`), the signed"
        " chain of a shard and its stubs (`chain`), the checkpoint over unsigned history "
        "(`checkpoint`), element kinds and key constructors (`elements`), the fold's "
        "rules for one element (`fold`), what compaction and collection may drop "
        "(`compaction`, `collection`)",
        "`noon.errors`, stdlib, orjson. **No I/O.**",
    ),
    (
        (
            "noon.names",
            "noon.setting",
            "noon.config",
            "noon.logging_setup",
            "noon.net",
            "noon.package",
            "noon.codecache",
        ),
        "node ids and shard file names; a program's settings as one table (variable, "
        "flag, type, default, help) that the code reads and the docs are generated from "
        "(`setting`); settings from flags and `NOON_*` (one source for every command); "
        "rate-limited logging; what counts as loopback; noon's own installed version "
        "(`package`); text libraries compile at import, compiled once and kept between "
        "processes (`codecache`)",
        "layers 0–1, each other (`config` uses `names` and `setting`, `logging_setup` uses "
        "`config`)",
    ),
    (
        ("noon.graph",),
        "the URI graph as pure rules: URIs (`uri`), the reader protocol and the placement"
        " and URI-walking rules every reader shares (`reader`), write planning (`plan`), "
        "undo planning (`undo`), quote editing (`quote`, `quote_hint`), one memory as "
        "read (`memory_view`), the `system://` views but conflicts and orphans, which the MCP "
        "edge renders from `noon.app` (`views`), what changed between two "
        "versions of a text, bounded (`textdiff`), glossary linking (`glossary`), search "
        "words (`search`)",
        "layers 0–2",
    ),
    (
        ("noon.kg",),
        "the knowledge graph (the official memory server's nine tools) as pure rules: the"
        " reader protocol and the official text rules (`graph`), planning (`plan`), "
        "`kg://` rendering (`uri`), JSON text (`text`)",
        "layers 0–2",
    ),
    (
        ("noon.store",),
        "every file in `NOON_DIR`: the read model's public face for the layers above, its"
        " queries asked on a graph snapshot, never its connection (`queries`); shard "
        "files and their safe opening (`shard`), owner-only modes (`private`), the shard "
        "line format (`lines`: the batch gate, backward lines, envelopes, digests), the "
        "collection journal (`cut`), compaction and collection (`compact`, `collect`, "
        "`forgotten`), the own signing key (`signing`), where a shard stands in its chain"
        " (`chainstate`) and the authors' checkpoints kept (`checkpoints`), replication's"
        " file side (`serve` reads pages and summaries, `receive` appends what peers "
        "send), peer state (`peerstate`), the read model (`store.readmodel`), the `Store`"
        " that writes the own shard and reads through the read model (`store`), reading "
        "and writing both graphs of a live store (`access`), read_graph's answer kept "
        "between calls and patched after a change (`kg_answers`), a memory rolled back to a "
        "version (`rollback`), and a retry of a call recognised by its request key "
        "(`retries`)",
        "layers 0–3",
    ),
    (
        ("noon.app",),
        "the use cases every edge calls: who asks (`actor`), creating, editing, placing, "
        "deleting, triggers and boot (`memories`), the expected-version check and "
        "rollback to a version (`versions`), search with its snippets (`search`), undoing"
        " changes and the review decisions on them (`changes`), the review queue listed "
        "(`queue`), a memory's changes as an agent finds them and the op log op by op as "
        "`noon log` and `noon history` print it (`history`), ops in words (`words`), `noon "
        "status` as data "
        "(`status`), concurrent versions listed and settled (`conflicts`), what a context"
        " brings to mind (`recall`), orphans (`orphans`), the knowledge graph browsed "
        "(`entities`); typed arguments in, frozen dataclasses out, refusals as the kinds "
        "of `noon.errors`",
        "layers 0–4; `noon.daemon_link` (status asks the local noond)",
    ),
    (
        ("noon.certs", "noon.daemon_link"),
        "certificates; where noond keeps its files and listens, and asking it over mutual"
        " TLS (`daemon_link.api`), for the daemon, the commands and the page; its JSON "
        "bodies as typed messages both sides read (`daemon_link.bodies`, over "
        "`daemon_link.message`)",
        "layers 0–4; `noon.daemon_link` also `noon.certs`",
    ),
    (
        ("noon.mcp", "noon.web", "noon.commands", "noon.transfer", "noon.demo"),
        "the edges: MCP tools and transports (typed arguments and the text agents read "
        "around `noon.app`), the web page (JSON around `noon.app`), the CLI's commands, "
        "imports and exports, the demo",
        "layers 0–5",
    ),
    (
        ("noon.cli", "noon.__main__"),
        "the `noon` command: routes to the edges",
        "layers 0–6",
    ),
    (
        ("noond",),
        "the replication daemon",
        "any of `noon` except `noon.mcp`, `noon.web`, `noon.transfer`, `noon.demo`, `noon.cli`",
    ),
    (
        ("tests.harness",),
        "the test kit: real processes (the `noond` mesh with its certificates `mesh`, the"
        " page `page`, MCP sessions `mcp`, fault writers and the nemesis), and the "
        "oracles the product is held to, which the product never imports: the whole fold "
        "in memory (`fold`), the URI graph over it (`uri_graph`), the knowledge graph "
        "over it (`kg_view`), a directory's fresh fold and views (`oracle`), the review "
        "queue (`review_oracle`)",
        "`noon`, `noond`",
    ),
    (
        ("bench",),
        "benchmarks (not tests)",
        "`noon`, `noond`, the test kit",
    ),
    (
        ("tests",),
        "the suite, in folders mirroring the packages (`tests/core`, `tests/store`, ..., "
        "`tests/noond`, `tests/relay`); what tests share is in the kit, never one test "
        "module importing another",
        "anything; nothing imports `tests` but bench the kit",
    ),
]
"""The map's layer table (docs/architecture.md), row by row: the packages of one layer, their
one job and what they may import. ``python -m tests.test_architecture`` writes it into the map;
:func:`test_the_maps_layer_table_is_generated_from_here` fails when they drift."""

NOOND_FORBIDDEN = {"noon.mcp", "noon.web", "noon.transfer", "noon.demo", "noon.cli"}
PURE = {"noon.core"}
"""Packages that do no I/O: they may import nothing but the standard library's pure parts."""
IO_MODULES = {"os", "io", "socket", "sqlite3", "subprocess", "fcntl", "mmap", "pathlib", "shutil"}


def package(module: str) -> str | None:
    """The unit of layering a module belongs to."""
    for name in sorted(LAYER, key=len, reverse=True):
        if module == name or module.startswith(name + "."):
            return name
    return None


def modules() -> Iterator[tuple[str, Path]]:
    for top in ("noon", "noond", "tests/harness", "bench"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join(parts), path


def imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = module.split(".")[: -node.level or None]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            yield name, node.lineno
            for alias in node.names:  # `from noon import certs` imports noon.certs
                yield f"{name}.{alias.name}", node.lineno


def edges() -> Iterator[tuple[str, str, str, str, int]]:
    """(importing package, imported package, module, imported name, line)."""
    for module, path in modules():
        src = package(module)
        for name, line in imports(module, path):
            dst = package(name)
            if src is not None and dst is not None and dst != src:
                yield src, dst, module, name, line


def test_every_module_belongs_to_a_layer() -> None:
    homeless = [m for m, _ in modules() if package(m) is None and m not in ("noon",)]
    assert homeless == [], (
        f"add these to LAYER in this test and to docs/architecture.md: {homeless}"
    )


def test_imports_only_go_down_the_layers() -> None:
    bad = []
    for src, dst, module, name, line in edges():
        if (src, dst) in ALLOWED:
            continue
        if src == "noond" and dst in NOOND_FORBIDDEN:
            bad.append(f"{module}:{line} imports {name} (noond stays off the edges)")
        elif LAYER[dst] >= LAYER[src]:
            bad.append(f"{module}:{line} imports {name} ({src} may not import {dst})")
    assert bad == [], "\n".join(bad)


def test_the_product_never_imports_tests_and_bench_only_the_kit() -> None:
    bad = [
        f"{module}:{line} imports {name}"
        for module, path in modules()
        for name, line in imports(module, path)
        if ((name == "tests" or name.startswith("tests.")) and package(name) != "tests.harness")
        or (package(name) == "tests.harness" and package(module) not in ("tests.harness", "bench"))
    ]
    assert bad == [], "\n".join(bad)


def test_no_test_module_imports_another() -> None:
    """What tests share lives in the kit, tests/harness."""
    bad = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for name, line in imports(module, path):
            if name.startswith("tests.") and name.split(".")[-1].startswith("test_"):
                bad.append(f"{module}:{line} imports {name}")
    assert bad == [], "\n".join(bad)


def first_cycle(graph: dict[str, dict[str, str]]) -> list[str] | None:
    """One cycle of ``graph`` (node -> {next: where the edge is}), as the path that closes it,
    or None. Depth first, in sorted order, without recursion (the module graph is deep)."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path, on_path = [start], {start}
        branches = [iter(sorted(graph.get(start, {})))]
        while branches:
            nxt = next(branches[-1], None)
            if nxt is None:
                finished = path.pop()
                done.add(finished)
                on_path.discard(finished)
                branches.pop()
                continue
            if nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            if nxt in done:
                continue
            path.append(nxt)
            on_path.add(nxt)
            branches.append(iter(sorted(graph.get(nxt, {}))))
    return None


def test_no_cycle_between_packages() -> None:
    graph: dict[str, dict[str, str]] = {}
    for src, dst, module, _, line in edges():
        graph.setdefault(src, {})[dst] = f"{module}:{line}"
    cycle = first_cycle(graph)
    assert cycle is None, "package cycle: " + " -> ".join(cycle or [])


def test_no_import_cycle_between_the_products_modules() -> None:
    """No module of noon or noond imports one that imports it back, not even for type checking
    or inside a function: the piece both need goes where both can import it (noond's
    ``daemon`` and ``server`` share :mod:`noond.node`; ``recovery`` gets its wiring, not the
    exchanger). A package's ``__init__`` run by importing one of its modules is not counted."""
    found = dict(modules())
    product = {m for m in found if m.split(".")[0] in ("noon", "noond")}
    graph: dict[str, dict[str, str]] = {}
    for module in sorted(product):
        for name, line in imports(module, found[module]):
            if name in product and name != module:
                graph.setdefault(module, {}).setdefault(name, f"{module}:{line}")
    cycle = first_cycle(graph)
    assert cycle is None, "import cycle: " + ", ".join(
        f"{a} -> {b} ({graph[a][b]})" for a, b in zip(cycle or [], (cycle or [])[1:], strict=False)
    )


def test_a_cycle_would_be_found() -> None:
    graph = {"a": {"b": "a:1"}, "b": {"c": "b:1"}, "c": {"a": "c:1", "d": "c:2"}, "d": {}}
    assert first_cycle(graph) == ["a", "b", "c", "a"]
    assert first_cycle({"a": {"b": ""}, "b": {}, "c": {"b": ""}}) is None


def test_the_core_does_no_io() -> None:
    bad = []
    for module, path in modules():
        if package(module) not in PURE:
            continue
        for name, line in imports(module, path):
            top = name.split(".")[0]
            if top in IO_MODULES:
                bad.append(f"{module}:{line} imports {name}")
    assert bad == [], "\n".join(bad)


def test_a_forbidden_edge_would_be_found(tmp_path: Path) -> None:
    """The checker itself: an upward import in a sample module is reported."""
    sample = tmp_path / "x.py"
    sample.write_text("from noon.mcp.server import create_server\nimport noon.store.store\n")
    found = list(imports("noon.core.x", sample))
    assert ("noon.mcp.server", 1) in found and ("noon.store.store", 2) in found
    assert package("noon.core.x") == "noon.core" and LAYER["noon.mcp"] > LAYER["noon.core"]


def test_the_page_lists_and_settles_conflicts_through_noon_app() -> None:
    """The page's conflict routes call :mod:`noon.app.conflicts`; ``WebData`` holds no second
    copy of either use case."""
    from noon.web import routes
    from noon.web.data import WebData

    assert not {"conflicts", "resolve"} & set(vars(WebData))
    source = Path(routes.__file__).read_text()
    assert "app_conflicts.listing(" in source and "app_conflicts.resolve(" in source


UNDO_PLANNING = ("undo.preview(", "undo.undo(", "lookup(", "basis(", "too_large(", "load(")
"""Calls that plan an undo (:mod:`noon.graph.undo` on element states of
:func:`noon.store.rollback.lookup`), or size and fingerprint one (:mod:`noon.app.changes`)."""


def test_the_page_shows_the_undo_noon_app_plans_and_plans_none_itself() -> None:
    """The page's undo previews (a change's details, a memory's timeline) are planned in
    :mod:`noon.app` by the one plan that ``undo_change`` and the page's rollback write
    (:func:`noon.app.changes.plan`); no module of the page plans one."""
    from noon import web

    for path in sorted(Path(web.__file__).parent.glob("*.py")):
        source = path.read_text()
        planning = [call for call in UNDO_PLANNING if call in source]
        assert not planning, f"noon/web/{path.name} plans an undo: {planning}"
    source = Path(web.__file__).with_name("undo_preview.py").read_text()
    assert "changes.preview(" in source


OP_LOG_WALKS = (
    ".newest(",
    ".about(",
    ".recent_ops(",
    ".versions(",
    "memory_keys(",
    "entity_keys(",
)
"""Calls that walk the op log (:class:`noon.store.queries.Queries`): for changes (the review
queue, a memory's or an entity's changes), or op by op (a namespace's newest ops, every op
about a memory or an entity)."""
EDGES = ("mcp", "web", "commands")


def test_the_edges_list_what_noon_app_finds_in_the_op_log_and_walk_none_themselves() -> None:
    """The review queue (:mod:`noon.app.queue`), a memory's or an entity's changes and the op
    log op by op (:mod:`noon.app.history`) are listed in :mod:`noon.app`; the MCP tools, the page
    and the commands (``noon log``, ``noon history``) only render them."""
    import noon

    for edge in EDGES:
        for path in sorted((Path(noon.__file__).parent / edge).glob("*.py")):
            source = path.read_text()
            walking = [call for call in OP_LOG_WALKS if call in source]
            assert not walking, f"noon/{edge}/{path.name} walks the op log: {walking}"


SQLITE_OUTSIDE_STORE = {
    "noon.transfer.nocturne": "reads a Nocturne database file, not the read model",
    "noond.fold_worker": "catches sqlite3's error types while it folds through noon.store",
}
"""Modules outside ``noon.store`` that import sqlite3, and why it is not the read model's."""


def test_the_read_models_connection_stays_inside_noon_store() -> None:
    """Outside ``noon.store`` the read model is asked through :class:`noon.store.queries.Queries`
    and the graph, never through its ``sqlite3`` connection: no ``<anything>.conn`` but an
    object's own, and sqlite3 imported only where :data:`SQLITE_OUTSIDE_STORE` says why."""
    bad = []
    for module, path in modules():
        if module.startswith(("noon.store", "tests.harness", "bench")):
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "conn":
                own = isinstance(node.value, ast.Name) and node.value.id == "self"
                if not own:
                    bad.append(f"{module}:{node.lineno} uses {ast.unparse(node)}")
        for name, line in imports(module, path):
            if name == "sqlite3" and module not in SQLITE_OUTSIDE_STORE:
                bad.append(f"{module}:{line} imports sqlite3")
    assert bad == [], "\n".join(bad)


MAP = ROOT / "docs" / "architecture.md"
TABLE = re.compile(r"(<!-- layers -->\n)(.*?)(<!-- /layers -->)", re.DOTALL)


def layer_table() -> str:
    lines = ["| layer | package | its one job | may import |", "|---|---|---|---|"]
    for packages, job, may in ROWS:
        layer = LAYER.get(packages[0], "–")
        names = ", ".join(f"`{p}`" for p in packages)
        lines.append(f"| {layer} | {names} | {job} | {may} |")
    return "\n".join(lines) + "\n"


def test_the_maps_layer_table_is_generated_from_here() -> None:
    rows = [p for packages, _, _ in ROWS for p in packages]
    assert sorted(rows) == sorted([*LAYER, "tests"]), "every layer's package in one row"
    for packages, _, _ in ROWS:
        assert len({LAYER.get(p, "–") for p in packages}) == 1, f"one layer a row: {packages}"
    layers = [LAYER.get(packages[0], len(LAYER)) for packages, _, _ in ROWS]
    assert layers == sorted(layers), "rows in layer order"
    found = TABLE.search(MAP.read_text())
    assert found is not None, "docs/architecture.md lost its <!-- layers --> markers"
    assert found.group(2) == layer_table(), (
        "the layer table drifted from this test: `.venv/bin/python -m tests.test_architecture`"
    )


if __name__ == "__main__":
    text = MAP.read_text()
    MAP.write_text(TABLE.sub(lambda m: m.group(1) + layer_table() + m.group(3), text))
    print(f"{MAP.relative_to(ROOT)}: layer table written", file=sys.stderr)
