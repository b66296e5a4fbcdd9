#!/usr/bin/env bash
# Installs ESLint, pinned, into .cache/eslint: tests/web/test_js_lint.py checks the page's scripts
# (noon/web/static/js) with it, under eslint.config.mjs (rules and browser globals written out:
# no other package). Skipped (with a message) when npm is missing; the test then skips too.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=9.9.1
TARGET=.cache/eslint
if ! command -v npm >/dev/null 2>&1; then
    echo "install-eslint: npm not found, the JavaScript lint will be skipped" >&2
    exit 0
fi
if [ -f "$TARGET/node_modules/eslint/package.json" ] &&
    grep -q "\"version\": \"$VERSION\"" "$TARGET/node_modules/eslint/package.json"; then
    exit 0
fi
mkdir -p "$TARGET"
npm install --prefix "$TARGET" --no-audit --no-fund --loglevel=error "eslint@$VERSION" ||
    echo "install-eslint: npm could not install eslint@$VERSION, the JavaScript lint will be skipped" >&2
