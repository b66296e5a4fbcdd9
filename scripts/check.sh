#!/usr/bin/env bash
# Checks without changing anything: ruff's lint, ruff's format and mypy (over noon, noond,
# tests and bench). scripts/fix.sh repairs what ruff can.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check noon noond tests bench
.venv/bin/ruff format --check noon noond tests bench
.venv/bin/mypy
