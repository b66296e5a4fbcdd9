"""Collection stays safe through a relay (PROTOCOL.md §14.5): a member met only through the
bucket holds a tombstone back until the frontier report in its head covers the element, and a
newer report over mTLS is not replaced by an older one from the relay."""

from __future__ import annotations

import time
from pathlib import Path

from noon.config import Settings
from noon.core.ops import Draft, encode
from noon.store import peerstate
from noon.store.store import Store
from noond.collection import Collector
from noond.membership import Member
from noond.metrics import Metrics


def test_a_member_met_only_through_a_relay_gates_collection_by_its_report(tmp_path: Path):
    data = tmp_path / "data"
    store = Store(Settings(dir=data, node_id="a", fsync=False))
    key = ("content", "default", "secret")
    store.write(lambda fold: [Draft(key, {"text": "deleted text"})])
    store.write(lambda fold: [Draft(key, None)])
    store.write(lambda fold: [Draft(("content", "default", "y"), {"text": "after"})])
    store.close()
    taken = encode(node="z", seq=1, hlc=1 << 16, el=("content", "default", "z"), val={"text": "z"})
    (data / "z.jsonl").write_bytes(taken + b"\n")  # z's ops came through the bucket
    reports: dict[str, peerstate.Report] = {}
    collector = Collector(
        data,
        "a",
        tmp_path / "state.json",
        1e9,
        Metrics(),
        relayed=lambda: dict(reports),
        timer=lambda: 0.0,  # collections take no time: BUSY_SHARE never holds one back
    )

    first = collector.run([], set())
    assert first.collected == 0 and [b.member for _, b in first.kept] == ["z"]
    reports["z"] = peerstate.Report({"a": 1, "z": 1}, time.time())  # z saw the text, not the delete
    assert collector.run([], set()).collected == 0
    # A member over mTLS with an older report does not replace z's newer one from the relay.
    old = Member("z", "127.0.0.1:1", heads={}, reported_at=time.time() - 60)
    reports["z"] = peerstate.Report({"a": 3, "z": 1}, time.time())  # z holds the delete now
    done = collector.run([old], set())
    assert done.collected == 1
    after = Store(Settings(dir=data, node_id="a", fsync=False))
    try:
        assert key not in after.fold.elements
    finally:
        after.close()
