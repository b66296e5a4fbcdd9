"""The shard format primitives (the batch gate both ways) and the file layer under every shard
reader and writer: nothing is opened through a link, a FIFO or a directory named like a shard."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.core.ops import decode, encode, line_digest
from noon.store import receive, serve
from noon.store.lines import BatchGate, Envelope, last_complete, lines_backwards
from noon.store.shard import (
    NotRegular,
    ShardReader,
    list_shards,
    mapped,
    open_regular,
    unsafe_entries,
    write_file,
)


def line(node: str, seq: int, bat: int | None = None, text: str = "t") -> bytes:
    return encode(
        node=node,
        seq=seq,
        hlc=(1_700_000_000_000 << 16) + seq,
        el=("content", "default", f"e{seq}"),
        val={"text": text},
        bat=bat,
    )


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[tuple[int, int | None]], list[int]]:
    """(seq, bat) in file order, and the seqs a reader may show: every batch but a trailing
    unfinished one."""
    ops: list[tuple[int, int | None]] = []
    visible: list[int] = []
    seq = 0
    for _ in range(draw(st.integers(0, 10))):
        size = draw(st.integers(1, 4))
        bat = seq + size if size > 1 else None
        group = [(s, bat) for s in range(seq + 1, seq + size + 1)]
        ops += group
        visible += [s for s, _ in group]
        seq += size
    if draw(st.booleans()):
        cut = draw(st.integers(1, 3))
        ops += [(s, seq + 4) for s in range(seq + 1, seq + 1 + cut)]
    return ops, visible


@given(batches())
def test_the_gate_forwards_and_backwards_agree_on_what_is_complete(case):
    ops, visible = case
    gate: BatchGate[int] = BatchGate()
    shown = [s for seq, bat in ops for s in gate.feed(seq, "n", seq, bat)]
    assert shown == visible
    gated = last_complete((seq, Envelope("n", seq, bat)) for seq, bat in reversed(ops))
    assert gated.last == (visible[-1] if visible else None)
    assert len(gated.unfinished) == len(ops) - len(visible)


@given(st.lists(st.binary(max_size=20).filter(lambda b: b"\n" not in b), max_size=8))
def test_lines_backwards_yields_every_line_with_its_offset(raws):
    data = b"".join(r + b"\n" for r in raws)
    got = list(lines_backwards(data, len(data)))
    assert [raw for _, raw in got] == list(reversed(raws))
    assert all(data[start : start + len(raw) + 1] == raw + b"\n" for start, raw in got)


def test_a_digest_ignores_the_newline_and_trailing_white_space():
    assert line_digest(b'{"a":1}\n') == line_digest(b'{"a":1} \r\n') == line_digest(b'{"a":1}')


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A directory with a good shard and every kind of entry that only looks like one."""
    d = tmp_path / "noon"
    d.mkdir()
    (d / "good.jsonl").write_bytes(line("good", 1) + b"\n")
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"root:x:0:0:secret\n")
    (d / "link.jsonl").symlink_to(outside)
    os.mkfifo(d / "fifo.jsonl")
    (d / "dir.jsonl").mkdir()
    (d / "good.jsonl.lock").symlink_to(outside)
    return d


def test_listings_skip_and_doctor_names_what_is_not_a_regular_file(hostile: Path):
    assert list_shards(hostile) == ["good.jsonl"]
    assert dict(unsafe_entries(hostile)) == {
        "dir.jsonl": "a directory",
        "fifo.jsonl": "a FIFO, socket or device",
        "good.jsonl.lock": "a symbolic link",
        "link.jsonl": "a symbolic link",
    }
    assert list(serve.Summaries(hostile).all()) == ["good"]


@pytest.mark.parametrize("name", ["link.jsonl", "fifo.jsonl", "dir.jsonl"])
def test_readers_never_open_through_a_link_nor_block_on_a_fifo(hostile: Path, name: str):
    t0 = time.monotonic()
    with pytest.raises(NotRegular):
        open_regular(hostile / name)
    with pytest.raises(FileNotFoundError):  # NotRegular reads as "absent" to every reader
        ShardReader(hostile / name).poll()
    with mapped(hostile / name) as buf:
        assert buf == b""
    page = serve.read_after(hostile / name, 0, max_bytes=1 << 20)
    assert page.body == b"" and page.head == 0
    assert time.monotonic() - t0 < 5


def test_a_received_push_never_writes_through_a_link(hostile: Path, tmp_path: Path):
    before = (tmp_path / "outside.txt").read_bytes()
    ops = receive.parse_ops(line("link", 1) + b"\n", "link", max_ops=10)
    with pytest.raises(NotRegular):
        receive.append(hostile, "link", ops, fsync=False)
    assert (tmp_path / "outside.txt").read_bytes() == before
    # The lock file of "good" is a link: its shard cannot be locked, so nothing is written.
    ops = receive.parse_ops(line("good", 2) + b"\n", "good", max_ops=10)
    with pytest.raises(NotRegular):
        receive.append(hostile, "good", ops, fsync=False)
    assert (tmp_path / "outside.txt").read_bytes() == before
    assert [decode(r).seq for r in (hostile / "good.jsonl").read_bytes().splitlines()] == [1]


def test_the_atomic_writer_replaces_a_link_and_keeps_the_mode(tmp_path: Path):
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    link = tmp_path / "state.json"
    link.symlink_to(target)
    write_file(link, [b"new ", b"content"], mode=0o600)
    assert target.read_bytes() == b"keep"
    assert not link.is_symlink() and link.read_bytes() == b"new content"
    assert stat.S_IMODE(link.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_reader_sees_lines_truncated_away_and_written_again_as_a_rewrite(tmp_path: Path):
    """An append that fails on a full disk is truncated back, and a reader may have read its
    lines meanwhile. When the file has grown past the reader again before its next poll, with
    other bytes (a collection left stubs where the ops were), neither the inode nor the size
    says so: the reader must read the file again from the start, not go on from its offset."""
    path = tmp_path / "n1.jsonl"
    first = line("n1", 1) + b"\n"
    path.write_bytes(first + line("n1", 2) + b"\n" + line("n1", 3) + b"\n")
    reader = ShardReader(path)
    assert [op.seq for op in reader.poll().ops] == [1, 2, 3]
    inode = os.stat(path).st_ino

    os.truncate(path, len(first))  # the failed append taken back
    again = [line("n1", seq, text="written again, longer than before") for seq in (2, 3, 4)]
    with open(path, "ab") as f:
        f.write(b"\n".join(again) + b"\n")
    assert os.stat(path).st_ino == inode  # nothing but the bytes tells the two files apart

    polled = reader.poll()
    assert polled.rewritten
    assert [(op.seq, op.val) for op in polled.ops] == [(1, {"text": "t"})] + [
        (seq, {"text": "written again, longer than before"}) for seq in (2, 3, 4)
    ]

    with open(path, "ab") as f:  # a plain append after it is no rewrite
        f.write(line("n1", 5) + b"\n")
    polled = reader.poll()
    assert not polled.rewritten
    assert [op.seq for op in polled.ops] == [5]
