#!/usr/bin/env bash
# CI for the VS Code extension on a fresh Debian machine (Node 20+, python3 >= 3.10, root or sudo;
# outside access only to the Debian, npm and PyPI registries):
#   1. npm ci (pinned by package-lock.json)
#   2. type-check and unit tests in plain Node (no VS Code)
#   3. npm run package: the repository's wheel and its dependencies pip-installed into
#      bundled/libs, esbuild bundle, denpex-<version>.vsix
#   4. Debian Chromium + code-server (scripts/install-code-server.sh), then the end-to-end suite:
#      the .vsix installed into a fresh code-server and driven by playwright-core.
# Exits non-zero on the first failure. Screenshots land in test-artifacts/.
# DENPEX_SKIP_E2E=1 runs only steps 1-3.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n=== [%ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

step "prerequisites"
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "ci.sh: Node.js 20 or newer is needed (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 2
fi
# bundle-python.sh runs `python3 -m pip wheel` and `pip install --target` (PEP 668 does not apply to --target)
if ! python3 -m pip --version >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
fi
python3 -c 'import sys; assert sys.version_info >= (3, 10), sys.version' || { echo "ci.sh: python3 >= 3.10 needed" >&2; exit 2; }

step "npm ci"
npm ci --no-audit --no-fund --loglevel=error

step "type-check"
npx tsc --noEmit -p .

step "unit tests (node --test)"
npm run --silent test:unit

step "package the .vsix"
npm run --silent package
version=$(node -p 'require("./package.json").version')
test -s "denpex-$version.vsix"
ls -l "denpex-$version.vsix"

if [ "${DENPEX_SKIP_E2E:-0}" = 1 ]; then
  step "end-to-end suite skipped (DENPEX_SKIP_E2E=1)"
  exit 0
fi

step "install Chromium and code-server"
bash scripts/install-code-server.sh

step "end-to-end tests (code-server + Chromium)"
rm -rf test-artifacts
node --test --test-concurrency=1 --test-reporter=spec test/e2e/
ls test-artifacts

step "done"
