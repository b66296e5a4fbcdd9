"""bench.relay at a tiny size on moto, so it cannot rot: every part runs against a real S3
server and reports its figures beside the anchor's. (No figure is asserted.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.harness.mesh import ROOT, subprocess_env

pytestmark = pytest.mark.integration


def test_tiny_relay_bench_reports_every_part_beside_its_anchor() -> None:
    tiny = ["--ops", "20", "--anchor-ops", "5", "--catch-up", "600"]
    run = subprocess.run(
        [sys.executable, "-m", "bench.relay", "--server", "moto", *tiny],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout)
    assert out["local_writes"]["ops"] == 80
    assert out["relay_writes"]["ops"] == 80 and out["relay_through"]["ops"] == 80
    assert out["anchor_writes"]["puts_per_op"] == 1.0
    assert out["catch_up"]["ops"] == 600 and out["catch_up"]["anchor_one_get_seconds"] >= 0
