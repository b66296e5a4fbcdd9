"""The page's scripts pass ESLint (pinned by scripts/install-eslint.sh, configured by
eslint.config.mjs): undefined names, unused variables, unreachable code, loose equality and the
like fail the suite. Skipped, saying why, where npm could not install ESLint."""

from __future__ import annotations

import subprocess

import pytest

from tests.harness.mesh import ROOT

ESLINT = ROOT / ".cache" / "eslint" / "node_modules" / ".bin" / "eslint"
SCRIPTS = "noon/web/static/js"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not ESLINT.exists(), reason="ESLint is not installed: bash scripts/install-eslint.sh"
    ),
]


def eslint(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ESLINT), "--config", "eslint.config.mjs", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_pages_scripts_pass_eslint() -> None:
    done = eslint(SCRIPTS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_lint_finds_what_it_is_for() -> None:
    """The same configuration refuses a script with an undefined name, an unused variable and
    a loose comparison (so a clean run above means something)."""
    bad = 'import { h } from "./dom.js";\nconst unused = 1;\nif (x == 2) { h(); }\n'
    done = eslint("--stdin", "--stdin-filename", f"{SCRIPTS}/sample.js", stdin=bad)
    assert done.returncode == 1, done.stdout + done.stderr
    for rule in ("no-undef", "no-unused-vars", "eqeqeq"):
        assert rule in done.stdout, done.stdout
