"""The relay protocol on a synced folder, in process (PROTOCOL.md §14): what an honest author
uploads is taken; a truncated, foreign, forged, oversized or moved object is refused with
nothing stored, counted by reason; a sync tool's late, partial and conflicted copies neither
break nor skip anything."""

from __future__ import annotations

import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from noon import certs
from noon.config import Settings
from noon.core.ops import Draft
from noon.names import shard_file
from noon.store import signing
from noon.store.store import Store
from noond.metrics import Metrics
from noond.relay import compact, seal
from noond.relay.backend import Conflict
from noond.relay.link import RelaySettings
from noond.relay.opener import open_backend
from noond.relay.sync import Relay
from noond.shards import Holdings
from noond.signers import Signers
from tests.harness.mesh import Pki


class Machine:
    """One machine's NOON_DIR and its relay to a folder (its own copy of the synced folder)."""

    def __init__(self, name: str, base: Path, pki: Pki, folder: Path, mesh: certs.MeshKey) -> None:
        self.name = name
        self.dir = base / name
        self.dir.mkdir(parents=True, exist_ok=True)
        pki.install_signing(name, self.dir)
        self.settings = Settings(dir=self.dir, node_id=name, fsync=False)
        self.signers = Signers(self.dir, certs.ca_certificate(pki.node(name)[2]))
        self.signers.add(pki.signing(name)[1].read_bytes(), name)
        self.metrics = Metrics()
        self.revoked: set[str] = set()
        self.relay = Relay(
            open_backend(folder.as_uri()),
            mesh,
            node=name,
            holdings=Holdings(self.dir, name, lambda: self.revoked),
            signers=self.signers,
            sign=signing.load(self.settings),
            revoked=lambda: self.revoked,
            metrics=self.metrics,
            settings=RelaySettings(head_every=0.0, fsync=False),
        )

    def write(self, *items: tuple[str, str]) -> None:
        store = Store(self.settings)
        try:
            store.write(
                lambda fold: [Draft(("content", "default", i), {"text": t}) for i, t in items]
            )
        finally:
            store.close()

    def texts(self) -> dict[str, str]:
        store = Store(self.settings)
        try:
            return {
                k[2]: el.winner.val["text"]
                for k, el in store.fold.elements.items()
                if k[0] == "content" and el.winner.val
            }
        finally:
            store.close()

    def shard(self, node: str) -> Path:
        return self.dir / shard_file(node)

    def refused(self, reason: str) -> float:
        value = self.metrics.registry.get_sample_value(
            "noond_relay_rejected_total", {"relay": self.relay.url, "reason": reason}
        )
        return value or 0.0

    async def sync(self) -> int:
        """One flush and one read, then the head (what the daemon's loops do in turn)."""
        await self.relay.up.upload()
        taken = await self.relay.down.read()
        await self.relay.up.write_heads(force=True)
        return taken


def sync_tool(src: Path, dst: Path) -> None:
    """Copy every file of ``src`` missing or different in ``dst`` (what Syncthing does, late)."""
    for path in src.rglob("*"):
        if path.is_file():
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists() or target.read_bytes() != path.read_bytes():
                shutil.copy2(path, target)


@pytest.fixture
def mesh(pki: Pki) -> certs.MeshKey:
    path = pki.root / "ca" / certs.RELAY_KEY_NAME
    return certs.read_relay_key(path) if path.exists() else certs.create_relay_key(path)


