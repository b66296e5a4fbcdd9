"""Found by the nemesis: compaction on the author used to break a replica that lagged behind it.

A replica holding an old version of a memory pulled the author's shard past its cursor. If the
author had compacted meanwhile, the ops that superseded that old version were gone; what arrived
named only ops the replica never saw, so the old version stayed a head there: it showed as a
concurrent version, and once the memory was deleted it was shown again (a deleted memory came
back on that replica only, and replicas never converged).

Now ops that skip seqs just above a replica's head are refused (``SkipsCompacted``: nothing is
appended, a push gets 409 ``gap``) and the puller takes the sender's whole shard instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from noon.config import Settings
from noon.core.ops import Draft
from noon.store import receive, serve
from noon.store.compact import compact_dir
from noon.store.store import Store
from tests.harness.mesh import Node, Pki, start_all, wait_until
from tests.harness.stores import plan_of

pytestmark = pytest.mark.integration

KEY = ("content", "default", "memory")


def store(d: Path, node: str | None = None) -> Store:
    return Store(Settings(dir=d, node_id=node or d.name, fsync=False))


def page_after(src: Path, author: str, after: int) -> list:
    page = serve.read_after(src / f"{author}.jsonl", after, max_bytes=1 << 20)
    return receive.parse_ops(page.body, author, max_ops=1000)


def lagging_replica(tmp_path: Path) -> tuple[Path, Path]:
    """b holds version 1 of a memory; a writes four more, compacts, deletes it."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    author = store(a)
    author.write(lambda f: [Draft(KEY, {"text": "a secret, version 1"})])
    receive.append(b, "a", page_after(a, "a", 0), fsync=False)
    for i in range(2, 6):
        author.write(plan_of([Draft(KEY, {"text": f"version {i}"})]))
    compact_dir(a, ["a.jsonl"], history=0)
    author.write(lambda f: [Draft(KEY, None)])
    return a, b


def test_appending_past_compacted_seqs_is_refused_and_the_whole_shard_replaces_it(
    tmp_path: Path,
) -> None:
    a, b = lagging_replica(tmp_path)
    before = (b / "a.jsonl").read_bytes()
    with pytest.raises(receive.SkipsCompacted, match="compacted away"):
        receive.append(b, "a", page_after(a, "a", 1), fsync=False)
    assert (b / "a.jsonl").read_bytes() == before  # nothing appended
    # Appending anyway is what used to happen: the deleted memory shows again (on a copy).
    old = tmp_path / "old"
    old.mkdir()
    (old / "a.jsonl").write_bytes(before)
    receive.append(old, "a", page_after(a, "a", 1), fsync=False, allow_skip=True)
    assert not store(old, "old").fold.elements[KEY].deleted
    # The fix: take the sender's whole copy.
    fetched = b / ".a.refetch.tmp"
    fetched.write_bytes((a / "a.jsonl").read_bytes())
    assert receive.replace(b, "a", fetched, fsync=False)
    assert store(b, "b").fold.elements[KEY].deleted
    assert not fetched.exists()


def test_an_older_copy_never_replaces_a_newer_one(tmp_path: Path) -> None:
    a, b = lagging_replica(tmp_path)
    fetched = b / ".a.refetch.tmp"
    fetched.write_bytes((b / "a.jsonl").read_bytes())
    (b / "a.jsonl").write_bytes((a / "a.jsonl").read_bytes())
    assert not receive.replace(b, "a", fetched, fsync=False)
    assert (b / "a.jsonl").read_bytes() == (a / "a.jsonl").read_bytes()


def test_a_deleted_memory_stays_deleted_on_a_daemon_that_lagged_behind_a_compaction(
    spawn: list[Node], tmp_path: Path, pki: Pki
) -> None:
    a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
    spawn += [a, b]
    start_all((a, [b]), (b, [a]))
    a.write(("memory", "a secret, version 1"))
    wait_until(lambda: ("content", "default", "memory") in b.state(), what="b to hold v1")
    b.stop()
    for i in range(2, 6):
        a.write(("memory", f"version {i}"))
    compact_dir(a.dir, ["a.jsonl"], history=0)
    a.store().write(lambda f: [Draft(KEY, None)])
    b.start([a])
    wait_until(
        lambda: b.state() == a.state() and b.store().fold.elements[KEY].deleted,
        what="b to show the memory deleted",
    )
    wait_until(lambda: "re-fetched the whole shard a" in b.log.read_text(), what="the log")


