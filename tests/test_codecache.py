"""Text compiled at import, compiled once and kept between processes (:mod:`noon.codecache`):
what is built from a kept code object is what compiling the text builds, a kept file spares the
next window its compiling, and a file that is not this user's alone, or not a cache, is not
trusted."""

from __future__ import annotations

import dataclasses
import marshal
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from noon import codecache
from noon.codecache import cache_file, compiled_once
from tests.harness.mesh import ROOT, subprocess_env


def _point() -> type:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: str = "b"
        tags: list[str] = dataclasses.field(default_factory=list)

    return Point


def _methods(cls: type) -> dict[str, bytes]:
    return {
        name: marshal.dumps(getattr(cls, name).__code__)
        for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__")
    }


def _compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the window compiles from here on."""
    seen: list[str] = []

    def counted(source: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(source)
        return compile(source, *args, **kwargs)

    monkeypatch.setattr(codecache, "compile", counted, raising=False)
    return seen


def test_a_dataclass_and_an_annotation_are_built_as_without_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    plain = _point()
    with compiled_once(tmp_path / "c.code"):
        first = _point()
        ref = typing.ForwardRef("list[int] | None")
    with compiled_once(tmp_path / "c.code"):
        kept = _point()
    assert _methods(first) == _methods(plain) == _methods(kept)
    assert kept(1) == kept(1, "b", []) and repr(kept(2, "c")).endswith("Point(x=2, y='c', tags=[])")
    assert ref.__forward_code__ is not None
    assert eval(ref.__forward_code__) == (list[int] | None)
    assert "exec" not in vars(dataclasses) and "compile" not in vars(typing)


def test_the_next_window_compiles_only_what_the_file_misses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "c.code"
    compiled = _compiles(monkeypatch)
    with compiled_once(path):
        _point()
        _point()  # the same texts again: compiled once
    assert compiled and len(compiled) == len(set(compiled))
    texts = len(compiled)
    assert os.stat(path).st_mode & 0o777 == 0o600
    compiled.clear()
    with compiled_once(path):
        _point()
    assert compiled == []
    with compiled_once(path):
        _point()
        typing.ForwardRef("dict[str, int]")
    assert compiled == ["dict[str, int]"]
    assert len(codecache.read(path)) == texts + 1  # what the last window used


def test_a_file_that_is_not_a_cache_or_open_to_others_is_compiled_past(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "c.code"
    with compiled_once(path):
        _point()
    assert codecache.read(path)
    os.chmod(path, 0o620)
    assert codecache.read(path) == {}
    for junk in (b"", b"\x00garbage", marshal.dumps(["not", "a", "dict"]), marshal.dumps({1: 2})):
        path.write_bytes(junk)
        os.chmod(path, 0o600)
        assert codecache.read(path) == {}
    compiled = _compiles(monkeypatch)
    with compiled_once(path):
        _point()
    assert compiled and codecache.read(path)  # compiled, and the file a cache again


def test_no_file_is_written_where_bytecode_files_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    with compiled_once(tmp_path / "c.code"):
        _point()
    assert not (tmp_path / "c.code").exists()


def test_an_inner_window_leaves_the_outer_one_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    with compiled_once(tmp_path / "outer.code"):
        outer = vars(dataclasses)["exec"]
        with compiled_once(tmp_path / "inner.code"):
            assert vars(dataclasses)["exec"] is outer
            _point()
        assert vars(dataclasses)["exec"] is outer
    assert not (tmp_path / "inner.code").exists() and (tmp_path / "outer.code").exists()


def test_the_file_sits_in_the_users_cache_directory() -> None:
    tag = f"{sys.implementation.cache_tag}-"
    at_home = cache_file("noon.mcp.command", {"HOME": "/home/u"})
    assert at_home is not None and at_home.parent == Path("/home/u/.cache/noon")
    assert at_home.name.startswith(f"noon.mcp.command.{tag}")
    xdg = cache_file("m", {"HOME": "/home/u", "XDG_CACHE_HOME": "/var/c"})
    assert xdg is not None and xdg.parent == Path("/var/c/noon")
    relative = cache_file("m", {"HOME": "/home/u", "XDG_CACHE_HOME": "c"})
    assert relative is not None and relative.parent == Path("/home/u/.cache/noon")
    assert cache_file("m", {}) is None


@pytest.mark.integration
def test_python_o_keeps_its_code_apart() -> None:
    """``python -O`` compiles asserts away: its code is kept in a file of its own."""
    env = subprocess_env(HOME="/home/u")
    env.pop("XDG_CACHE_HOME", None)
    where = "from noon.codecache import cache_file; print(cache_file('m'))"
    plain, optimized = (
        subprocess.check_output([sys.executable, *flag, "-c", where], env=env, cwd=ROOT, text=True)
        for flag in ([], ["-O"])
    )
    assert optimized.strip() == plain.strip().replace(".code", ".opt-1.code") != plain.strip()


SERVE_HELP = """
import sys
from noon.cli import main
try:
    main(["serve", "--help"])
except SystemExit:
    pass
import dataclasses, typing
print("exec" in vars(dataclasses) or "compile" in vars(typing), file=sys.stderr)
"""


@pytest.mark.integration
def test_noon_serve_keeps_its_import_code_for_the_next_start(tmp_path: Path) -> None:
    """A command's start keeps what its import compiled in the user's cache directory; the next
    start finds all of it there and leaves the file as it was."""
    env = subprocess_env(XDG_CACHE_HOME=str(tmp_path))
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def start() -> None:
        done = subprocess.run(
            [sys.executable, "-c", SERVE_HELP],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert done.stderr.splitlines()[-1] == "False"  # nothing left shadowed

    start()
    path = cache_file("noon.mcp.command", env)
    assert path is not None and len(codecache.read(path)) > 300
    before = os.stat(path)
    start()
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
