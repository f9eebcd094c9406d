#!/usr/bin/env bash
# Installs what the end-to-end suite needs on a fresh Debian machine whose only outside access is
# the package registries: Debian's Chromium (playwright never downloads a browser here) and
# code-server (VS Code served to a browser) from the npm registry.
#
# Usage: scripts/install-code-server.sh [DIR]   (default: .tools/code-server beside this script's parent)
# Afterwards DIR/node_modules/.bin/code-server is a real VS Code 1.100 server.
# Re-running is cheap: nothing is reinstalled when the pinned version is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/.tools/code-server}
version=${CODE_SERVER_VERSION:-4.100.3}   # the newest code-server release that runs on Node 20

need_apt=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need_apt+=(chromium)
command -v rg >/dev/null 2>&1 || need_apt+=(ripgrep)
# code-server's native modules (node-pty, kerberos, native-keymap, @vscode/spdlog) compile on install
for pkg in build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ "${#need_apt[@]}" -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if [ -x "$dir/node_modules/.bin/code-server" ] && \
   [ "$(node -p "require('$dir/node_modules/code-server/package.json').version" 2>/dev/null)" = "$version" ]; then
  echo "code-server $version already installed in $dir"
  exit 0
fi

# @vscode/ripgrep's postinstall downloads rg from GitHub unless a cached tarball exists: seed the
# cache with Debian's rg for every ripgrep build code-server's dependency tree may ask for.
tmp=$(node -p 'require("os").tmpdir()')
staging=$(mktemp -d)
cp "$(command -v rg)" "$staging/rg"
for v in 1.15.9 1.15.10 1.15.11 1.15.12 1.15.13 1.15.14; do
  mkdir -p "$tmp/vscode-ripgrep-cache-$v"
  for triple in x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
    tar czf "$tmp/vscode-ripgrep-cache-$v/ripgrep-v13.0.0-10-$triple.tar.gz" -C "$staging" rg
  done
done
rm -rf "$staging"

mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name":"denpex-e2e-code-server","private":true}' > package.json
# root needs unsafe-perm for code-server's postinstall; node-pty's postinstall calls npx.
npm_config_yes=true npm_config_unsafe_perm=true npm install --no-audit --no-fund --loglevel=error "code-server@$version"
"$dir/node_modules/.bin/code-server" --version
