"""``noon compact`` as a person runs it: a real subprocess on a real directory."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from noon.config import Settings
from noon.core.ops import Draft
from noon.store import peerstate
from noon.store.store import Store
from tests.harness.mesh import ROOT
from tests.harness.operator import noon_cli
from tests.harness.small_disk import PAGE, fill, small_disk
from tests.harness.stores import plan_of

pytestmark = pytest.mark.integration

E = ("content", "default", "E")
F = ("content", "default", "F")


def noon(d: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOON")}
    env.update(NOON_DIR=str(d), NOON_NODE_ID="a", PYTHONPATH=str(ROOT), **extra)
    return noon_cli(*args, env=env)


def prepare(d: Path) -> None:
    s = Store(Settings.from_env({}, dir=d, node_id="a", compact_after=0))
    for text in ("v1", "v2", "v3"):
        s.write(plan_of([Draft(F, {"text": text})]))
    s.write(lambda f: [Draft(E, {"text": "doomed"})])
    s.write(lambda f: [Draft(E, None)])
    s.write(lambda f: [Draft(F, {"text": "v4"})])


def test_without_daemon_or_promise_only_superseded_versions_go(noon_dir):
    prepare(noon_dir)
    out = noon(noon_dir, "compact", "--history", "0")
    assert out.returncode == 0, out.stderr
    assert "a.jsonl: 6 -> 3 operations" in out.stdout
    assert "deleted memories are kept" in out.stdout


def test_sole_writer_removes_deleted_memories(noon_dir):
    prepare(noon_dir)
    out = noon(noon_dir, "compact", "--history", "0", "--sole-writer", "--json")
    report = json.loads(out.stdout)
    assert report["collection"]["collected"] == 1
    s = Store(Settings.from_env({}, dir=noon_dir, node_id="r"))
    assert E not in s.fold.elements and s.fold.elements[F].winner.val == {"text": "v4"}


def test_sole_writer_is_refused_when_the_directory_says_otherwise(noon_dir):
    prepare(noon_dir)
    (noon_dir / "b.jsonl").write_bytes(b"")
    out = noon(noon_dir, "compact", "--sole-writer")
    assert out.returncode == 1 and "other nodes' shards (b.jsonl)" in out.stderr


def _knows_b(st: peerstate.PeerState) -> None:
    """noond's state: member b, which last reported holding a's ops up to 4."""
    st.members.update({"b": "127.0.0.1:1"})
    st.reports.update({"b": peerstate.Report({"a": 4}, 1_700_000_000.0)})


def test_with_daemon_state_it_says_which_peer_keeps_what(noon_dir):
    prepare(noon_dir)
    peerstate.update(
        noon_dir / ".noon" / "noond.json",
        _knows_b,
    )
    out = noon(noon_dir, "compact")
    assert out.returncode == 0, out.stderr
    assert "kept 1 deleted element(s) for b: saw this element but not yet its latest" in out.stdout
    assert "last report 2023-11-14" in out.stdout


def test_the_daemon_state_is_read_where_noond_keeps_it(noon_dir, tmp_path):
    """NOOND_STATE moves noond's state file; noon compact reads the same one (it used to look
    in the default place only, and collected as if no member existed)."""
    prepare(noon_dir)
    state = tmp_path / "elsewhere" / "noond.json"
    peerstate.update(
        state,
        _knows_b,
    )
    out = noon(noon_dir, "compact", NOOND_STATE=str(state))
    assert out.returncode == 0, out.stderr
    assert "kept 1 deleted element(s) for b" in out.stdout


def test_a_disk_too_small_for_the_new_copy_is_told_what_it_lacks(tmp_path: Path) -> None:
    """Issue 26 item 10: a compaction writes the shard's new copy beside the old one. On a disk
    without room for it, `noon compact` says how much it needs and changes nothing; with the
    room, it compacts."""
    with small_disk(tmp_path / "disk", "16m") as disk:
        d = disk / "noon"
        s = Store(Settings.from_env({}, dir=d, node_id="a", compact_after=0, fsync=False))
        keys = [("content", "default", f"m{i}") for i in range(2000)]
        for v in range(2):
            s.write(plan_of([Draft(k, {"text": f"v{v} " + "w" * 400}) for k in keys]))
        s.close()
        shard = d / "a.jsonl"
        before = shard.read_bytes()
        filler = fill(disk, leave_pages=(len(before) // 2) // PAGE)  # less than the kept half
        out = noon(d, "compact", "--history", "0")
        assert out.returncode == 1, out.stdout
        assert "cannot compact a.jsonl: its new copy needs" in out.stderr, out.stderr
        assert "Nothing was changed" in out.stderr
        assert shard.read_bytes() == before
        filler.unlink()
        out = noon(d, "compact", "--history", "0")
        assert out.returncode == 0, out.stderr
        assert "a.jsonl: 4000 -> 2000 operations" in out.stdout
