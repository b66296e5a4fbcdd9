"""Machines that are never online together meet through a bucket (PROTOCOL.md §14): real noond
processes, moto's standalone S3 server on loopback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.mesh import Node, Pki, wait_until
from noon import certs
from tests.harness.s3 import S3Server, moto_server

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


def relay_status(node: Node) -> dict[str, object]:
    status, body = node.get("/status")
    assert status == 200
    return body["relays"][0]


def uploaded(node: Node) -> bool:
    """Everything written here is in the relay, its head included."""
    report = relay_status(node)
    return report["last_upload"] is not None and node.metric(
        "noond_relay_ops_uploaded_total", f'relay="{node.env["NOOND_RELAY"]}"'
    ) >= node.store().fold.frontier().get(node.name, 0)


def test_two_machines_never_online_together_converge(
    tmp_path: Path, pki: Pki, s3: S3Server, spawn: list[Node]
) -> None:
    url = s3.url()
    a = machine("laptop", tmp_path, pki, url, s3.env())
    b = machine("desktop", tmp_path, pki, url, s3.env())
    spawn += [a, b]

    a.write(("a1", "written on the laptop"))
    a.start()
    wait_until(lambda: uploaded(a), what="the laptop's write in the bucket")
    a.stop()

    b.start()
    wait_until(lambda: texts(b).get("a1") == "written on the laptop", what="desktop reads")
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
    client = s3.client()
    listing = client.list_objects_v2(Bucket=s3.bucket)["Contents"]
    for obj in listing:
        key = obj["Key"]
        assert "laptop" not in key and "desktop" not in key, key
        raw = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read()
        assert b"written on" not in raw and b"laptop" not in raw and b"desktop" not in raw
    status = relay_status(a)
    assert status["reachable"] is True and status["refused"] == 0
    assert json.dumps(status)  # what `noon status` shows comes from here
