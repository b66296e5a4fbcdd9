"""A member that never reports what it holds (an author known only through relays, or one that
never answers this node) holds deleted text back for the retention window, not for ever; a
report from it later brings it back into the gate."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from noon.config import Settings
from noon.core.ops import Draft, encode
from noon.store import peerstate
from noon.store.store import Store
from noond.collection import Collector
from noond.membership import Member
from noond.metrics import Metrics

DAY = 86400.0


def test_a_silent_author_stops_blocking_after_the_window(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    data = tmp_path / "data"
    store = Store(Settings(dir=data, node_id="a", fsync=False))
    key = ("content", "default", "secret")
    store.write(lambda fold: [Draft(key, {"text": "deleted text"})])
    store.write(lambda fold: [Draft(key, None)])
    store.write(lambda fold: [Draft(("content", "default", "y"), {"text": "after"})])
    # z's ops arrived through a relay; z never answered this node, so it never reported.
    relayed = encode(
        node="z", seq=1, hlc=1 << 16, el=("content", "default", "z"), val={"text": "z"}
    )
    (data / "z.jsonl").write_bytes(relayed + b"\n")
    now = [time.time()]
    state = tmp_path / "state.json"
    collector = Collector(
        data, "a", state, 180 * DAY, Metrics(), clock=lambda: now[0], timer=lambda: now[0]
    )

    first = collector.run([], set())
    assert first.collected == 0
    assert [(b.member, b.reason) for _, b in first.kept] == [("z", "never reported what it holds")]
    assert "z" in peerstate.load(state).silent

    now[0] += 179 * DAY
    assert collector.run([], set()).collected == 0  # still within the window

    now[0] += 2 * DAY
    with caplog.at_level(logging.WARNING, logger="noond.collection"):
        done = collector.run([], set())
    assert done.collected == 1 and not done.kept
    assert "z never reported what it holds in 180 days" in caplog.text
    saved = peerstate.load(state)
    assert "z" in saved.forgotten and "z" not in saved.silent
    assert b"deleted text" not in (data / "a.jsonl").read_bytes()

    # z reports at last: it counts again (and blocks what it has not seen).
    z = Member("z", "127.0.0.1:1", heads={"z": 1}, reported_at=now[0])
    collector.run([z], set())
    saved = peerstate.load(state)
    assert "z" not in saved.forgotten and "z" in saved.reports
