#!/usr/bin/env bash
# Installs the page's JavaScript checks, pinned, into .cache/js-tools: ESLint (the lint, under
# eslint.config.mjs: rules and browser globals written out, no plugin) and Prettier (the format,
# under .prettierrc.json). scripts/check.sh runs both over noon/web/static, scripts/fix.sh lets
# Prettier rewrite it, tests/web/test_js_lint.py holds both to it. Skipped (with a message) when
# npm is missing or cannot install them; the checks then say so and the tests skip.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=(eslint@9.9.1 prettier@3.10.1)
TARGET=.cache/js-tools
if ! command -v npm >/dev/null 2>&1; then
    echo "install-js-tools: npm not found, the JavaScript lint and format checks will be skipped" >&2
    exit 0
fi
installed() {
    local name=${1%@*} version=${1#*@}
    grep -qs "\"version\": \"$version\"" "$TARGET/node_modules/$name/package.json"
}
missing=0
for tool in "${TOOLS[@]}"; do
    installed "$tool" || missing=1
done
[ "$missing" = 0 ] && exit 0
mkdir -p "$TARGET"
npm install --prefix "$TARGET" --save-exact --no-audit --no-fund --loglevel=error "${TOOLS[@]}" ||
    echo "install-js-tools: npm could not install ${TOOLS[*]}, the JavaScript checks will be skipped" >&2
