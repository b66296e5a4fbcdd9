#!/usr/bin/env bash
# Installs noon into .venv and runs `noon demo`: three machines on this computer (each with its
# own noond on loopback with mutual TLS, and its own MCP server driven by a real MCP client)
# showing memories replicate, conflict, settle and disappear. Cleans up after itself.
# Extra arguments go to `noon demo` (e.g. --linger 60 to keep the mesh up and play with it).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
install_venv
exec .venv/bin/noon demo "$@"
