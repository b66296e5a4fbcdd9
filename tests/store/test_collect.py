import fcntl
import os
import shutil
import threading
from pathlib import Path

import pytest

from noon.config import Settings
from noon.core.ops import Draft, encode
from noon.store import collect as collect_mod
from noon.store import cut
from noon.store.collect import collect_dir
from noon.store.store import Store

E = ("content", "default", "E")
F = ("content", "default", "F")


def store(d: Path, node: str, *, shared: bool = True) -> Store:
    return Store(Settings.from_env({}, dir=d, node_id=node, compact_after=0), shared=shared)


def put(s: Store, key, text):
    return s.write(lambda f: [Draft(key, {"text": text})])


def delete(s: Store, key):
    return s.write(lambda f: [Draft(key, None)])


def view(d: Path):
    s = store(d, "viewer")
    return {k: el.winner.val for k, el in s.fold.elements.items() if not el.deleted}


def test_sole_writer_collects_everything_deleted_and_keeps_the_rest(noon_dir):
    a = store(noon_dir, "a")
    put(a, E, "one")
    put(a, E, "two")
    delete(a, E)
    put(a, F, "stays")
    before = view(noon_dir)
    size = (noon_dir / "a.jsonl").stat().st_size
    report = collect_dir(noon_dir, self_id="a", reports={})
    assert report.collected == 1 and report.removed_ops == 3 and not report.kept
    assert view(noon_dir) == before == {F: {"text": "stays"}}
    assert (noon_dir / "a.jsonl").stat().st_size < size / 2
    assert E not in store(noon_dir, "v2").fold.elements
    assert put(a, E, "new genesis")[0].seq == 5  # the seq high-water mark survived


def test_a_member_that_never_reported_or_saw_part_of_it_blocks(noon_dir):
    a = store(noon_dir, "a")
    put(a, E, "one")
    delete(a, E)
    put(a, F, "last")
    report = collect_dir(noon_dir, self_id="a", reports={}, admitted=["b"])
    assert report.collected == 0 and [str(b) for _, b in report.kept] == [
        "b: never reported what it holds"
    ]
    report = collect_dir(noon_dir, self_id="a", reports={"b": {"a": 1}}, admitted=["b"])
    assert report.collected == 0 and "saw this element" in str(report.kept[0][1])
    report = collect_dir(noon_dir, self_id="a", reports={"b": {"a": 3}}, admitted=["b"])
    assert report.collected == 1


def test_an_element_born_and_deleted_while_a_member_was_away_goes_at_once(noon_dir):
    a = store(noon_dir, "a")
    put(a, F, "known to b")
    put(a, E, "born while b is away")
    delete(a, E)
    put(a, F, "last")
    report = collect_dir(noon_dir, self_id="a", reports={"b": {"a": 1}}, admitted=["b"])
    assert report.collected == 1


def test_a_crash_between_renames_never_shows_the_deleted_element(noon_dir, monkeypatch, tmp_path):
    # E is created on b, edited on c, deleted on a: three shards, a chain across them.
    b, c, a = store(noon_dir, "b"), store(noon_dir, "c"), store(noon_dir, "a")
    put(b, E, "created on b")
    put(b, F, "b's last op")
    c.refresh()
    put(c, E, "edited on c")
    put(c, F, "c's last op")
    a.refresh()
    delete(a, E)
    put(a, F, "a's last op")
    full = {"a": 2, "b": 2, "c": 2}
    real = collect_mod.rewrite
    calls: list[str] = []

    def one_rename_then_power_cut(path, scan, drops):
        if calls:
            raise SystemExit("power cut")
        calls.append(path.name)
        return real(path, scan, drops)

    monkeypatch.setattr(collect_mod, "rewrite", one_rename_then_power_cut)
    with pytest.raises(SystemExit):
        collect_dir(noon_dir, self_id="a", reports={"b": full, "c": full})
    assert calls == ["a.jsonl"]  # the delete went first: only the journal hides the versions
    assert E not in view(noon_dir)
    unjournalled = tmp_path / "without-journal"
    shutil.copytree(noon_dir, unjournalled)
    cut.journal_path(unjournalled).unlink()
    assert view(unjournalled)[E] == {"text": "edited on c"}  # what the journal prevents
    monkeypatch.setattr(collect_mod, "rewrite", real)
    report = collect_dir(noon_dir, self_id="a", reports={"b": full, "c": full})
    assert report.collected == 0  # nothing new: the unfinished removal was finished first
    assert not cut.journal_path(noon_dir).exists()
    assert E not in store(noon_dir, "v").fold.elements


def test_a_concurrent_edit_survives_a_delete_and_collection_of_what_the_delete_saw(noon_dir):
    a = store(noon_dir, "a")
    put(a, E, "base")
    (noon_dir / "b.jsonl").write_bytes(
        encode(node="b", seq=1, hlc=1, el=E, val={"text": "edited on b, unaware"}, prev=(("a", 1),))
        + b"\n"
    )
    with open(noon_dir / "b.jsonl", "ab") as f:
        f.write(encode(node="b", seq=2, hlc=2, el=F, val={"text": "b's last"}) + b"\n")
    a.refresh()
    delete(a, E)  # a saw b's edit: it names both heads
    put(a, F, "last")
    assert E not in view(noon_dir)
    report = collect_dir(noon_dir, self_id="a", reports={"b": {"a": 3, "b": 2}})
    assert report.collected == 1


