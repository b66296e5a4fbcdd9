"""Machines that are never online together meet through a bucket (PROTOCOL.md §14): real noond
processes, moto's standalone S3 server on loopback."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from bench.s3 import S3Server, moto_server, seaweed_server
from noon import certs
from noon.core.ops import Draft
from noon.daemon_link import bodies
from noond.relay import seal
from noond.relay.compact import MERGE_AT
from tests.harness.mesh import Node, Pki, wait_until
from tests.harness.operator import as_json, cli_env, doctor, problems, run
from tests.harness.stores import plan_of

pytestmark = pytest.mark.integration

FAST = {
    "NOOND_RELAY_FLUSH": "0.05",
    "NOOND_RELAY_INTERVAL": "0.2",
    "NOOND_RELAY_HEAD_EVERY": "0",
}


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    with moto_server(tmp_path) as server:
        yield server


@pytest.fixture(params=["moto", "seaweedfs"])
def any_s3(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[S3Server]:
    """Both servers: moto (fast) and SeaweedFS's real S3 gateway."""
    start = moto_server if request.param == "moto" else seaweed_server
    with start(tmp_path) as server:
        yield server


def relay_key(pki: Pki) -> Path:
    path = pki.root / "ca" / certs.RELAY_KEY_NAME
    if not path.exists():
        certs.create_relay_key(path)
    return path


def machine(name: str, base: Path, pki: Pki, relay: str, env: dict[str, str]) -> Node:
    node = Node(name, base, pki, env={"NOOND_RELAY": relay, **FAST, **env})
    (node.dir / "certs").mkdir(parents=True, exist_ok=True)
    shutil.copy2(relay_key(pki), node.dir / "certs" / certs.RELAY_KEY_NAME)
    return node


def texts(node: Node) -> dict[str, str]:
    return {key[2]: val["text"] for key, (_, val) in node.state().items() if key[0] == "content"}


def holds(node: Node, name: str) -> bool:
    return name in texts(node)


def relay_status(node: Node) -> bodies.RelayReport:
    return node.status().relays[0]


def uploaded(node: Node) -> bool:
    """Everything written here is in the relay, its head included."""
    report = relay_status(node)
    own = node.store().fold.frontier().get(node.name, 0)
    return (
        report.uploaded.get(node.name) == own
        and report.stats.backlog_ops == 0
        and (report.head.get(node.name) is not None)
    )


def test_two_machines_never_online_together_converge(
    tmp_path: Path, pki: Pki, any_s3: S3Server, spawn: list[Node]
) -> None:
    s3 = any_s3
    url = s3.url()
    a = machine("laptop", tmp_path, pki, url, s3.env())
    b = machine("desktop", tmp_path, pki, url, s3.env())
    spawn += [a, b]

    a.write(("a1", "written on the laptop"))
    a.start()
    wait_until(lambda: uploaded(a), what="the laptop's write in the bucket")
    a.stop()
    # A cut copy of the laptop's segment placed where its next one would be: refused.
    client = s3.client()
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=s3.bucket)["Contents"]]
    (segment,) = [k for k in keys if k.endswith(".seg")]
    body = client.get_object(Bucket=s3.bucket, Key=segment)["Body"].read()
    cut = segment.replace("0000000000000001-0000000000000001", "0000000000000002-0000000000000002")
    client.put_object(Bucket=s3.bucket, Key=cut, Body=body[: len(body) // 2])

    b.start()
    wait_until(lambda: texts(b).get("a1") == "written on the laptop", what="desktop reads")
    wait_until(lambda: relay_status(b).stats.refused == 1, what="the cut copy refused")
    assert len(shard_lines(b, "laptop")) == 1 and relay_status(b).stats.lag_ops == 1
    b.write(("b1", "written on the desktop"))
    wait_until(lambda: uploaded(b), what="the desktop's write in the bucket")
    b.stop()

    a.start()
    wait_until(lambda: texts(a).get("b1") == "written on the desktop", what="laptop reads")
    assert (
        texts(a)
        == texts(b)
        == {
            "a1": "written on the laptop",
            "b1": "written on the desktop",
        }
    )
    # The bucket holds no node id and no text: only sealed objects under opaque names.
    listing = client.list_objects_v2(Bucket=s3.bucket)["Contents"]
    for obj in listing:
        key = obj["Key"]
        assert "laptop" not in key and "desktop" not in key, key
        raw = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read()
        assert b"written on" not in raw and b"laptop" not in raw and b"desktop" not in raw
    status = relay_status(a).stats
    # The cut copy lies under the laptop's own name, past what its head says it uploaded: the
    # restarted laptop checks it against its shard and refuses it too (PROTOCOL.md §14.3).
    assert status.reachable is True and status.refused == 1
    assert metric(a, "noond_relay_rejected_total", reason="ciphertext") == 1


def shard_lines(node: Node, author: str) -> list[bytes]:
    path = node.dir / f"{author}.jsonl"
    return path.read_bytes().splitlines() if path.exists() else []


def metric(node: Node, name: str, **labels: str) -> float:
    labels = {**labels, "relay": node.env["NOOND_RELAY"]}
    return node.metric(name, ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())))