async def test_late_partial_and_conflicted_copies(
    tmp_path: Path, pki: Pki, mesh: certs.MeshKey
) -> None:
    fa, fb = tmp_path / "sync-a", tmp_path / "sync-b"
    fa.mkdir()
    fb.mkdir()
    a = Machine("laptop", tmp_path, pki, fa, mesh)
    b = Machine("desktop", tmp_path, pki, fb, mesh)
    a.write(("m1", "first"))
    await a.sync()
    a.write(("m2", "second"))
    await a.sync()
    segments = sorted(p for p in (fa / seal.ROOT).rglob("*.seg"))
    assert len(segments) == 2
    # The sync tool delivers the second segment first (late copies), the first one cut short
    # (a partial download under its real name), and leaves its own debris beside them.
    sync_tool(fa, fb)
    first = fb / segments[0].relative_to(fa)
    first.write_bytes(segments[0].read_bytes()[:-7])
    (first.parent / (first.name + ".sync-conflict-20261203-120000-ABCDEFG")).write_bytes(b"junk")
    (first.parent / f".syncthing.{first.name}.tmp").write_bytes(b"partial")
    assert await b.sync() == 0
    assert not b.shard("laptop").exists()  # nothing stored from a cut segment, nothing skipped
    assert b.refused("ciphertext") == 2  # the cut segment, then the junk "conflicted copy" of it
    assert b.relay.stats.lag_ops == 2
    # The copy completes: it is read again (it changed) and everything arrives, once.
    shutil.copy2(segments[0], first)
    assert await b.sync() == 2
    assert b.texts() == {"m1": "first", "m2": "second"}
    assert b.refused("ciphertext") == 2 and b.relay.stats.lag_ops == 0
    # Back the other way, and the frontier report of each reaches the other.
    b.write(("m3", "third"))
    await b.sync()
    sync_tool(fb, fa)
    assert await a.sync() == 1
    assert a.texts() == b.texts()
    assert a.relay.down.reports["desktop"].frontier["laptop"] == 2
    assert b.relay.down.reports["laptop"].frontier == {"laptop": 2}


async def test_hostile_objects_are_refused_and_nothing_is_stored(
    tmp_path: Path, pki: Pki, mesh: certs.MeshKey
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    a = Machine("laptop", tmp_path, pki, folder, mesh)
    b = Machine("desktop", tmp_path, pki, folder, mesh)
    a.write(("m1", "honest"))
    await a.sync()
    assert await b.sync() == 1
    honest_report = b.relay.down.reports["laptop"]
    root = folder / seal.ROOT
    honest = next(root.rglob("*.seg"))
    epoch = mesh.current
    keys = seal.keys(mesh, epoch)
    evil_tag = seal.tag(keys, "mallory")
    laptop_tag = seal.tag(keys, "laptop")

    def place(name: str, body: bytes) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)

    # 1. The honest segment moved under another author's name: its AEAD binds the name.
    place(seal.segment_name(epoch, evil_tag, 1, 1), honest.read_bytes())
    # 2. Sealed with a key that is not the mesh's.
    other = seal.keys(certs.MeshKey({epoch: b"\x01" * 32}), epoch)
    name = seal.segment_name(epoch, seal.tag(other, "mallory"), 1, 1)
    place(name, seal.seal(other, name, seal.segment_plain("mallory", 1, 1, b"{}\n")))
    # 3. A mesh-key holder forges laptop's next op: sealed right, not signed by laptop.
    forged = (
        b'{"v":1,"node":"laptop","seq":2,"hlc":281474976710656,'
        b'"el":["content","default","m1"],"val":{"text":"forged"}}\n'
    )
    name = seal.segment_name(epoch, laptop_tag, 2, 2)
    place(name, seal.seal(keys, name, seal.segment_plain("laptop", 2, 2, forged)))
    # 4. A segment that says it is laptop's under mallory's name (sealed with the mesh key).
    name = seal.segment_name(epoch, evil_tag, 5, 5)
    place(name, seal.seal(keys, name, seal.segment_plain("laptop", 5, 5, forged)))
    # 5. Larger than a segment may be.
    with open(root / seal.segment_name(epoch, evil_tag, 9, 9), "wb") as f:
        f.truncate(seal.MAX_SEGMENT + 1)
    # 6. laptop's head replaced by one whose signature is not laptop's.
    name = seal.head_name(epoch, laptop_tag)
    doc = {"node": "laptop", "seq": 9, "at": 1, "certs": [], "frontier": {"laptop": 9}, "sig": "A"}
    place(name, seal.seal(keys, name, seal.canonical(doc)))

    assert await b.sync() == 0  # nothing of any of them
    assert b.texts() == {"m1": "honest"}
    lines = b.shard("laptop").read_bytes().splitlines()
    assert len(lines) == 1 and b"forged" not in lines[0]
    assert not b.shard("mallory").exists()
    assert b.refused("ciphertext") == 2  # moved, and sealed with another key
    assert b.refused("unproven") == 2  # the forged op, the forged head
    assert b.refused("foreign") == 1
    assert b.refused("too_large") == 1
    assert b.relay.down.reports["laptop"] == honest_report  # a forged report is no report
    # Refused objects are not fetched again; the honest author goes on being served.
    before = b.relay.stats.requests
    a.write(("m2", "still honest"))
    await a.sync()  # its head changed under it: written again next time
    await a.sync()
    await b.sync()
    assert b.texts() == {"m1": "honest", "m2": "still honest"}
    assert b.relay.down.reports["laptop"].frontier == {"laptop": 2}
    assert b.refused("ciphertext") == 2 and b.refused("too_large") == 1
    assert b.relay.stats.requests - before <= 6


