#!/usr/bin/env bash
# Checks without changing anything: ruff's lint, ruff's format and mypy (over noon, noond,
# tests and bench), and the page's scripts (noon/web/static) with ESLint and Prettier when
# scripts/install-js-tools.sh could install them. scripts/fix.sh repairs what ruff and Prettier can.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check noon noond tests bench
.venv/bin/ruff format --check noon noond tests bench
.venv/bin/mypy
js=.cache/js-tools/node_modules/.bin
if [ -x "$js/eslint" ] && [ -x "$js/prettier" ]; then
    "$js/eslint" --config eslint.config.mjs noon/web/static/js
    "$js/prettier" --check --log-level warn noon/web/static
else
    echo "check: ESLint and Prettier are not installed (bash scripts/install-js-tools.sh):" \
        "the page's scripts were not checked" >&2
fi