def test_bucket_down_writes_stay_local_and_the_backlog_drains(
    tmp_path: Path, pki: Pki, s3: S3Server, spawn: list[Node]
) -> None:
    url = s3.url("down")
    a = machine("laptop", tmp_path, pki, url, {**s3.env(), "NOOND_TIMEOUT": "1"})
    b = machine("desktop", tmp_path, pki, url, s3.env())
    spawn += [a, b]
    a.start()
    a.write(("m0", "before"))
    wait_until(lambda: uploaded(a), what="the first write in the bucket")
    s3.pause()
    try:
        for i in range(1, 41):
            a.write((f"m{i}", f"while the bucket is down {i}"))
        assert len(shard_lines(a, "laptop")) == 41  # every write kept locally
        wait_until(lambda: relay_status(a).stats.reachable is False, what="the relay seen down")
        assert relay_status(a).stats.error
        cli = cli_env(a.dir, "laptop", pki.node("laptop"), a.address)
        shown = run("status", env=cli).stdout
        assert f"relay {url}: UNREACHABLE" in shown, shown
        _, findings = doctor(cli)
        assert any(url in f["what"] for f in problems(findings, "relay")), findings
        puts = metric(a, "noond_relay_requests_total", op="put")
        assert puts >= 1
    finally:
        s3.resume()
    wait_until(lambda: uploaded(a), what="the backlog drained")
    assert relay_status(a).stats.reachable is True
    report = as_json(run("status", "--json", env=cli))["relays"][0]
    assert report["backlog_ops"] == 0 and report["summary"].startswith(f"relay {url}: reachable")
    _, findings = doctor(cli)
    assert not problems(findings, "relay"), findings
    # The whole backlog went out in a few objects, not one per write.
    assert metric(a, "noond_relay_requests_total", op="put") - puts <= 3
    a.stop()
    b.start()
    wait_until(lambda: len(texts(b)) == 41, what="the desktop takes the backlog")
    assert shard_lines(b, "laptop") == shard_lines(a, "laptop")


def test_kill_9_while_uploading_loses_and_duplicates_nothing(
    tmp_path: Path, pki: Pki, s3: S3Server, spawn: list[Node]
) -> None:
    url = s3.url("kill")
    a = machine("laptop", tmp_path, pki, url, s3.env())
    b = machine("desktop", tmp_path, pki, url, s3.env())
    spawn += [a, b]
    store = a.store()
    try:
        for i in range(40):  # a backlog of several MiB: its upload takes a while
            store.write(
                plan_of(
                    [
                        Draft(
                            ("content", "default", f"k{i}.{j}"), {"text": f"{i}.{j} " + "x" * 300}
                        )
                        for j in range(250)
                    ]
                )
            )
    finally:
        store.close()
    a.start()
    wait_until(
        lambda: metric(a, "noond_relay_requests_total", op="list") >= 1, what="uploads begin"
    )
    a.kill()
    a.start()
    wait_until(lambda: uploaded(a), timeout=120, what="the upload finished after the restart")
    a.stop()
    b.start()
    expect = shard_lines(a, "laptop")
    wait_until(lambda: len(shard_lines(b, "laptop")) >= len(expect), timeout=120, what="taken")
    assert shard_lines(b, "laptop") == expect  # every line once, in order, byte for byte
    assert relay_status(b).stats.refused == 0


def test_four_writers_killed_nothing_lost_or_duplicated(
    tmp_path: Path, pki: Pki, s3: S3Server, spawn: list[Node]
) -> None:
    url = s3.url("four")
    writers = [machine(f"w{i}", tmp_path, pki, url, s3.env()) for i in range(4)]
    reader = machine("reader", tmp_path, pki, url, s3.env())
    spawn += [*writers, reader]
    for w in writers:
        w.start(wait=False)
    for w in writers:
        w.wait_healthy()
    for round_ in range(3):
        for w in writers:
            for i in range(10):
                w.write((f"{w.name}.{round_}.{i}", f"{w.name} round {round_} write {i}"))
        if round_ == 1:  # two daemons die mid-stream; the writes on their disks wait for them
            writers[0].kill()
            writers[2].kill()
            writers[0].start()
            writers[2].start()
    for w in writers:
        wait_until(partial(uploaded, w), what=f"{w.name} uploaded")
        w.stop()
    reader.start()
    wait_until(lambda: len(texts(reader)) == 4 * 30, timeout=60, what="the reader has all")
    for w in writers:
        lines = shard_lines(reader, w.name)
        assert lines == shard_lines(w, w.name)
        seqs = [json.loads(line)["seq"] for line in lines]
        assert seqs == sorted(set(seqs))