def requests(m: Machine, op: str) -> float:
    value = m.metrics.registry.get_sample_value(
        "noond_relay_requests_total", {"relay": m.relay.url, "op": op}
    )
    return value or 0.0


async def test_a_segment_planted_under_an_authors_name_does_not_stall_its_uploads(
    tmp_path: Path, pki: Pki, mesh: certs.MeshKey
) -> None:
    """PROTOCOL.md §14.6: a holder of the mesh key names segments under laptop's tag over seqs
    laptop holds and has not uploaded yet. Restarted, laptop takes none of them as its own: it
    uploads those seqs (over the one of the same name), and readers take them past the other."""
    folder = tmp_path / "shared"
    folder.mkdir()
    a = Machine("laptop", tmp_path, pki, folder, mesh)
    b = Machine("desktop", tmp_path, pki, folder, mesh)
    a.write(("m1", "uploaded"))
    await a.sync()  # segment 1-1, and laptop's signed head: seq 1
    a.write(("m2", "written offline"))
    a.write(("m3", "written offline too"))
    epoch, keys = mesh.current, seal.keys(mesh, mesh.current)
    tag = seal.tag(keys, "laptop")
    forged = (
        b'{"v":1,"node":"laptop","seq":2,"hlc":281474976710656,'
        b'"el":["content","default","m2"],"val":{"text":"forged"}}\n'
    )
    for first, last in ((2, 3), (2, 9)):  # the very name laptop would write, and one reaching past
        name = seal.segment_name(epoch, tag, first, last)
        path = folder / seal.ROOT / name
        path.write_bytes(seal.seal(keys, name, seal.segment_plain("laptop", first, last, forged)))

    restarted = Machine("laptop", tmp_path, pki, folder, mesh)  # a new process: no cursor held
    await restarted.sync()
    assert restarted.refused("not_own") == 2
    assert restarted.relay.up.uploaded == {"laptop": 3, "laptop-import": 0}
    await b.sync()
    assert b.texts() == {"m1": "uploaded", "m2": "written offline", "m3": "written offline too"}
    assert b.shard("laptop").read_bytes() == a.shard("laptop").read_bytes()
    assert b.refused("unproven") == 1  # 2-9 passed over for laptop's own 2-3

    # The next restart trusts what its signed head says was uploaded: of the segments it lists
    # it fetches only the one reaching past that (2-9, refused again), never its own below it.
    again = Machine("laptop", tmp_path, pki, folder, mesh)
    await again.relay.up.upload()
    assert again.relay.up.uploaded == {"laptop": 3, "laptop-import": 0}
    assert requests(again, "get") == 2 and again.refused("not_own") == 1


