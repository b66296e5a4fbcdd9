#!/usr/bin/env bash
# The README's test command; .ci/run calls it too. Sets up the checkout when .venv is missing or
# older than pyproject.toml (scripts/setup.sh), checks lint, format and types
# (scripts/check.sh), and runs the test suite.
#   --fast   the fast lane: only in-process tests (no real processes, daemons or browsers),
#            with fewer hypothesis examples (about 30 s on 2 cores, after 8 s of checks); what
#            a developer runs after every change. The full run keeps every example.
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
lane=()
if [ "${1:-}" = "--fast" ]; then
    shift
    lane=(-m "not integration and not slow")
    export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-fast}" NOON_MODEL_EXAMPLES="${NOON_MODEL_EXAMPLES:-12}"
fi
if [ ! -f .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ]; then
    bash scripts/setup.sh
fi
bash scripts/check.sh
.venv/bin/python -m pytest -q "${lane[@]}" "$@"
