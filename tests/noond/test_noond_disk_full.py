"""Issue 26 item 3, the daemon's side: a noond whose disk fills up while a peer keeps pushing.
Before, every refused push logged a traceback (538 lines in 40 s); now the full disk is said
once (then at most once a minute), pushes are refused with the reason, and once space returns
the node catches up by itself."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from tests.harness.mesh import Node, Pki, start_all, wait_until
from tests.harness.small_disk import fill, small_disk

pytestmark = pytest.mark.integration


def test_a_daemon_on_a_full_disk_says_so_once_and_catches_up_when_space_returns(
    tmp_path: Path, pki: Pki, spawn: list[Node]
) -> None:
    a = Node("a", tmp_path, pki)
    b = Node("b", tmp_path, pki)  # its data on a small disk; its log beside it, not on it
    with small_disk(b.dir) as disk:
        spawn += [a, b]
        start_all((a, [b]), (b, [a]))
        a.write(("m0", "before the disk filled up"))
        wait_until(lambda: (b.dir / "a.jsonl").exists(), what="b to hold a's shard")
        filler = fill(disk)
        logged = b.log.stat().st_size
        for i in range(1, 21):
            a.write((f"m{i}", f"written while b's disk is full {i} " + "x" * 1000))

        def refused_enough() -> bool:
            pushes = a.metric("noond_pushes_total", 'result="unavailable"')
            pulls = b.metric("noond_exchanges_total", 'result="local_error"')
            return pushes >= 10 and pulls >= 10

        wait_until(refused_enough, timeout=120, what="b to refuse pushes and fail pulls")
        during = b.log.read_bytes()[logged:].decode(errors="replace")
        assert "Traceback" not in during, during[-3000:]
        said = [line for line in during.splitlines() if "disk is full" in line]
        assert said and len(said) < 10, said  # not once per push and per pull (20 or more)
        assert all("pushes are refused and pulls wait until space returns" in s for s in said)
        # Said when it starts; again only as a once-a-minute "still so", or when it starts
        # anew after a store succeeded (a few freed blocks) and noond said it had space again.
        told = [
            line for line in during.splitlines() if "disk is full" in line or "space again" in line
        ]
        for earlier, line in pairwise(told):
            if "disk is full" in line and "still so" not in line:
                assert "space again" in earlier, told

        filler.unlink()
        theirs = a.dir / "a.jsonl"
        wait_until(
            lambda: (b.dir / "a.jsonl").read_bytes() == theirs.read_bytes(),
            timeout=120,
            what="b to catch up with a's shard",
        )
        wait_until(lambda: "has space again" in b.log.read_text(), what="b to say so")
        assert "Traceback" not in b.log.read_text()
        b.stop()
