#!/usr/bin/env bash
# Installs noon with its test dependencies into .venv and runs the test suite.
# This is the README's test command; .ci/run calls it too.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -e '.[test]'
.venv/bin/ruff check noon noond tests bench
.venv/bin/python -m pytest -q "$@"
