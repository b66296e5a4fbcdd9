"""noon.store.serve and noon.store.receive: seq cursors, complete-batch pages, summaries, validated
appends, forks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from noon.core.ops import decode, encode
from noon.store import receive, serve
from noon.store.errors import ForkDetected
from noon.store.shard import HeldLock


def line(node: str, seq: int, bat: int | None = None, text: str = "t") -> bytes:
    return encode(
        node=node,
        seq=seq,
        hlc=(1_700_000_000_000 << 16) + seq,
        el=("content", "default", f"e{seq % 7}"),
        val={"text": text},
        prev=None,
        by="test",
        bat=bat,
    )


def shard_bytes(batches: list[list[int]]) -> bytes:
    out = []
    for batch in batches:
        last = batch[-1]
        for seq in batch:
            out.append(line("n", seq, last if len(batch) > 1 else None) + b"\n")
    return b"".join(out)


@st.composite
def shards(draw: st.DrawFn) -> tuple[list[list[int]], bytes]:
    """Batches of increasing seqs, any ops dropped except the author's last (as compaction
    does), then maybe a torn tail: an unfinished batch or half a line."""
    whole: list[list[int]] = []
    seq = 0
    for _ in range(draw(st.integers(0, 12))):
        size = draw(st.integers(1, 4))
        whole.append(list(range(seq + 1, seq + size + 1)))
        seq += size
    data = b""
    batches: list[list[int]] = []
    for i, batch in enumerate(whole):
        final = i == len(whole) - 1
        kept = [s for s in batch if (final and s == batch[-1]) or draw(st.booleans())]
        for s in kept:
            data += line("n", s, batch[-1] if len(batch) > 1 else None) + b"\n"
        if kept:
            batches.append(kept)
    tail = draw(st.sampled_from(["none", "batch", "half"]))
    if tail == "batch":
        data += line("n", seq + 1, seq + 3) + b"\n" + line("n", seq + 2, seq + 3) + b"\n"
    elif tail == "half":
        data += line("n", seq + 1)[:20]
    return batches, data


@settings(max_examples=150, deadline=None)
@given(shards(), st.integers(0, 40), st.integers(1, 900))
def test_pages_from_any_cursor_hold_exactly_the_complete_ops_after_it(
    tmp_path_factory, shard, cursor, page_bytes
):
    batches, data = shard
    path = tmp_path_factory.mktemp("s") / "n.jsonl"
    path.write_bytes(data)
    expected = [s for b in batches for s in b if s > cursor]
    got: list[int] = []
    after = cursor
    for _ in range(100):
        page = serve.read_after(path, after, max_bytes=page_bytes)
        seqs = [decode(raw).seq for raw in page.body.splitlines()]
        got += seqs
        assert page.ops == len(seqs)
        if seqs:
            assert page.last == seqs[-1]
            assert page.body.endswith(b"\n")
        top = max([s for b in batches for s in b], default=0)
        assert page.head == top
        if not page.more:
            break
        assert page.last > after
        after = page.last
    assert got == expected
    assert serve.summary_of(data, data.rfind(b"\n") + 1, path).seq == (
        max([s for b in batches for s in b], default=0)
    )


def test_a_batch_is_never_split_across_pages(tmp_path: Path):
    path = tmp_path / "n.jsonl"
    path.write_bytes(shard_bytes([[1], [2, 3, 4, 5], [6]]))
    page = serve.read_after(path, 0, max_bytes=1)
    assert [decode(r).seq for r in page.body.splitlines()] == [1]
    page = serve.read_after(path, 1, max_bytes=1)
    assert [decode(r).seq for r in page.body.splitlines()] == [2, 3, 4, 5]
    assert page.more


def test_check_digest_detects_a_fork_at_the_cursor(tmp_path: Path):
    path = tmp_path / "n.jsonl"
    path.write_bytes(line("n", 1) + b"\n" + line("n", 2) + b"\n")
    same = decode(line("n", 1)).digest
    other = decode(line("n", 1, text="other")).digest
    assert serve.read_after(path, 1, max_bytes=100, check=same).checked
    with pytest.raises(ForkDetected):
        serve.read_after(path, 1, max_bytes=100, check=other)


def test_a_fork_shows_even_when_the_op_at_the_cursor_is_gone_here(tmp_path: Path):
    """A node restored from a backup wrote other ops under seqs 3 and 4. The peer collected
    its op 4 (a deleted memory), so ``check`` at the cursor compares nothing and the page used
    to be served: the restored node appended the peer's 5.. after its own forked 3 and 4, two
    histories merged. The reader's newer digests (``checks``) show the fork on op 3."""
    peer = tmp_path / "n.jsonl"
    peer.write_bytes(b"".join(line("n", s) + b"\n" for s in (1, 2, 3, 5, 6)))
    restored = tmp_path / "restored.jsonl"
    restored.write_bytes(
        b"".join(line("n", s, text="t" if s < 3 else "restored") + b"\n" for s in (1, 2, 3, 4))
    )
    mine = serve.recent_digests(restored, 4)
    assert [s for s, _ in mine] == [4, 3, 2, 1]
    assert serve.recent_digests(restored, 3, count=2) == mine[1:3]
    at_cursor = dict(mine)[4]
    page = serve.read_after(peer, 4, max_bytes=1 << 16, check=at_cursor)
    assert page.ops == 2 and not page.checked  # the hole: nothing to compare at seq 4
    with pytest.raises(ForkDetected, match="op 3 differs"):
        serve.read_after(peer, 4, max_bytes=1 << 16, check=at_cursor, checks=mine)
    with pytest.raises(ForkDetected, match="pusher"):
        serve.compare(peer, mine, who="pusher")
    same = serve.recent_digests(peer, 3)
    assert serve.read_after(peer, 3, max_bytes=1 << 16, checks=same).checked
    assert serve.compare(peer, same, who="pusher") == 3