def test_a_reader_never_sees_half_a_collection(noon_dir, monkeypatch):
    """A reader reads shards one after another. If it read b's shard before a collection removed
    version X from it and c's after the collection removed the delete naming X, it would hold X
    and nothing naming it: the deleted memory shown again, for that session's whole life (a
    store never forgets an op it folded). A collection journals what it removes before its
    first rename, and may not do so while a reader goes round the shards (the cut lock)."""
    from noon.store import shard as shard_mod

    b, c = store(noon_dir, "b"), store(noon_dir, "c")
    put(b, E, "a secret, created on b")
    put(b, F, "b's last op")
    c.refresh()
    delete(c, E)
    put(c, F, "c's last op")
    full = {"b": 2, "c": 2}
    real_poll = shard_mod.ShardReader.poll
    collector: list[threading.Thread] = []
    journal_could_begin: list[bool] = []

    def poll_then_collect(self, max_bytes=None):
        polled = real_poll(self, max_bytes)
        if self.path.name == "b.jsonl" and not collector:
            # Between two reads: a collection may not start its journal now (the probe takes
            # the lock as cut.begin does, without waiting), and one started here waits.
            fd = os.open(cut.cut_lock_path(noon_dir), os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                journal_could_begin.append(True)
            except BlockingIOError:
                journal_could_begin.append(False)
            finally:
                os.close(fd)
            t = threading.Thread(
                target=collect_dir,
                args=(noon_dir,),
                kwargs={"self_id": "b", "reports": {"c": full}},
            )
            collector.append(t)
            t.start()
        return polled

    monkeypatch.setattr(shard_mod.ShardReader, "poll", poll_then_collect)
    reader = store(noon_dir, "reader", shared=False)  # folds every shard afresh
    assert journal_could_begin == [False]
    collector[0].join(timeout=30)
    assert not collector[0].is_alive()
    assert E not in store(noon_dir, "after").fold.elements  # the collection did happen
    el = reader.fold.elements.get(E)
    assert el is None or el.deleted, f"the reader shows {el.winner.val if el else None}"


def test_a_damaged_replica_shard_pulled_again_never_brings_back_what_was_collected(
    noon_dir, tmp_path
):
    """b collected E (created on a, deleted on b). Then b's disk loses its copy of a's shard
    and b pulls it again from a, which has not collected E: E's version comes back, and the
    delete that lived in b's own shard is gone for good here. The ledger of what b collected
    keeps it out, and a's op at the recorded floor (b's last op of a when it collected) is
    stored again, so the shard's head is where it was."""
    from noon.store import forgotten, receive, serve

    a_dir = tmp_path / "a"
    a_dir.mkdir()
    a = store(a_dir, "a")
    put(a, E, "a secret, created on a")
    put(a, F, "a's last op")

    def pull_a_into(d: Path) -> receive.Appended:
        page = serve.read_after(a_dir / "a.jsonl", 0, max_bytes=1 << 20)
        return receive.append(d, "a", receive.parse_ops(page.body, "a", max_ops=100), fsync=False)

    pull_a_into(noon_dir)
    b = store(noon_dir, "b")
    delete(b, E)
    put(b, F, "b's last op")
    report = collect_dir(noon_dir, self_id="b", reports={"a": {"a": 2, "b": 2}})
    assert report.collected == 1 and E not in view(noon_dir)
    assert forgotten.load(noon_dir).floor == {"a": 2, "b": 2}

    (noon_dir / "a.jsonl").unlink()  # the disk lost it
    done = pull_a_into(noon_dir)
    assert (done.appended, done.skipped) == (1, 1)
    assert E not in store(noon_dir, "v").fold.elements
    assert view(noon_dir) == {F: {"text": "b's last op"}}
    assert serve.Summaries(noon_dir).get("a").seq == 2  # the head is back where it was


def test_the_ledger_survives_a_line_torn_by_a_crash(noon_dir):
    from noon.store import forgotten

    forgotten.record(noon_dir, [E], {"a": 3})
    with open(forgotten.ledger_path(noon_dir), "ab") as f:
        f.write(b'{"frontier": {"a": 9}, "ke')  # the crash
    forgotten.record(noon_dir, [F], {"a": 5})
    ledger = forgotten.load(noon_dir)
    assert ledger.frontiers == {E: {"a": 3}, F: {"a": 5}} and ledger.floor == {"a": 5}


def test_the_ledger_floor_never_counts_an_unfinished_batch(noon_dir):
    """A writer that crashed mid-batch leaves ops its next write truncates. Had the ledger
    taken them as held, the node's own shard would stay below its floor for good, and noond
    would wait forever for a peer holding ops that never existed anywhere else."""
    from noon.store import forgotten

    a = store(noon_dir, "a")
    put(a, E, "one")
    delete(a, E)
    put(a, F, "last complete op")
    with open(noon_dir / "a.jsonl", "ab") as f:  # seqs 4 and 5 of a batch ending at 6
        for seq in (4, 5):
            f.write(
                encode(
                    node="a",
                    seq=seq,
                    hlc=(1_800_000_000_000 << 16) + seq,
                    el=("content", "default", f"x{seq}"),
                    val={"text": "torn"},
                    prev=None,
                    by="test",
                    bat=6,
                )
                + b"\n"
            )
    assert collect_dir(noon_dir, self_id="a", reports={}).collected == 1
    assert forgotten.load(noon_dir).floor == {"a": 3}
    assert put(a, F, "after the crash")[0].seq == 4  # the unfinished batch was dropped
