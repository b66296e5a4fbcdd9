"""Times are rendered, never raised: a stamp past year 9999 (in range for the 48-bit HLC) reads as
what it is in every view, history and log line, and the memory it touched stays readable after a
later edit. Such a stamp is refused when an op is decoded (tests/core/test_op_bounds.py); rendering
stays defensive all the same, so an op built in memory cannot break a view either."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.commands import log_entries
from noon.core.hlc import LAST_DATE_MS, PHYSICAL_MAX, pack, utc
from noon.core.ops import Op, OpError, decode, encode
from noon.graph import memory_view, views
from noon.graph.glossary import Glossary
from noon.graph.uri import root
from tests.harness.fold import Fold
from tests.harness.uri_graph import Graph

NS = "default"
FAR = pack(PHYSICAL_MAX, 0)


@given(st.integers(-(2**60), 2**60), st.sampled_from(["text", "iso", "iso_ms"]))
def test_any_millisecond_renders(ms: int, style: str) -> None:
    text = utc(ms, style)
    assert text and ("unrepresentable" in text) == (not 0 <= ms <= LAST_DATE_MS)


def test_known_dates() -> None:
    assert utc(0) == "1970-01-01 00:00:00 UTC"
    assert utc(LAST_DATE_MS, "iso_ms") == "9999-12-31T23:59:59.999Z"
    assert utc(1_764_536_858_123, "iso") == "2025-11-30T21:07:38Z"


def op(node: str, seq: int, hlc: int, el: tuple[str, ...], val: dict, prev=None) -> Op:
    return Op(node, seq, hlc, el, val, prev, "test", None, True, seq)


def test_decoding_refuses_such_a_stamp() -> None:
    with pytest.raises(OpError, match="stamp"):
        decode(encode(node="far", seq=1, hlc=FAR, el=("content", NS, "m"), val={"text": "x"}))


def test_a_memory_stamped_past_year_9999_reads_lists_and_keeps_its_history() -> None:
    ops = [
        op("far", 1, FAR, ("content", NS, "m"), {"text": "v1"}),
        op(
            "far",
            2,
            FAR + 1,
            ("edge", NS, root("core"), "m"),
            {"child": "m", "priority": 1, "disclosure": "d"},
        ),
        decode(
            encode(
                node="near",
                seq=1,
                hlc=pack(1_764_536_858_123, 0),
                el=("content", NS, "m"),
                val={"text": "v2"},
                prev=(("far", 1),),
            )
        ),
    ]
    ops.append(op("far", 3, FAR + 2, ("content", NS, "n"), {"text": "n"}))
    fold = Fold()
    fold.apply_all(ops)
    graph = Graph(fold)
    glossary = Glossary(graph)
    assert "v2" in memory_view.memory(graph, glossary, NS, "m", None, None).text  # edited since
    only_far = memory_view.memory(graph, glossary, NS, "n", None, None).text
    assert "Last Modified: (unrepresentable time" in only_far
    assert "core://m" in views.recent(graph, NS, 5, 5, 0)
    text, rows = views.history(graph, NS, "m", "core://m", 10)
    assert [r["version"] for r in rows] == ["far:1", "near:1"]  # the far stamp sorts first
    assert "unrepresentable time" in text
    assert "unrepresentable" in log_entries.render(graph, ops)