async def test_a_revoked_machine_cannot_read_the_new_epoch_and_its_later_objects_are_refused(
    tmp_path: Path, pki: Pki
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    key_file = tmp_path / "ca-relay.key"
    old = certs.create_relay_key(key_file)
    a, b, c = (Machine(n, tmp_path, pki, folder, old) for n in ("laptop", "desktop", "stolen"))
    c.write(("c1", "before the theft"))
    a.write(("a1", "before"))
    for m in (c, a, b, a):
        await m.sync()
    assert b.texts() == a.texts() == {"c1": "before the theft", "a1": "before"}

    # The operator revokes the stolen machine and rotates: the others get epoch 2, it does not.
    new = certs.create_relay_key(key_file, rotate=True)
    assert new.current == 2 and set(new.epochs) == {1, 2}
    a, b = (Machine(n, tmp_path, pki, folder, new) for n in ("laptop", "desktop"))
    a.revoked.add("stolen")
    b.revoked.add("stolen")
    a.write(("a2", "after the rotation"))
    await a.sync()
    c.write(("c2", "written by the thief"))
    await c.sync()
    await b.sync()
    # The thief lists epoch 2 but holds no key for it: it gets nothing of it.
    assert "a2" not in c.texts()
    e2 = [p for p in (folder / seal.ROOT / "e2").rglob("*.seg")]
    assert e2, "a writes in the new epoch"
    for path in e2:
        name = path.relative_to(folder / seal.ROOT).as_posix()
        with pytest.raises(seal.Refused):
            seal.unseal(seal.keys(old, 1), name, path.read_bytes(), seal.MAX_SEGMENT)
    # Its later objects are refused, never fetched, and nothing of them stored.
    assert b.texts() == {"c1": "before the theft", "a1": "before", "a2": "after the rotation"}
    assert b.refused("revoked") >= 1
    assert b"thief" not in b.shard("stolen").read_bytes()
    # A machine set up after the rotation reads both epochs (everything but the thief's).
    d = Machine("tablet", tmp_path, pki, folder, new)
    d.revoked.add("stolen")
    await d.sync()
    assert d.texts() == {"a1": "before", "a2": "after the rotation"}


async def test_compaction_merges_what_every_reader_holds(
    tmp_path: Path, pki: Pki, mesh: certs.MeshKey
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    a = Machine("laptop", tmp_path, pki, folder, mesh)
    b = Machine("desktop", tmp_path, pki, folder, mesh)
    for i in range(40):
        a.write((f"m{i}", f"write {i}"))
        await a.relay.up.upload()  # one segment per write: writes far apart
    await a.relay.up.write_heads(force=True)
    assert await b.sync() == 40
    await a.sync()  # a reads b's head: b holds all 40
    assert compact.floor(a.relay, "laptop") == 40
    segments = lambda: sorted((folder / seal.ROOT).rglob("*.seg"))  # noqa: E731
    assert len(segments()) == 40
    assert await compact.compact(a.relay, merge_at=8) == 40
    assert len(segments()) == 1
    # A machine that joins now takes every op once, from the one merged segment.
    c = Machine("tablet", tmp_path, pki, folder, mesh)
    assert await c.sync() == 40
    assert c.shard("laptop").read_bytes() == a.shard("laptop").read_bytes()
    # A reader that reported fetches nothing again; writes after it go on as segments.
    down = b.relay.stats.bytes_down
    a.write(("m40", "after the compaction"))
    await a.relay.up.upload()
    assert await b.sync() == 1
    assert b.relay.stats.bytes_down - down < 2000
    d = Machine("phone", tmp_path, pki, folder, mesh)
    # Two LISTs, three heads, two segments and its own head: not one GET per old segment.
    assert await d.sync() == 41 and d.relay.stats.requests <= 8
    assert d.texts() == a.texts()


async def test_compaction_merges_none_of_a_segment_planted_under_the_authors_name(
    tmp_path: Path, pki: Pki, mesh: certs.MeshKey
) -> None:
    """A holder of the mesh key names a segment of forged lines under laptop's tag over seqs
    every reader holds. laptop's compaction proves each segment's lines by its own signature
    before merging them: the merged segment is its own lines, so a machine joining later still
    reads its whole history from the relay (before, the forged lines went into the merge, the
    real segments were removed, and every new reader refused the merged one)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    a = Machine("laptop", tmp_path, pki, folder, mesh)
    b = Machine("desktop", tmp_path, pki, folder, mesh)
    for i in range(8):
        a.write((f"m{i}", f"write {i}"))
        await a.relay.up.upload()  # one segment per write
    await a.relay.up.write_heads(force=True)
    assert await b.sync() == 8
    await a.sync()  # b reports holding all 8
    epoch, keys = mesh.current, seal.keys(mesh, mesh.current)
    forged = b"".join(
        b'{"v":1,"node":"laptop","seq":%d,"hlc":281474976710656,' % seq
        + b'"el":["content","default","m1"],"val":{"text":"forged"}}\n'
        for seq in (1, 2, 3)
    )
    name = seal.segment_name(epoch, seal.tag(keys, "laptop"), 1, 3)  # first among 1..3
    planted = folder / seal.ROOT / name
    planted.write_bytes(seal.seal(keys, name, seal.segment_plain("laptop", 1, 3, forged)))

    assert await compact.compact(a.relay, merge_at=4) == 8
    assert a.refused("unproven") == 1
    assert len(sorted((folder / seal.ROOT).rglob("*.seg"))) == 2  # merged 1..8, and the planted
    c = Machine("tablet", tmp_path, pki, folder, mesh)
    assert await c.sync() == 8
    assert c.shard("laptop").read_bytes() == a.shard("laptop").read_bytes()
    assert b"forged" not in c.shard("laptop").read_bytes()


async def test_a_conflicted_copy_is_taken_only_for_what_its_original_does_not_hold(
    tmp_path: Path, pki: Pki, mesh: certs.MeshKey
) -> None:
    fa, fb = tmp_path / "sync-a", tmp_path / "sync-b"
    fa.mkdir()
    fb.mkdir()
    a = Machine("laptop", tmp_path, pki, fa, mesh)
    b = Machine("desktop", tmp_path, pki, fb, mesh)
    for i in (1, 2, 3):
        a.write((f"m{i}", f"write {i}"))
        await a.sync()
    sync_tool(fa, fb)
    s1, s2, s3 = sorted((fb / seal.ROOT).rglob("*.seg"))
    # 1: a cut version won the name; the whole one is Syncthing's conflicted copy beside it.
    whole = s1.read_bytes()
    s1.with_name(s1.stem + ".sync-conflict-20261203-120000-ABCDEFG.seg").write_bytes(whole)
    s1.write_bytes(whole[:-9])
    # 2: a junk conflicted copy beside an intact original: never fetched.
    s2.with_name(s2.stem + " (desktop's conflicted copy 2026-12-03).seg").write_bytes(b"junk")
    # 3: only the conflicted copy is left.
    s3.rename(s3.with_name(s3.stem + " (conflicted copy).seg"))
    # 4: a conflicted copy of a name that never held it (segment 2's bytes): sealed under
    # another name, refused.
    s4 = s3.with_name(f"{4:016x}-{4:016x}.sync-conflict-20261203-120001-ABCDEFG.seg")
    s4.write_bytes(s2.read_bytes())
    assert await b.sync() == 3
    assert b.shard("laptop").read_bytes() == a.shard("laptop").read_bytes()
    assert b.texts() == {"m1": "write 1", "m2": "write 2", "m3": "write 3"}
    assert b.refused("ciphertext") == 2  # the cut original, the moved copy; not the junk
    assert b"junk" not in b.shard("laptop").read_bytes()
    # A conflicted copy of a head stands in for a missing head: its author is still known.
    head = next((fb / seal.ROOT).rglob("head"))
    head.rename(head.with_name("head.sync-conflict-20261203-120002-ABCDEFG"))
    c = Machine("tablet", tmp_path, pki, fb, mesh)
    assert await c.sync() == 3 and c.relay.down.reports["laptop"].frontier == {"laptop": 3}


def test_a_heads_conditional_write_has_exactly_one_winner(tmp_path: Path) -> None:
    folder = open_backend(tmp_path.as_uri())
    name = seal.head_name(1, "0" * 32)
    path = tmp_path / seal.ROOT / name
    version = folder.put_head(name, b"first", None)
    with pytest.raises(Conflict):  # create-if-absent: the name exists
        folder.put_head(name, b"second", None)
    assert path.read_bytes() == b"first"
    writers = 8

    def attempt(round_: int, i: int, expect: str, barrier: threading.Barrier) -> str | None:
        barrier.wait(timeout=30)
        try:
            return folder.put_head(name, f"{round_}.{i}".encode(), expect)
        except Conflict:
            return None

    # Eight writers race from the same version, twenty times: one wins each time, and its
    # body and version are what the folder holds.
    with ThreadPoolExecutor(writers) as pool:
        for round_ in range(20):
            barrier = threading.Barrier(writers)
            same = [version] * writers, [barrier] * writers
            got = list(pool.map(attempt, [round_] * writers, range(writers), *same))
            winners = [(i, v) for i, v in enumerate(got) if v is not None]
            assert len(winners) == 1, winners
            ((i, version),) = winners
            assert path.read_bytes() == f"{round_}.{i}".encode()
            (entry,) = [e for e in folder.list() if e.name == name]
            assert entry.version == version
    assert not [p for p in path.parent.iterdir() if p.name != "head"]  # no temporary left
