"""noond learns of a local write from inotify (noond/inotify.py), not by waiting for its poll."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from noon.store.serve import Summaries
from noond.inotify import open_watch
from tests.harness.mesh import Node, Pki, start_all, wait_until

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="inotify is Linux's")


@linux_only
def test_the_watch_names_what_was_appended_created_and_renamed_in(tmp_path: Path) -> None:
    watch = open_watch(tmp_path)
    assert watch is not None
    try:
        assert watch.changed() == set()
        with open(tmp_path / "a.jsonl", "ab") as f:
            f.write(b"x\n")
        (tmp_path / "b.tmp").write_bytes(b"y\n")
        os.replace(tmp_path / "b.tmp", tmp_path / "b.jsonl")
        assert watch.changed() == {"a.jsonl", "b.tmp", "b.jsonl"}
        assert watch.changed() == set()  # each event is told once
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "deeper.jsonl").write_bytes(b"z\n")
        assert watch.changed() == {"sub"}  # only the directory itself is watched
    finally:
        watch.close()


def test_no_watch_on_a_missing_directory_says_why(tmp_path: Path, caplog) -> None:
    assert open_watch(tmp_path / "absent") is None
    assert "local writes are noticed by polling" in caplog.text


@linux_only
@pytest.mark.integration
def test_a_local_write_is_pushed_long_before_any_poll_or_round(
    spawn: list[Node], tmp_path: Path, pki: Pki
) -> None:
    """Polling every 60 s and rounds every 60 s: only inotify can make the write reach the
    peer within the 20 s this test waits."""
    slow = {"NOOND_WATCH_INTERVAL": "60", "NOOND_INTERVAL": "60"}
    a, b = Node("a", tmp_path, pki, env=slow), Node("b", tmp_path, pki, env=slow)
    spawn += [a, b]
    start_all((a, [b]), (b, [a]))
    wait_until(
        lambda: all(len(n.peers().peers) == 1 for n in (a, b)),
        what="each to admit the other",
    )
    wait_until(lambda: a.metric("noond_rounds_total") >= 1, what="a's first round")
    a.write(("x", "pushed at once"))
    wait_until(lambda: Summaries(b.dir).get("a").seq >= 1, timeout=20, what="b to hold a's write")
    assert a.metric("noond_pushes_total", 'result="ok"') >= 1
