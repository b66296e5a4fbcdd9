"""The ``recall`` tool through a real MCP client: each memory it brings up says why, and what
the context does not meet stays out."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.app.recall import meets
from noon.graph.search import query_terms
from noon.mcp.uri_recall import MAX_CONTEXT
from tests.harness.uri import Session, mcp_test


@pytest.fixture(autouse=True)
def _by_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests read recall's reasons and texts, the same by words or by meaning; whether the
    process's model had loaded yet (an earlier test's doing) added a "still loading" note to the
    answer, so the outcome hung on test order. Hybrid recall: tests/store/test_semantic_serve.py."""
    monkeypatch.setenv("NOON_SEMANTIC", "off")


@mcp_test
async def test_recall_brings_disclosures_keywords_and_hits_each_with_why(s: Session) -> None:
    await s.create("core://", "deploy", "Use systemd units.", disclosure="When deploying noon")
    await s.create("core://", "salem", "Salem is the user's cat.", disclosure="When pets come up")
    await s.call("manage_triggers", uri="core://salem", add=["Salem"])
    await s.create("core://", "tea", "The user drinks oolong tea every morning.")
    await s.create("core://", "far", "Nothing in common here.", disclosure="When sailing")
    text, data = await s.call(
        "recall", context="Tomorrow we are deploying noon again; Salem sat on the keyboard."
    )
    why = {r["uri"]: r["why"] for r in data["results"]}
    assert "core://far" not in why and "core://tea" not in why
    assert any(
        "disclosure 'When deploying noon' meets the context" in w for w in why["core://deploy"]
    )
    assert "the context mentions its keyword 'Salem'" in why["core://salem"]
    assert "why: " in text and "read_memory" in text
    _, data = await s.call("recall", context="How much oolong did they drink?")
    assert data["results"][0]["uri"] == "core://tea"
    assert data["results"][0]["why"][0].startswith("search hit (score ")
    text, data = await s.call("recall", context="zebra quantum")
    assert data["results"] == [] and text == "Nothing in memory meets this context."


@mcp_test
async def test_recall_is_bounded_in_answer_and_context(s: Session) -> None:
    for i in range(12):
        await s.create("core://", f"m{i}", f"tea note {i}", disclosure="When tea comes up")
    t0 = time.perf_counter()
    _, data = await s.call("recall", context=("tea " * 4000)[: MAX_CONTEXT - 1], limit=5)
    assert time.perf_counter() - t0 < 30  # generous: bounded work, not a speed claim
    assert len(data["results"]) == 5
    refused = await s.fail("recall", context="x" * (MAX_CONTEXT + 1))
    assert "context" in refused
    _, data = await s.call("recall", context="tea")  # honest callers still served
    assert len(data["results"]) == 8


WORDS = st.sampled_from(["deploy", "deploying", "noon", "cat", "tea", "when", "the"])


@given(st.lists(WORDS, max_size=6), st.sets(WORDS, max_size=6))
def test_a_disclosure_is_met_by_at_least_half_its_words(
    disclosure: list[str], context: set[str]
) -> None:
    held = meets(" ".join(disclosure), context)
    assert all(any(c.startswith(w) for c in context) for w in held)
    words = query_terms(" ".join(disclosure))
    if held:
        assert len(held) * 2 >= len(words)
    else:
        covered = [w for w in words if any(c.startswith(w) for c in context)]
        assert not words or len(covered) * 2 < len(words)
