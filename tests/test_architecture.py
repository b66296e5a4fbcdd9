"""The layering docs/architecture.md describes, checked: every import of noon, noond, the test kit
(tests/harness) and bench is read from the source (static ``import`` statements, top level or
nested), and a forbidden edge or a cycle between packages fails with the file and line that made
it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.harness.mesh import ROOT

LAYER = {
    "noon.errors": 0,
    "noon.core": 1,
    "noon.names": 2,
    "noon.config": 2,
    "noon.setting": 2,
    "noon.logs": 2,
    "noon.net": 2,
    "noon.graph": 3,
    "noon.kg": 3,
    "noon.store": 4,
    "noon.app": 5,
    "noon.certs": 5,
    "noon.daemon_link": 5,
    "noon.mcp": 6,
    "noon.web": 6,
    "noon.ops_cli": 6,
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
    ("noon.logs", "noon.config"),
    ("noon.logs", "noon.errors"),
    ("noon.__main__", "noon.cli"),
    ("noon.daemon_link", "noon.certs"),
    ("noon.app", "noon.daemon_link"),  # status asks the local noond
}
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


def test_no_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for src, dst, *_ in edges():
        graph.setdefault(src, set()).add(dst)
    seen: set[str] = set()
    stack: list[str] = []

    def visit(node: str) -> None:
        if node in stack:
            cycle = [*stack[stack.index(node) :], node]
            raise AssertionError("package cycle: " + " -> ".join(cycle))
        if node in seen:
            return
        seen.add(node)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt)
        stack.pop()

    for node in sorted(graph):
        visit(node)


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


SQLITE_OUTSIDE_STORE = {
    "noon.transfer.nocturne": "reads a Nocturne database file, not the read model",
    "noond.fold": "catches sqlite3's error types while it folds through noon.store",
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
