#!/usr/bin/env bash
# Installs noon with its test and benchmark dependencies into .venv (the benchmark smoke test
# draws the plots), installs the official MCP memory server
# (the reference of the drop-in tests) and runs ruff and the test suite.
# This is the README's test command; .ci/run calls it too. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -e '.[test,bench]'
bash scripts/install-official-server.sh
.venv/bin/ruff check noon noond tests bench
.venv/bin/python -m pytest -q "$@"
