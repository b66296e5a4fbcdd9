import os

import pytest

from noon.config import ConfigError, Settings
from noon.core.ops import Draft, Op, decode, encode
from noon.names import InvalidName, sanitize_node_id, shard_file, shard_node
from noon.store import store as store_module
from noon.store.store import ForkDetected, ShardBehind, Store
from tests.harness.stores import open_store, writer

KEY = ("content", "default", "m")


def put(store: Store, text: str, key=KEY):
    return store.write(lambda fold: [Draft(key, {"text": text})])


def text_of(store: Store, key=KEY):
    store.refresh()
    el = store.fold.elements.get(key)
    return None if el is None or el.winner.val is None else el.winner.val["text"]


def test_write_then_read_from_another_process_view(noon_dir):
    a = open_store(noon_dir)
    put(a, "hello")
    b = open_store(noon_dir, "b")
    assert text_of(b) == "hello"
    put(a, "again")
    assert text_of(b) == "again"
    el = b.fold.elements[KEY]
    assert len(el.heads) == 1 and el.winner.by == "cli"


def test_seqs_continue_after_restart_and_are_gapless(noon_dir):
    put(open_store(noon_dir), "1")
    put(open_store(noon_dir), "2")
    seqs = [
        int(line.split(b'"seq":')[1].split(b",")[0])
        for line in (noon_dir / "a.jsonl").read_bytes().splitlines()
    ]
    assert seqs == [1, 2]


def test_torn_tail_is_invisible_and_repaired_by_the_next_write(noon_dir):
    a = open_store(noon_dir)
    put(a, "kept")
    with open(noon_dir / "a.jsonl", "ab") as f:
        f.write(b'{"v":1,"node":"a","seq":2,"hlc":1')  # a crash mid-line
    reader = open_store(noon_dir, "r")
    assert text_of(reader) == "kept" and not reader.corrupt
    ops = put(a, "after")
    assert ops[0].seq == 2
    assert text_of(reader) == "after"
    assert (noon_dir / "a.jsonl").read_bytes().count(b"\n") == 2


def test_a_batch_cut_short_is_never_half_visible(noon_dir):
    a = open_store(noon_dir)
    put(a, "base")
    other = ("content", "default", "other")
    half = [encode(node="a", seq=2, hlc=2**40, el=KEY, val={"text": "half"}, bat=3)]
    with open(noon_dir / "a.jsonl", "ab") as f:
        f.write(half[0] + b"\n" + b'{"v":1,"node":"a","seq":3')  # line 3 torn
    reader = open_store(noon_dir, "r")
    assert text_of(reader) == "base"
    ops = put(a, "next", key=other)
    assert ops[0].seq == 2  # the unacknowledged batch was truncated, its seq reused
    assert text_of(reader) == "base" and text_of(reader, other) == "next"


def test_corrupt_lines_are_reported_with_place_and_kept(noon_dir):
    a = open_store(noon_dir)
    put(a, "one")
    with open(noon_dir / "a.jsonl", "ab") as f:
        f.write(b"this is not json\n")
    put(a, "two")
    reader = open_store(noon_dir, "r")
    assert text_of(reader) == "two"
    assert [(c.shard, c.line) for c in reader.corrupt] == [("a.jsonl", 2)]
    assert b"this is not json" in (noon_dir / "a.jsonl").read_bytes()


def test_fork_is_refused_naming_both_shards(noon_dir):
    a = open_store(noon_dir)
    put(a, "original")
    line = encode(node="a", seq=1, hlc=7, el=KEY, val={"text": "forked"})
    (noon_dir / "a-restored.jsonl").write_bytes(line + b"\n")
    with pytest.raises(ForkDetected, match=r"a-restored\.jsonl:1.*a\.jsonl:1|a\.jsonl:1.*a-re"):
        open_store(noon_dir, "r")


def test_writing_on_a_shard_behind_a_copy_of_itself_is_refused(noon_dir):
    a = open_store(noon_dir)
    put(a, "1")
    put(a, "2")
    (noon_dir / "a-copy.jsonl").write_bytes((noon_dir / "a.jsonl").read_bytes())
    lines = (noon_dir / "a.jsonl").read_bytes().splitlines(keepends=True)
    (noon_dir / "a.jsonl").write_bytes(lines[0])  # an old backup put back
    with pytest.raises(ShardBehind, match="behind"):
        put(open_store(noon_dir), "3")


def test_a_shard_restored_alone_from_a_backup_cannot_reuse_seqs(noon_dir):
    """The machine's read model remembers the highest seq it ever saw of each author, so the
    own shard put back from an old backup is refused for writing even by a new process (before
    the read model, only a process that had read the newer ops knew)."""
    put(open_store(noon_dir), "1")
    put(open_store(noon_dir), "2")
    first = (noon_dir / "a.jsonl").read_bytes().splitlines(keepends=True)[0]
    (noon_dir / "a.jsonl").write_bytes(first)
    with pytest.raises(ShardBehind, match="seq 2 of node 'a' was seen here before"):
        put(open_store(noon_dir), "3")
    assert (noon_dir / "a.jsonl").read_bytes() == first


def test_a_vanished_shard_rebuilds_the_state(noon_dir):
    put(open_store(noon_dir, "x"), "from x")
    reader = open_store(noon_dir, "r")
    assert text_of(reader) == "from x"
    (noon_dir / "x.jsonl").unlink()
    changes = reader.refresh()
    assert KEY in changes.keys and text_of(reader) is None
    assert reader.fold.applied == 0


