"""The benchmark harness at its tiny size, so it cannot rot: every section runs against real
processes, the results file holds every figure with its anchor, and the performance section
is generated from it. (Benchmarks themselves are not tests: no figure is asserted here.)"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.mesh import ROOT, subprocess_env

pytestmark = pytest.mark.integration


def test_tiny_run_writes_results_and_the_performance_section(tmp_path: Path) -> None:
    out = tmp_path / "results" / "latest.json"
    plots = importlib.util.find_spec("matplotlib") is not None
    cmd = [sys.executable, "-m", "bench.run", "--tiny", "--out", str(out)]
    run = subprocess.run(
        [*cmd, *([] if plots else ["--no-plots"])],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "write → visible on all 3 nodes" in run.stdout

    results = json.loads(out.read_text())
    assert results["failed"] == {}
    assert set(results["machine"]) >= {"cpu", "cores", "ram_gib", "python", "kernel"}
    names = [r["name"] for r in results["rows"]]
    for expected in (
        "append (one-op batch), fsync on",
        "noon import of an official memory.jsonl, 5k ops",
        "catch-up fold of 5k knowledge-graph ops",
        "first answer at 5k ops, on the machine's read model",
        "first answer at 5k ops, the machine's first session (folds every shard)",
        "noon serve RSS at 5k ops, after its first answer",
        "read after 1 remote op at 5k ops: Store.refresh, p50 / p99",
        "read after 1 remote op at 5k ops: open_nodes in a session, p50 / p99",
        "read_graph at 50 entities, p50 / p99",
        "search_memory, two words as common as the text's at 200 memories, p50 / p99",
        "search_memory, two rare words at 200 memories, p50 / p99",
        "create_memory under a parent of 1k, no title (auto-numbered), p50 / p99",
        "40 ops written through MCP on 1 of 3 nodes",
        "fresh node pulls 500 ops (incl. its startup)",
        "wire bytes of an idle round, 100 shards held",
        "a memory over HTTP, 200 memories, p50 / p99",
        "page server RSS, 200 memories",
    ):
        assert expected in names, expected
    assert all(r["value"] > 0 for r in results["rows"])
    official = [r for r in results["rows"] if r["anchor"] == "official server, same graph"]
    assert official and all(r["anchor_value"] > 0 for r in official)
    # every target of issue 17 is judged (the knowledge-graph latencies against the earlier run
    # at 1k and 10k entities only, which a tiny run does not measure)
    judged = [t["figure"] for t in results["targets"]]
    for start in ("new session", "RSS", "read after", "search_memory", "noon import", "fresh"):
        assert any(f.startswith(start) for f in judged), start
    assert any(f.startswith("create_memory") for f in judged)
    if plots:
        assert {p.name for p in out.parent.glob("*.png")} == {
            "kg_latency.png",
            "propagation.png",
            "first_answer.png",
        }

    doc = tmp_path / "docs" / "performance.md"
    subprocess.run(
        [sys.executable, "-m", "bench.readme_section", "--results", str(out), "--out", str(doc)],
        cwd=ROOT,
        env=subprocess_env(),
        check=True,
        timeout=60,
    )
    text = doc.read_text()
    assert text.startswith("## Performance")
    assert "| read_graph at 50 entities, p50 / p99 |" in text
    assert "### Issue 17's targets for the shared read model" in text
    assert "Against server-noonien's published figures" in text
