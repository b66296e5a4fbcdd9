"""Hostile entries in NOON_DIR: a FIFO, a directory and symbolic links named like shards (one
pointing at a file outside the directory), and links inside ``.noon``. noond keeps serving,
stops on SIGTERM and never writes through a link; ``noon doctor`` names each entry; ``status``,
``peers`` and ``compact`` finish and open none of them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.harness.hostile_peer import ops_body
from tests.harness.mesh import ROOT, Node, Pki, noon_command, wait_until
from tests.harness.signed import signed

pytestmark = pytest.mark.integration

SECRET = b"root:x:0:0:do not print me\n"


def op(node: str, seq: int) -> bytes:
    return ops_body(node, seq, 1)


def signed_op(pki: Pki, node: str) -> bytes:
    """``node``'s first op as its author signs it (what an honest member pushes)."""
    return b"".join(line + b"\n" for line in signed(pki, node, op(node, 1).splitlines()))


def plant(directory: Path, outside: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "honest.jsonl").write_bytes(op("honest", 1))
    outside.write_bytes(SECRET)
    os.mkfifo(directory / "fifo.jsonl")
    (directory / "dir.jsonl").mkdir()
    (directory / "link.jsonl").symlink_to(outside)
    (directory / "victim.jsonl").symlink_to(outside)
    (directory / ".noon").mkdir(exist_ok=True)
    (directory / ".noon" / "collected.jsonl").symlink_to(outside)


def test_noond_serves_around_hostile_entries_and_never_writes_through_them(
    tmp_path: Path, pki: Pki
):
    node = Node("target", tmp_path, pki)
    outside = tmp_path / "outside.txt"
    plant(node.dir, outside)
    pki.know_signers(node.dir, "victim", "bob")
    node.start()
    try:
        listed = [s["node"] for s in node.get("/shards", as_node="alice")[1]["shards"]]
        assert listed == ["honest"]
        for name in ("fifo", "dir", "link"):
            status, _, body = node.request("GET", f"/shards/{name}/ops", as_node="alice")
            assert status == 200 and body == b"", name
        # A member pushing its shard where a link stands: refused, nothing written through it.
        status, _, raw = node.request(
            "POST",
            "/shards/victim/ops?after=0",
            signed_op(pki, "victim"),
            as_node="victim",
        )
        assert status == 503 and json.loads(raw)["code"] == "unavailable"
        assert outside.read_bytes() == SECRET
        assert (node.dir / "victim.jsonl").is_symlink()
        # Honest traffic goes on, and the daemon stops on SIGTERM (a FIFO never blocks it).
        status, _, _ = node.request(
            "POST", "/shards/bob/ops?after=0", signed_op(pki, "bob"), as_node="bob"
        )
        assert status == 200
        wait_until(lambda: node.metric("noond_rounds_total") >= 2, what="rounds to go on")
        assert SECRET.decode().strip() not in node.log.read_text()
        assert node.proc is not None
        node.proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        assert node.proc.wait(timeout=10) == 0
        assert time.monotonic() - t0 < 10
    finally:
        node.stop()


def test_the_commands_finish_name_the_entries_and_print_nothing_of_a_link(tmp_path: Path):
    directory = tmp_path / "noon"
    outside = tmp_path / "outside.txt"
    plant(directory, outside)
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "NOON_DIR": str(directory),
        "NOON_NODE_ID": "honest",
        "NOOND_LISTEN": "127.0.0.1:9",  # no daemon there
    }
    t0 = time.monotonic()
    doctor = noon_command("doctor", "--no-daemon", env=env)
    assert doctor.returncode == 1  # the entries are errors to fix
    for name, kind in (
        ("fifo.jsonl", "FIFO"),
        ("dir.jsonl", "directory"),
        ("link.jsonl", "symbolic link"),
        (".noon/collected.jsonl", "symbolic link"),
    ):
        assert any(
            str(directory / name) in line and kind in line for line in doctor.stdout.splitlines()
        ), (name, doctor.stdout)
    outputs = [doctor.stdout + doctor.stderr]
    for command, args in (("status", ["--json"]), ("peers", ["list"]), ("compact", [])):
        out = noon_command(command, *args, env=env)
        assert out.returncode == 0, (command, out.stdout + out.stderr)
        outputs.append(out.stdout + out.stderr)
    status = json.loads(outputs[1])
    assert [s["shard"] for s in status["shards"]] == ["honest"]
    assert time.monotonic() - t0 < 60
    assert not any("do not print me" in text for text in outputs)
    assert outside.read_bytes() == SECRET
    assert (directory / "link.jsonl").is_symlink() and (directory / "fifo.jsonl").exists()
    assert subprocess.run(["test", "-p", str(directory / "fifo.jsonl")]).returncode == 0
