"""memory_history shows what changed between consecutive versions, bounded: two versions that
differ only after character 80 are told apart (through a real ``noon serve``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from noon.graph.textdiff import CONTEXT, MAX_HUNKS, SHOWN, hunks
from tests.harness.mesh import ROOT, subprocess_env
from tests.harness.uri import Session

TEXT = st.text(alphabet=st.sampled_from("ab \n✓"), max_size=300)
LINE_BOUND = 40 + 2 * CONTEXT + 2 * (SHOWN + 20) + 10
"""Longest a hunk line can be: position, context both sides, removed and added (clipped)."""


@settings(max_examples=300, deadline=None)
@given(old=TEXT, new=TEXT)
def test_different_texts_always_differ_visibly_and_briefly(old: str, new: str) -> None:
    shown = hunks(old, new)
    assert (shown == []) == (old == new)
    assert len(shown) <= MAX_HUNKS + 1
    assert all(len(h) <= LINE_BOUND and "\n" not in h for h in shown)


def test_a_huge_text_costs_one_linear_hunk() -> None:
    old = "line\n" * 100_000
    new = old[:250_000] + "changed" + old[250_000:]
    (only,) = hunks(old, new)
    assert "{+changed+}" in only and only.startswith("@ line 50001, col 1:")


@pytest.mark.integration
async def test_memory_history_tells_apart_versions_that_differ_after_char_80(
    tmp_path: Path,
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "noon", "serve", "--tools", "uri", "--dir", str(tmp_path), "--node-id", "n1"],
        env=subprocess_env(),
        cwd=str(ROOT),
    )
    head = "The user's preferences, written down so that every session knows them well: "
    assert len(head) > 70
    async with Client(params) as client:
        s = Session(client)
        await s.create("core://", "prefs", head + "tea, no sugar, mornings.")
        await s.call("update_memory", uri="core://prefs", old_string="no sugar", new_string="honey")
        text, _ = await s.call("memory_history", uri="core://prefs")
    assert "[-no sugar-]{+honey+}" in text
    assert f"@ line 1, col {len(head) + 6}:" in text  # where it changed
    assert head[:40] in text  # the first version is shown by its start