def test_relay_compaction_never_shows_a_superseded_version_on_a_replica_that_lagged(
    tmp_path: Path,
) -> None:
    """``a`` writes version 1; ``r`` replicates it and sleeps. ``b`` overwrites it twice and
    compacts every shard it holds (``noon compact``): version 1 goes (superseded), and ``b``'s
    first overwrite used to go too (it named nothing held any more). ``r`` wakes and pulls
    ``b``'s shard for the first time: the op naming version 1 never reached it, so version 1
    was a head on ``r`` forever. No seq gap shows it (``r`` held nothing of ``b``): compaction
    now keeps every op that names another author's version."""
    a, b, r = (tmp_path / n for n in "abr")
    for d in (a, b, r):
        d.mkdir()
    store(a).write(lambda f: [Draft(KEY, {"text": "version 1"})])
    store(a).write(lambda f: [Draft(("content", "default", "other"), {"text": "keeps a's tail"})])
    receive.append(r, "a", page_after(a, "a", 0), fsync=False)
    receive.append(b, "a", page_after(a, "a", 0), fsync=False)
    writer = store(b)
    writer.write(lambda f: [Draft(KEY, {"text": "version 2"})])
    writer.write(lambda f: [Draft(KEY, {"text": "version 3"})])
    writer.write(lambda f: [Draft(("content", "default", "b-tail"), {"text": "keeps b's tail"})])
    compact_dir(b, ["a.jsonl", "b.jsonl"], history=0)
    receive.append(r, "b", page_after(b, "b", 0), fsync=False)
    heads = store(r, "r").fold.elements[KEY].heads or {}
    assert set(heads) == {("b", 2)}, f"r shows {sorted(heads)} as current versions"


def test_a_refetch_never_brings_back_what_this_replica_removed(tmp_path: Path) -> None:
    """Found by the nemesis with the first version of the re-fetch: a replica that had
    collected a deleted element took a peer's copy that still held it, and the element's
    versions came back (collection relies on a frontier never going back, PROTOCOL.md §11.3)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    author = store(a)
    for i in range(1, 5):
        author.write(plan_of([Draft(("content", "default", f"k{i}"), {"text": str(i)})]))
    lines = (a / "a.jsonl").read_bytes().splitlines(keepends=True)
    (b / "a.jsonl").write_bytes(lines[0] + lines[2])  # b removed op 2 (and lacks op 4)
    fetched = b / ".a.refetch.tmp"
    fetched.write_bytes(b"".join(lines))
    assert receive.replace(b, "a", fetched, fsync=False)
    assert (b / "a.jsonl").read_bytes() == lines[0] + lines[2] + lines[3]


def test_a_refetch_drops_a_stale_version_even_when_its_memory_was_deleted_elsewhere(
    tmp_path: Path,
) -> None:
    """Found by the soak: ``b`` holds version 1 of a memory from ``a``, and a tombstone ``c``
    wrote on the same memory (for a version of its own, concurrently). ``a`` overwrites version
    1 four times and compacts; ``b`` lags, sees the gap and re-fetches. The merge used to keep
    every op of a memory with a tombstone anywhere (the peer might have *collected* it), so
    version 1 stayed, named by nothing: a head again on ``b`` only, forever."""
    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    theirs = store(c)
    theirs.write(lambda f: [Draft(KEY, {"text": "c's version"})])
    theirs.write(lambda f: [Draft(KEY, None)])
    author = store(a)
    author.write(lambda f: [Draft(KEY, {"text": "a secret, version 1"})])
    receive.append(b, "a", page_after(a, "a", 0), fsync=False)
    receive.append(b, "c", page_after(c, "c", 0), fsync=False)
    for i in range(2, 6):
        author.write(plan_of([Draft(KEY, {"text": f"version {i}"})]))
    author.write(lambda f: [Draft(("content", "default", "tail"), {"text": "a's tail"})])
    compact_dir(a, ["a.jsonl"], history=0)
    with pytest.raises(receive.SkipsCompacted):
        receive.append(b, "a", page_after(a, "a", 1), fsync=False)
    fetched = b / ".a.refetch.tmp"
    fetched.write_bytes((a / "a.jsonl").read_bytes())
    assert receive.replace(b, "a", fetched, fsync=False)
    heads = store(b, "b").fold.elements[KEY].heads or {}
    assert ("a", 1) not in heads, f"b shows {sorted(heads)} as current versions"
    assert set(heads) == {("a", 5), ("c", 2)}
