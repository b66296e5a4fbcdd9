#!/usr/bin/env bash
# Sets up a checkout for development: noon with its test, benchmark and semantic-search
# dependencies in .venv (pinned in pyproject.toml), the official MCP memory server (the
# reference of the drop-in tests) and ESLint and Prettier (the page's scripts), pinned under .cache.
# Run it once, and again when pyproject.toml changes; scripts/test.sh runs it when .venv is
# missing or older than pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
install_venv '[test,bench,semantic]'
touch .venv/.installed
bash scripts/install-official-server.sh
bash scripts/install-js-tools.sh
