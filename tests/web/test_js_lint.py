"""The page's scripts pass ESLint and are as Prettier formats them (both pinned by
scripts/install-js-tools.sh; the rules in eslint.config.mjs and .prettierrc.json): undefined
names, unused variables, unreachable code, loose equality and a hand-formatted line fail the
suite. Skipped, saying why, where npm could not install them."""

from __future__ import annotations

import subprocess

import pytest

from tests.harness.mesh import ROOT

TOOLS = ROOT / ".cache" / "js-tools" / "node_modules" / ".bin"
ESLINT, PRETTIER = TOOLS / "eslint", TOOLS / "prettier"
SCRIPTS = "noon/web/static/js"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not (ESLINT.exists() and PRETTIER.exists()),
        reason="ESLint and Prettier are not installed: bash scripts/install-js-tools.sh",
    ),
]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=300
    )


def eslint(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run(str(ESLINT), "--config", "eslint.config.mjs", *args, stdin=stdin)


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


def test_the_page_is_formatted_as_prettier_writes_it() -> None:
    done = run(str(PRETTIER), "--check", "noon/web/static")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_format_check_finds_a_hand_formatted_line() -> None:
    """A line over the page's width of 100 and a missing semicolon are refused under the same
    configuration (``--stdin-filepath`` inside the page's folder picks it up)."""
    good = "export const x = 1;\n"
    bad = 'export const long = ["' + "a" * 60 + '", "' + "b" * 60 + '"]\n'
    for text, code in ((good, 0), (bad, 1)):
        done = run(str(PRETTIER), "--check", "--stdin-filepath", f"{SCRIPTS}/s.js", stdin=text)
        assert done.returncode == code, (text, done.stdout + done.stderr)
