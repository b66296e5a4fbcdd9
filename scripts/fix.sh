#!/usr/bin/env bash
# Repairs what ruff can (import order, formatting, safe lint fixes) and lets Prettier format the
# page (noon/web/static) when installed, then says what is left: scripts/check.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check --fix --quiet noon noond tests bench || true
.venv/bin/ruff format --quiet noon noond tests bench
if [ -x .cache/js-tools/node_modules/.bin/prettier ]; then
    .cache/js-tools/node_modules/.bin/prettier --write --log-level warn noon/web/static
fi
exec bash scripts/check.sh
