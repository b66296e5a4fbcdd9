#!/usr/bin/env bash
# Repairs what ruff can (import order, formatting, safe lint fixes), then says what is left:
# scripts/check.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check --fix --quiet noon noond tests bench || true
.venv/bin/ruff format --quiet noon noond tests bench
exec bash scripts/check.sh
