"""``noon demo`` runs to completion on its own, shows what a person needs to follow it (the
memory text, whole; timings it changed; the next step), and leaves nothing behind."""

import os
import re
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
    text = out.stdout
    for scene in ("[1]", "[2]", "[3]", "[4]", "[5]", "[6]"):
        assert scene in text
    # each other machine reports when it saw a write; the writer does not count itself
    assert text.count("reads it after") == 2 and "laptop   reads it after" not in text
    assert text.count("no longer has it after") == 2
    assert text.count("shows both versions as a conflict after") == 3  # nobody wrote both
    # the memory text is shown, and the conflict note whole, not cut mid-sentence
    assert "| I am the agent of this person. They prefer short answers." in text
    assert "| They work on noon." in text
    assert "Merge them with update_memory (any edit settles the" in text
    assert "| I am the agent of this person. They prefer detailed answers." in text
    assert "They prefer short answers in English." in text.split("[5]")[1]
    # no log line from a daemon or an MCP server between the demo's lines
    log_line = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} [A-Z]+ ", re.M)
    assert not log_line.search(text) and not log_line.search(out.stderr), out.stderr
    # the shortened timings are said, and it ends with what to do next
    assert "NOOND_INTERVAL=1" in text and "(default 30:" in text
    assert text.rstrip().splitlines()[-4:][0].lstrip().startswith("pipx install .")
    assert "claude mcp add --scope user noon -- noon serve" in text
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
