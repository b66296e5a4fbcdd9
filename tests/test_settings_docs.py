"""Each program's settings table (noon.setting) is what its code reads and what its docs show:
the generated sections of the docs match the tables, every default in a table is the one the
settings dataclass holds, and every variable the code names is in its table.

``python -m tests.test_settings_docs`` rewrites the docs' sections from the tables."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest

from noon.config import STORE, Settings
from noon.mcp.http_limits import SERVE, HttpLimits
from noon.setting import Setting, Table, section, with_table
from noon.web.listener import WEB, WebLimits
from noond.config import DaemonConfig
from noond.settings import NOOND
from tests.harness.mesh import ROOT

TABLES: tuple[tuple[Table, type, tuple[str, ...]], ...] = (
    (STORE, Settings, ("noon/config.py",)),
    (NOOND, DaemonConfig, ("noond/config.py",)),
    (SERVE, HttpLimits, ()),
    (WEB, WebLimits, ()),
)
"""Each table, its settings dataclass, and the modules that name some of its variables beside
reading the table (a computed default, a path)."""


@pytest.mark.parametrize("table", [t for t, _, _ in TABLES], ids=lambda t: t.name)
def test_the_docs_show_the_table(table: Table) -> None:
    text = (ROOT / table.doc).read_text()
    found = section(text, table.name)
    assert found is not None, f"{table.doc} lost its <!-- settings:{table.name} --> section"
    assert text == with_table(text, table), (
        f"{table.doc} differs from the {table.name} table: run "
        "`.venv/bin/python -m tests.test_settings_docs` to regenerate it"
    )


@pytest.mark.parametrize("table,kind,readers", TABLES, ids=[t.name for t, _, _ in TABLES])
def test_the_code_reads_what_the_table_says(table: Table, kind: type, readers: tuple[str]) -> None:
    fields = {f.name: f for f in dataclasses.fields(kind)}
    for s in table.settings:
        if s.field is None:
            continue
        assert s.field in fields, f"{s.env}: {kind.__name__} has no field {s.field}"
        assert fields[s.field].default == s.default, (s.env, fields[s.field].default, s.default)
        assert type(fields[s.field].default) is type(s.default), s.env
    named = set()
    for module in readers:
        source = (ROOT / module).read_text()  # a variable read: env.get("X" / env, "X" / ["X"]
        named |= set(re.findall(r'(?:get\(|env, |\[)"((?:NOON|NOOND)_[A-Z_]+)"', source))
    assert len(named) >= 3 or not readers, named
    listed = {s.env for s in table.settings}
    assert named - listed == set(), f"read but not in the {table.name} table"


def test_a_bad_value_names_its_variable_and_a_flag_overrides_it() -> None:
    """The table's reading is the one the program uses: a flag or a variable changes it."""
    from noond.config import from_env

    env = {"NOON_DIR": "/tmp/x", "NOON_NODE_ID": "a"}
    assert from_env(env).interval == NOOND["NOOND_INTERVAL"].default
    assert from_env({**env, "NOOND_INTERVAL": "2.5"}).interval == 2.5
    with pytest.raises(ValueError, match=r"NOOND_INTERVAL must be at least 0\.05"):
        from_env({**env, "NOOND_INTERVAL": "0.01"})
    with pytest.raises(ValueError, match="NOON_HISTORY must be an integer"):
        Settings.from_env({**env, "NOON_HISTORY": "ten"})


def test_a_row_says_each_kind_and_default() -> None:
    rows = [
        Setting("A", "on or off", True, flag="--a").row(),
        Setting("B", "how many", 32 << 20, shown="`33554432` (32 MiB)").row(),
        Setting("C", "how long", 0.5).row(),
        Setting("D", "where").row(),
    ]
    assert rows == [
        "| `A` | `--a` | boolean | `true` | on or off |",
        "| `B` |  | integer | `33554432` (32 MiB) | how many |",
        "| `C` |  | seconds | `0.5` | how long |",
        "| `D` |  | text | (none) | where |",
    ]


def rewrite() -> None:
    for table, _, _ in TABLES:
        path: Path = ROOT / table.doc
        path.write_text(with_table(path.read_text(), table))
        print(f"{table.doc}: {table.name} table written", file=sys.stderr)


if __name__ == "__main__":
    rewrite()