def stopped(node: Node) -> bool:
    """The process is stopped (SIGSTOP): state ``T`` in /proc."""
    assert node.proc is not None
    if node.proc.poll() is not None:
        raise AssertionError(f"{node.name} exited:\n{node.log.read_text()[-3000:]}")
    stat = Path(f"/proc/{node.proc.pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] == "T"


def segments_of(s3: S3Server, prefix: str, node: str, pki: Pki) -> list[str]:
    """The keys of ``node``'s segments under ``prefix`` in the bucket (its tag: the test holds
    the mesh key)."""
    mesh = certs.read_relay_key(relay_key(pki))
    tag = seal.tag(seal.keys(mesh, mesh.current), node)
    listing = s3.client().list_objects_v2(Bucket=s3.bucket, Prefix=f"{prefix}/")
    return [o["Key"] for o in listing.get("Contents", []) if f"/{tag}/s/" in o["Key"]]


def test_kill_9_in_the_middle_of_a_compaction_loses_and_duplicates_nothing(
    tmp_path: Path, pki: Pki, s3: S3Server, spawn: list[Node]
) -> None:
    url = s3.url("compact")
    merging = {**s3.env(), "NOOND_RELAY_COMPACT_EVERY": "0.2"}
    a = machine("laptop", tmp_path, pki, url, merging)
    a.module = "tests.harness.noond_stop_in_compaction"
    b = machine("desktop", tmp_path, pki, url, s3.env())
    spawn += [a, b]
    a.start()
    for i in range(MERGE_AT + 1):  # writes far apart: one segment each
        a.write((f"m{i}", f"write {i}"))
        wait_until(lambda: uploaded(a), what=f"write {i} in the bucket")
    laptop = lambda: segments_of(s3, "compact", "laptop", pki)  # noqa: E731
    singles = set(laptop())
    assert len(singles) == MERGE_AT + 1
    # The desktop takes them and reports holding them: the laptop may merge them now. It stops
    # after writing the merged segment, before removing any, and is killed there.
    b.start()
    wait_until(lambda: stopped(a), timeout=120, what="the laptop stopped in its compaction")
    a.kill()
    (going,) = re.findall(r"stopping before removing (\S+)", a.log.read_text())
    # What a kill there leaves: every segment it replaces, and beside them the merged one, named
    # from seq 1 to what the desktop reported holding then (all, or the first MERGE_AT when its
    # report came between two of the segments it took).
    held = set(laptop())
    assert singles <= held, f"removed before the stop: {sorted(singles - held)}"
    (merged,) = held - singles
    root = f"compact/{seal.ROOT}"
    assert root + going in singles
    span = seal.parse_name(merged.removeprefix(root))
    assert span is not None and span.first == 1 and MERGE_AT <= span.last <= MERGE_AT + 1
    expect = shard_lines(a, "laptop")
    assert len(expect) == MERGE_AT + 1

    # Meanwhile the others go on: the desktop writes, a machine that joins now reads through
    # the overlap and takes every op once.
    b.write(("b1", "written while the laptop is dead"))
    c = machine("tablet", tmp_path, pki, url, s3.env())
    spawn.append(c)
    c.start()
    wait_until(lambda: len(texts(c)) == MERGE_AT + 2, timeout=60, what="the tablet reads all")
    assert shard_lines(c, "laptop") == expect
    assert texts(c) == texts(b)

    # The laptop restarts (without the stop): its next compaction removes what is left.
    a.module = "noond"
    a.start()
    wait_until(lambda: len(laptop()) == 1, timeout=120, what="the leftovers removed")
    a.write(("after", "written after the restart"))
    wait_until(lambda: uploaded(a), what="the new write in the bucket")
    assert len(laptop()) == 2  # the merged segment and the new one
    for node in (b, c):
        wait_until(partial(holds, node, "after"), timeout=60, what=f"{node.name} converges")
    wait_until(lambda: "b1" in texts(a), timeout=60, what="the laptop takes the desktop's write")
    for node in (b, c):
        lines = shard_lines(node, "laptop")
        assert lines == shard_lines(a, "laptop")  # byte for byte: nothing lost or doubled
        assert [json.loads(line)["seq"] for line in lines] == list(range(1, MERGE_AT + 3))
        assert relay_status(node).stats.refused == 0
    assert texts(a) == texts(b) == texts(c)
