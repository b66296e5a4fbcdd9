"""Nemesis scenarios that need a setup of their own: a node restored from an old backup (its
seqs are reused: a fork, reported and never merged) and a full disk (no acknowledged write is
lost, the daemon keeps serving, everything converges once space is back)."""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest

from noon.core.ops import decode
from tests.harness.mesh import Pki, wait_until
from tests.harness.nemesis import Cluster, Config, seed_from_env

pytestmark = pytest.mark.integration


def shard_ops(path: Path) -> dict[tuple[str, int], bytes]:
    """The ops a shard file holds by id; a stub (what a replica's compaction or collection left
    of dropped ops, PROTOCOL.md §13.3) is no op."""
    lines = (raw for raw in path.read_bytes().splitlines() if raw.strip())
    return {op.id: raw for raw, op in ((raw, decode(raw)) for raw in lines) if not op.stub}


def test_a_node_restored_from_an_old_backup_is_a_reported_fork_never_merged(
    tmp_path: Path, pki: Pki
) -> None:
    seed = seed_from_env()
    print(f"NOON_SEED={seed}")
    cluster = Cluster(tmp_path, pki, seed, Config(nodes=3, compact_every=0))
    n0, n1, n2 = cluster.nodes
    try:
        cluster.start()
        wait_until(lambda: cluster.history.writes >= 30, what="writes before the backup")
        cluster.kill_writer(n0)
        backup = (n0.dir / "n0.jsonl").read_bytes()
        cluster.start_writer(n0)
        head = max(decode(r).seq for r in backup.splitlines())
        wait_until(
            lambda: all(
                (n.dir / "n0.jsonl").exists() and max(shard_ops(n.dir / "n0.jsonl"))[1] >= head + 20
                for n in (n1, n2)
            ),
            what="n0 to write past the backup and its peers to hold it",
        )
        # The machine dies and comes back from the backup; an agent writes before noond runs.
        cluster.kill_writer(n0)
        n0.kill()
        original: dict[tuple[str, int], bytes] = {}  # n0's history, as everyone holds it
        for node in (n0, n1, n2):
            for op_id, raw in shard_ops(node.dir / "n0.jsonl").items():
                assert original.setdefault(op_id, raw) == raw
        (n0.dir / "n0.jsonl").write_bytes(backup)
        for f in (n0.dir / ".noon").glob("readmodel.sqlite3*"):  # the backup's is older still
            f.unlink()
        cluster.start_writer(n0)
        wait_until(
            lambda: max(shard_ops(n0.dir / "n0.jsonl"))[1] > head + 5, what="writes that reuse seqs"
        )
        cluster.kill_writer(n0)
        forked = shard_ops(n0.dir / "n0.jsonl")
        assert any(original.get(i, raw) != raw for i, raw in forked.items())
        cluster.start_daemon(n0)
        wait_until(lambda: "n0" in cluster.reported_forks(), what="the fork to be reported")
        wait_until(
            lambda: (
                n0.metric("noond_forks_detected_total") >= 1
                and max(n.metric("noond_forks_detected_total") for n in (n1, n2)) >= 1
            ),
            what="both sides to count it",
        )
        assert "FORK DETECTED" in n0.log.read_text() + n1.log.read_text()
        rounds = n1.metric("noond_rounds_total")
        wait_until(lambda: n1.metric("noond_rounds_total") >= rounds + 3, what="more rounds")
        # Never merged: every replica holds one history of n0 or the other, not a mixture.
        for node in (n0, n1, n2):
            held = shard_ops(node.dir / "n0.jsonl")
            from_original = all(original.get(i) == raw for i, raw in held.items())
            from_fork = all(forked.get(i) == raw for i, raw in held.items())
            assert from_original or from_fork, f"{node.name} merged both histories of n0"
        # The checker agrees: the fork is there, but reported.
        report, _ = cluster.verify()
        assert not [a for a in report.anomalies if a.startswith("fork")]
        from tests.harness.checker import check, read_replica

        unreported = check(cluster.acknowledged(), [read_replica(n.name, n.dir) for n in (n0, n1)])
        assert any(a.startswith("fork") for a in unreported.anomalies)
    finally:
        cluster.close()


def mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if out.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for the full-disk test: {out.stderr.strip()}")


def fill(directory: Path) -> Path:
    """Fill the disk (it may be full already: the read model grows there too)."""
    filler = directory / "filler"
    try:
        with open(filler, "wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    return filler


def test_a_full_disk_loses_no_acknowledged_write(tmp_path: Path, pki: Pki) -> None:
    seed = seed_from_env()
    print(f"NOON_SEED={seed}")
    cluster = Cluster(tmp_path, pki, seed, Config(nodes=3, compact_every=0))
    victim = cluster.nodes[1]
    mount_tmpfs(victim.dir, "8m")
    try:
        cluster.start()
        wait_until(lambda: cluster.history.writes >= 30, what="writes before the disk fills")
        filler = fill(victim.dir)
        writer_log = tmp_path / f"{cluster.writers[victim.name].tag}.log"
        wait_until(
            lambda: writer_log.exists() and "Not written" in writer_log.read_text(),
            what="the writer on the full disk to be refused",
        )
        acked = cluster.history.writes
        wait_until(lambda: cluster.history.writes > acked + 20, what="others to keep writing")
        wait_until(
            lambda: "this node's disk is full" in victim.log.read_text(),
            what="the daemon to hit the full disk",
        )
        assert victim.get("/health")[0] == 200  # still serving
        wait_until(
            lambda: writer_log.read_text().count("Not written") >= 3,
            what="the writer to be refused again and again",
        )
        filler.unlink(missing_ok=True)
        took = cluster.heal()
        report, _ = cluster.verify()
        assert not report.anomalies, f"NOON_SEED={seed}: " + "\n".join(report.anomalies)
        print(f"converged {took:.2f}s after the disk was freed; {report.checked} ops checked")
    finally:
        cluster.close()
        subprocess.run(["umount", "-l", str(victim.dir)], capture_output=True, timeout=30)
