"""Logging is bounded: a repeated message is written a burst at a time, and what was held back
is counted, never silently lost."""

from __future__ import annotations

import logging

import pytest

from noon.logging_setup import Condition, RateLimit


def records(limit: RateLimit, n: int, msg: str = "refused %s", name: str = "noond") -> list[str]:
    out = []
    for i in range(n):
        rec = logging.LogRecord(name, logging.WARNING, __file__, 1, msg, (i,), None)
        if limit.filter(rec):
            out.append(rec.getMessage())
    return out


def test_a_flood_of_one_message_is_cut_to_a_burst_and_counted_afterwards() -> None:
    now = [0.0]
    limit = RateLimit(burst=3, window=10.0, clock=lambda: now[0])
    assert records(limit, 1000) == ["refused 0", "refused 1", "refused 2"]
    now[0] = 10.0
    assert records(limit, 1) == ["refused 0 [997 similar message(s) held back before this]"]


def test_different_messages_and_loggers_have_their_own_budgets() -> None:
    limit = RateLimit(burst=1, window=10.0, clock=lambda: 0.0)
    assert records(limit, 5, "a %s") == ["a 0"]
    assert records(limit, 5, "b %s") == ["b 0"]
    assert records(limit, 5, "a %s", name="noon.store") == ["a 0"]


def test_memory_stays_bounded_when_every_message_differs() -> None:
    limit = RateLimit(burst=1, window=10.0, clock=lambda: 0.0)
    for i in range(RateLimit.MAX_TEMPLATES * 3):
        records(limit, 1, f"unique {i} %s")
    assert len(limit._seen) <= RateLimit.MAX_TEMPLATES


def test_a_lasting_condition_is_said_once_then_once_a_window_and_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    disk = Condition(logging.getLogger("noond"), every=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, "noond"):
        for _ in range(500):
            disk.met("disk full")
        now[0] = 61.0
        disk.met("disk full")
        disk.met("disk full")
        disk.ended("space again")
        disk.ended("space again")
    assert [r.getMessage() for r in caplog.records] == [
        "disk full",
        "disk full (still so: met 500 more time(s) since)",
        "space again",
    ]
