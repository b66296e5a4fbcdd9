#!/usr/bin/env bash
# Installs noon with its test, benchmark and semantic-search dependencies into .venv (the
# benchmark smoke test draws the plots; the semantic tests load the model), installs the
# official MCP memory server (the reference of the drop-in tests) and ESLint (the page's
# scripts are linted by tests/web/test_js_lint.py), checks lint, format and types, and runs the
# test suite.
# This is the README's test command; .ci/run calls it too.
#   --fast   the fast lane: only in-process tests (no real processes, daemons or browsers),
#            with fewer hypothesis examples (about 30 s on 2 cores, after 8 s of checks); what
#            a developer runs after every change. The full run keeps every example.
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
lane=()
if [ "${1:-}" = "--fast" ]; then
    shift
    lane=(-m "not integration and not slow")
    export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-fast}" NOON_MODEL_EXAMPLES="${NOON_MODEL_EXAMPLES:-12}"
fi
. scripts/lib.sh
install_venv '[test,bench,semantic]'
if [ ${#lane[@]} -eq 0 ]; then
    bash scripts/install-official-server.sh
    bash scripts/install-eslint.sh
fi
.venv/bin/ruff check noon noond tests bench
.venv/bin/ruff format --check noon noond tests bench
.venv/bin/mypy
.venv/bin/python -m pytest -q "${lane[@]}" "$@"
