"""No merge conflict is ever committed: ruff catches a marker in Python, nothing else caught one
in docs/noond.md, which main carried for a few minutes. Every text file of the checkout is read
(outside virtualenvs, caches and installed JS tools)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = {".venv", ".git", ".cache", "node_modules", ".hypothesis", ".mypy_cache", ".ruff_cache"}
TEXT = {".py", ".md", ".js", ".css", ".html", ".toml", ".json", ".sh", ".cfg", ".txt", ".yml"}
MARKERS = ("<<<<<<< ", ">>>>>>> ", "|||||||")


def text_files(root: Path) -> list[Path]:
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(
            d for d in subfolders if d not in SKIPPED and not d.endswith(".egg-info")
        )
        here = Path(folder)
        found += [
            here / name for name in sorted(names) if Path(name).suffix in TEXT or here.name == ".ci"
        ]
    return found


def marked_lines(path: Path) -> list[int]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [n for n, line in enumerate(lines, 1) if line.startswith(MARKERS)]


def test_no_conflict_markers_in_the_checkout():
    leftovers = {
        str(path.relative_to(ROOT)): lines
        for path in text_files(ROOT)
        if (lines := marked_lines(path))
    }
    assert leftovers == {}


def test_the_check_finds_a_marker(tmp_path):
    (tmp_path / "docs").mkdir()
    note = tmp_path / "docs" / "note.md"
    note.write_text("# a\n<<<<<<< HEAD\none\n=======\ntwo\n>>>>>>> other\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "x.py").write_text("<<<<<<< HEAD\n")
    assert text_files(tmp_path) == [note]
    assert marked_lines(note) == [2, 6]
