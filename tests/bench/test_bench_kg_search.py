"""bench.kg_search at a tiny size, so it cannot rot: noon and the official server answer every
kind of query on the same graph, and the run stops where their answers differ in size. (No
figure is asserted.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.kg_latency import OFFICIAL
from tests.harness.mesh import ROOT, subprocess_env

pytestmark = pytest.mark.integration


def test_tiny_search_bench_times_every_kind_beside_the_official_server(tmp_path: Path) -> None:
    if not OFFICIAL.exists():
        pytest.skip("the official server is not installed (scripts/install-official-server.sh)")
    tiny = ["--ops", "2000", "--calls", "1", "--keep", str(tmp_path / "graph")]
    run = subprocess.run(
        [sys.executable, "-m", "bench.kg_search", *tiny],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["entities"] == 400
    kinds = {"name", "rare word", "nothing", "common word", "open_nodes"}
    assert set(out["ms"]["official"]) == set(out["ms"]["noon"]) == kinds
    assert out["hits_median"]["nothing"] == 0 and 1 <= out["hits_median"]["open_nodes"] <= 3
    assert (tmp_path / "graph" / "built").is_file()  # kept for the next run
