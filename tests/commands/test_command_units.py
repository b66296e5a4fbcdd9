"""Properties of the small pure pieces behind the operator commands."""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from noon.core.hlc import pack, physical
from noon.core.ops import encode
from noon.logging_setup import JsonFormatter
from noon.store.survey import survey


@given(st.text(), st.sampled_from([logging.DEBUG, logging.INFO, logging.WARNING]))
def test_a_json_log_record_is_one_line_that_parses_back(message: str, level: int):
    record = logging.LogRecord("noond", level, __file__, 1, "%s", (message,), None)
    line = JsonFormatter().format(record)
    assert "\n" not in line and "\r" not in line
    assert json.loads(line)["message"] == message
    assert json.loads(line)["level"] == logging.getLevelName(level)


@given(st.lists(st.one_of(st.integers(0, 2**40), st.just(None)), max_size=30))
def test_survey_counts_every_op_and_places_every_corrupt_line(plan: list[int | None]):
    """``None`` stands for a damaged line; integers are op stamps (ms)."""
    lines, seq, corrupt_at, newest = [], 0, [], 0
    for no, ms in enumerate(plan, 1):
        if ms is None:
            lines.append(b'{"v":1,"node":"a","seq":')  # cut in the middle: not an op
            corrupt_at.append(no)
        else:
            seq += 1
            hlc = pack(ms, 0)
            newest = max(newest, hlc)
            lines.append(
                encode(
                    node="a",
                    seq=seq,
                    hlc=hlc,
                    el=("content", "default", "x"),
                    val={"text": str(ms)},
                )
            )
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "a.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
        s = survey(Path(d), "a.jsonl")
    assert s.ops == seq and s.seq == seq
    assert [c.line for c in s.corrupt] == corrupt_at
    assert s.newest_ms == (physical(newest) if seq else 0)
