"""``noon demo`` runs to completion on its own and leaves nothing behind."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


def test_demo_runs_to_completion_and_leaves_nothing_behind(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOON")}
    env["TMPDIR"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "noon", "demo"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for scene in ("[1]", "[2]", "[3]", "[4]", "[5]", "[6]"):
        assert scene in out.stdout
    assert out.stdout.count("shows both versions as a conflict after") == 3
    assert out.stdout.count("no longer has it after") == 3
    assert list(tmp_path.iterdir()) == []  # the demo's directory is gone
    leftovers = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(tmp_path).encode() in (proc / "environ").read_bytes():
                    leftovers.append(proc.name)
            except OSError:
                pass
    assert leftovers == []  # no noond or noon serve still running