def test_a_shard_copied_over_in_place_is_read_again(noon_dir):
    """A shard overwritten in place (same inode, same size, other bytes: ``cp`` of another copy)
    is not the file the read model's cursor was saved on: it is read again from the start."""
    a = open_store(noon_dir)
    put(a, "v1")
    put(a, "v2")
    assert text_of(open_store(noon_dir, "r")) == "v2"
    data = (noon_dir / "a.jsonl").read_bytes()
    with open(noon_dir / "a.jsonl", "r+b") as f:  # same inode
        f.write(data.replace(b"v1", b"V1"))
    os.utime(noon_dir / "a.jsonl", ns=(1, 1))
    with pytest.raises(ForkDetected, match="a:1"):  # op a:1 now has other bytes than before
        open_store(noon_dir, "r2")


def test_shard_names_and_node_ids_are_validated():
    for bad in ["", "../x", "a/b", ".hidden", "a..b", "x" * 65, "café"]:
        with pytest.raises(InvalidName):
            shard_file(bad)
        assert shard_node(bad + ".jsonl") is None
    assert shard_node("laptop.jsonl") == "laptop"
    assert shard_node("laptop.jsonl.lock") is None
    assert sanitize_node_id("My Laptop.local") == "my-laptop.local"
    with pytest.raises(ConfigError, match="NOON_NODE_ID"):
        Settings.from_env({"NOON_NODE_ID": "../evil", "NOON_DIR": "/tmp/x"})


def test_bad_settings_name_the_variable():
    with pytest.raises(ConfigError, match="NOON_FSYNC"):
        Settings.from_env({"NOON_FSYNC": "maybe", "NOON_NODE_ID": "a"})
    with pytest.raises(ConfigError, match="NOON_HISTORY"):
        Settings.from_env({"NOON_HISTORY": "-1", "NOON_NODE_ID": "a"})


@pytest.mark.integration
def test_processes_appending_to_one_shard_at_once_lose_nothing(noon_dir):
    procs = [writer(noon_dir, "shared", f"p{i}", 40) for i in range(2)]
    acks = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        acks += out.split()
    raw = (noon_dir / "shared.jsonl").read_bytes()
    lines = raw.splitlines()
    seqs = [int(line.split(b'"seq":')[1].split(b",")[0]) for line in lines]
    assert seqs == list(range(1, len(lines) + 1))  # gapless, no interleaving
    store = open_store(noon_dir, "r")
    for n in range(2):
        for i in range(40):
            for j in range(1 + i % 3):
                assert text_of(store, ("content", "default", f"p{n}-{i}-{j}")) == f"p{n} {i} {j}"
    assert not store.corrupt


def test_online_compaction_runs_when_the_seq_crosses_the_threshold(noon_dir):
    a = open_store(noon_dir, compact_after=5, history=0)
    for i in range(5):
        put(a, f"v{i}")
    a.wait_compaction()
    lines = (noon_dir / "a.jsonl").read_bytes().splitlines()
    assert len(lines) == 1 and b'"seq":5' in lines[0]
    assert text_of(open_store(noon_dir, "r"), KEY) == "v4"
    assert put(a, "v5")[0].seq == 6


def test_a_crossing_with_nothing_superseded_reads_no_shard_again(noon_dir, monkeypatch):
    """Every op still a head: a compaction would drop nothing, so none runs; the first write
    that supersedes one of this node's ops has the next one run at its crossing."""
    runs = []

    def compact_dir(*args, **kwargs):
        runs.append(args)
        return real(*args, **kwargs)

    real = store_module.compact_dir
    monkeypatch.setattr(store_module, "compact_dir", compact_dir)
    a = open_store(noon_dir, compact_after=2, history=0)
    for i in range(3):
        put(a, "new", key=("content", "default", f"m{i}"))
    a.wait_compaction()
    assert runs == [] and len((noon_dir / "a.jsonl").read_bytes().splitlines()) == 3
    put(a, "again", key=("content", "default", "m0"))
    a.wait_compaction()
    assert len(runs) == 1
    lines = (noon_dir / "a.jsonl").read_bytes().splitlines()
    assert len(lines) == 3 and not any(b'"seq":1,' in line for line in lines)
    assert text_of(open_store(noon_dir, "r"), ("content", "default", "m0")) == "again"


def test_compaction_due_fires_once_per_crossing(noon_dir):
    a = open_store(noon_dir, compact_after=4)

    def written(seq: int) -> Op:
        el = ("content", "d", "x")
        return decode(encode(node="a", seq=seq, hlc=seq, el=el, val={"text": ""}))

    due = [
        a.compaction_due([written(s) for s in batch])
        for batch in ([1, 2], [3], [4], [5, 6, 7], [8, 9], [10])
    ]
    assert due == [False, False, True, False, True, False]


def _fields(op):
    return (op.node, op.seq, op.hlc, op.el, op.val, op.prev, op.by, op.bat, op.known,
            op.digest, op.via)  # fmt: skip


def test_the_ops_a_write_returns_are_the_ops_its_lines_decode_to(noon_dir):
    """A write builds its ops from the drafts instead of decoding its own lines again: they
    must be exactly what a reader decodes from the shard (digest of the signed line included)."""
    a = open_store(noon_dir)
    written = put(a, "first")
    written += a.write(
        lambda fold: [
            Draft(KEY, {"text": "second"}),
            Draft(
                ("edge", "default", "@core", "x"),
                {"child": "m", "priority": 2, "disclosure": "d"},
                prev=None,
            ),
            Draft(("keyword", "default", "tea", "m"), {}, prev=((a.node, 1),)),
            Draft(("content", "default", "gone"), None),
        ],
        client="c" * 200,
        via="web",
    )
    lines = (noon_dir / shard_file(a.node)).read_bytes().splitlines()
    assert [_fields(op) for op in written] == [_fields(decode(line)) for line in lines]
