#!/usr/bin/env bash
# Installs the official MCP memory server (the reference the knowledge-graph drop-in is tested
# against) into .cache/official, pinned. tests/kg/test_kg_differential.py runs it with node.
# Skipped (with a message) when npm is missing; the differential test then skips too.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=2026.8.31
TARGET=.cache/official
if ! command -v npm >/dev/null 2>&1; then
    echo "install-official-server: npm not found, the differential test will be skipped" >&2
    exit 0
fi
if [ -f "$TARGET/node_modules/@modelcontextprotocol/server-memory/package.json" ] &&
    grep -q "\"version\": \"$VERSION\"" \
        "$TARGET/node_modules/@modelcontextprotocol/server-memory/package.json"; then
    exit 0
fi
mkdir -p "$TARGET"
npm install --prefix "$TARGET" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-memory@$VERSION"
