"""Other accounts on the machine read nothing of the memory (PROTOCOL.md §10.5): every writer
(``noon serve``, ``noon import``, ``noon compact``, ``noon certs``, ``noond``, ``noon export``)
creates 0700 directories and 0600 files, and ``nobody``, a real second user, can neither read
a PIN from them nor plant a file; a directory with the loose modes of earlier versions is named
entry by entry by ``noon doctor``, whose fix, run exactly as printed, closes it.

Tests run as root, which no mode stops: every attempt of the other account runs as ``nobody``
through ``setpriv``."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.pipe import PipeClient
from noon.daemon_link import address_path
from tests.harness.mesh import ROOT, free_port, subprocess_env, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("setpriv") is None,
        reason="needs root and setpriv to act as the account nobody",
    ),
]

PIN = "the door PIN is 4711-9382"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


@pytest.fixture
def base() -> Iterator[Path]:
    """A directory every account may enter (pytest's own are root's alone, which would hide
    the modes under test): what a home directory of 0755 is."""
    d = Path(tempfile.mkdtemp(prefix="noon-private-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def noon(d: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = subprocess_env(NOON_DIR=str(d), NOON_NODE_ID="m1", NOON_FSYNC="false")
    return subprocess.run(
        [sys.executable, "-m", "noon", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NOBODY, *argv], capture_output=True, text=True, timeout=30)


def entries(d: Path) -> list[Path]:
    return [d, *sorted(p for p in d.rglob("*") if not p.is_symlink())]


def write_everything(base: Path, d: Path) -> Path:
    """Run every writer on ``d``; return the export it wrote beside it."""
    client = PipeClient(
        [sys.executable, "-m", "noon", "serve"],
        subprocess_env(NOON_DIR=str(d), NOON_NODE_ID="m1", NOON_FSYNC="false"),
        cwd=str(ROOT),
        timeout=60,
    )
    try:
        created = client.call(
            "create_memory",
            {
                "parent_uri": "core://",
                "content": PIN,
                "priority": 1,
                "title": "door",
                "disclosure": "when someone asks for the door",
            },
        )
        assert not created.get("isError"), created
    finally:
        client.close()
    official = base / "memory.jsonl"
    official.write_text(
        json.dumps({"type": "entity", "name": "Door", "entityType": "t", "observations": [PIN]})
    )
    assert noon(d, "import", str(official)).returncode == 0
    assert noon(d, "compact").returncode == 0
    assert noon(d, "certs", "init", "--ca-dir", str(base / "ca")).returncode == 0
    assert noon(d, "certs", "issue", "m1", "--ca-dir", str(base / "ca")).returncode == 0
    env = subprocess_env(
        NOON_DIR=str(d),
        NOON_NODE_ID="m1",
        NOOND_LISTEN=f"127.0.0.1:{free_port('127.0.0.1')}",
        NOOND_DISCOVER_INTERVAL="0",
    )
    daemon = subprocess.Popen(
        [sys.executable, "-m", "noond"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: address_path(d).exists(), what="noond to publish its address")
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=20)
    export = base / "export.jsonl"
    assert noon(d, "export", "-o", str(export)).returncode == 0
    return export


def test_every_writer_keeps_the_memory_from_other_accounts(base: Path) -> None:
    d = base / "noon"
    export = write_everything(base, d)
    made = entries(d)
    names = {str(p.relative_to(d)) for p in made}
    assert {".", "m1.jsonl", "m1-import.jsonl", ".noon/readmodel.sqlite3"} <= names
    assert {"certs/m1.key", "certs/m1.crt", ".noon/noond.json"} <= names
    for p in [*made, export]:
        mode = stat.S_IMODE(p.lstat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))
    # The other account: no listing, no reading, no planting.
    assert as_nobody("ls", str(d)).returncode != 0
    for p in [d / "m1.jsonl", d / ".noon" / "readmodel.sqlite3", export]:
        read = as_nobody("cat", str(p))
        assert read.returncode != 0 and "Permission denied" in read.stderr, p
        assert PIN not in read.stdout
    assert as_nobody("grep", "-r", "4711", str(d)).stdout == ""
    assert as_nobody("touch", str(d / "planted.jsonl")).returncode != 0
    assert not (d / "planted.jsonl").exists()
    doctor = noon(d, "doctor", "--no-daemon")
    assert "and its files are readable by their owner only" in doctor.stdout


def test_doctor_names_loose_entries_and_its_fix_works_as_written(base: Path) -> None:
    d = base / "noon"
    write_everything(base, d)
    for p in entries(d):  # what noon wrote before this rule: 0755 directories, 0644 files
        p.chmod(0o755 if p.is_dir() else 0o644)
    read = as_nobody("cat", str(d / "m1.jsonl"))
    assert PIN in read.stdout  # the hole: the other account reads the PIN
    started = time.monotonic()
    doctor = noon(d, "doctor", "--no-daemon")
    assert time.monotonic() - started < 60
    loose = {str(p.relative_to(d)) for p in entries(d)}
    found = re.search(
        r"(\d+) entries of .* are open to other accounts on this machine", doctor.stdout
    )
    assert found and int(found.group(1)) == len(loose), doctor.stdout
    for name in loose:
        mode = "0755" if (d / name).is_dir() else "0644"
        assert f" {name} ({mode})" in doctor.stdout or f": {name} ({mode})" in doctor.stdout, name
    fix = re.search(
        r"fix: take the group's and other accounts' permissions away: (.+)", doctor.stdout
    )
    assert fix and fix.group(1) == f"chmod -R go= {d}"
    assert subprocess.run(fix.group(1), shell=True, timeout=30).returncode == 0
    after = noon(d, "doctor", "--no-daemon")
    assert "and its files are readable by their owner only" in after.stdout
    assert as_nobody("cat", str(d / "m1.jsonl")).returncode != 0
    # The owner is served as before.
    client = PipeClient(
        [sys.executable, "-m", "noon", "serve"],
        subprocess_env(NOON_DIR=str(d), NOON_NODE_ID="m1"),
        cwd=str(ROOT),
        timeout=60,
    )
    try:
        shown = client.call("read_memory", {"uri": "core://door"})
        assert PIN in shown["content"][0]["text"]
    finally:
        client.close()