def ops_of(*lines: bytes, node: str = "n") -> list:
    return receive.parse_ops(b"\n".join(lines) + b"\n", node, max_ops=100)


def test_append_skips_duplicates_refuses_forks_and_repairs_a_torn_tail(tmp_path: Path):
    path = tmp_path / "n.jsonl"
    done = receive.append(tmp_path, "n", ops_of(line("n", 1), line("n", 2)), fsync=False)
    assert (done.appended, done.skipped, done.head) == (2, 0, 2)
    with open(path, "ab") as f:
        f.write(line("n", 3)[:15])  # a crash mid-line
    done = receive.append(tmp_path, "n", ops_of(line("n", 2), line("n", 3)), fsync=False)
    assert (done.appended, done.skipped, done.head) == (1, 1, 3)
    assert path.read_bytes() == b"".join(line("n", s) + b"\n" for s in (1, 2, 3))
    before = path.read_bytes()
    with pytest.raises(ForkDetected):
        receive.append(
            tmp_path, "n", ops_of(line("n", 2, text="forked"), line("n", 4)), fsync=False
        )
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "body,message",
    [
        (b"nope\n", "line 1: not JSON"),
        (line("m", 1) + b"\n", "op of node 'm'"),
        (line("n", 2) + b"\n" + line("n", 1) + b"\n", "seq 1 does not follow seq 2"),
        (line("n", 1, bat=2) + b"\n", "does not complete"),
    ],
)
def test_parse_ops_names_the_bad_line(body: bytes, message: str):
    with pytest.raises(receive.ReplicaError, match=message):
        receive.parse_ops(body, "n", max_ops=10)


def test_parse_ops_is_bounded():
    body = b"".join(line("n", s) + b"\n" for s in range(1, 12))
    with pytest.raises(receive.ReplicaError, match="more than 10"):
        receive.parse_ops(body, "n", max_ops=10)


def test_summaries_follow_appends_and_ignore_unfinished_batches(tmp_path: Path):
    summaries = serve.Summaries(tmp_path)
    assert summaries.all() == {}
    (tmp_path / "n.jsonl").write_bytes(line("n", 1) + b"\n")
    assert summaries.get("n").seq == 1
    with open(tmp_path / "n.jsonl", "ab") as f:
        f.write(line("n", 2, bat=3) + b"\n")
    assert summaries.get("n").seq == 1
    with open(tmp_path / "n.jsonl", "ab") as f:
        f.write(line("n", 3, bat=3) + b"\n")
    s = summaries.get("n")
    assert (s.seq, s.digest) == (3, decode(line("n", 3, bat=3)).digest)
    (tmp_path / "not a shard.txt").write_text("x")
    assert list(summaries.all()) == ["n"]


def test_a_held_lock_keeps_local_writers_waiting_until_recovery_is_done(tmp_path: Path):
    import threading

    from noon.config import Settings
    from noon.core.ops import Draft
    from noon.store.store import Store

    own = tmp_path / "n.jsonl"
    held = HeldLock(own)
    store = Store(Settings(dir=tmp_path, node_id="n", fsync=False))
    written: list[int] = []

    def writer() -> None:
        ops = store.write(lambda fold: [Draft(("content", "default", "w"), {"text": "w"})])
        written.extend(op.seq for op in ops)

    t = threading.Thread(target=writer)
    t.start()
    t.join(timeout=0.3)
    assert t.is_alive() and not written  # blocked on the shard's lock
    recovered = ops_of(line("n", 1), line("n", 2))
    assert receive.append(tmp_path, "n", recovered, fsync=False, held=held).appended == 2
    held.release()
    t.join(timeout=10)
    assert written == [3]  # continued after the recovered ops: no seq reused
    other = HeldLock(own)
    try:
        with pytest.raises(ValueError):
            receive.append(tmp_path, "m", ops_of(line("m", 1), node="m"), fsync=False, held=other)
    finally:
        other.release()
