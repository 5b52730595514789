#!/usr/bin/env bash
# Installs what the end-to-end test in real VS Code needs (test/e2e/vscode.test.ts), outside the
# project's dependencies: Debian chromium (driven by playwright-core), ripgrep, and code-server 4.100.3
# (VS Code 1.100.3, the newest that installs on Node 20) in a cache folder (default ~/.cache/agl-e2e,
# override with AGL_E2E_HOME). Idempotent: every step skips what is already there.
# Why the odd steps: see ../shared/guides/VSCODE-E2E.md — node-pty runs `npx node-gyp` (needs
# npm_config_yes), kerberos builds from source (libkrb5-dev), and @vscode/ripgrep's download is
# unreachable offline, so Debian's rg is handed to it through its download cache.
set -euo pipefail
CODE_SERVER_VERSION=4.100.3
E2E_HOME="${AGL_E2E_HOME:-$HOME/.cache/agl-e2e}"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

pkgs=()
command -v chromium >/dev/null || pkgs+=(chromium)
command -v rg >/dev/null || pkgs+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || pkgs+=(libkrb5-dev)
if [ ${#pkgs[@]} -gt 0 ]; then
  echo "setup-e2e: apt-get install ${pkgs[*]}"
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${pkgs[@]}"
fi

bin="$E2E_HOME/code-server/node_modules/.bin/code-server"
# code-server writes a default config on every start, even for --version: keep it out of $HOME.
version() { XDG_CONFIG_HOME="$E2E_HOME/tmp/xdg-config" XDG_DATA_HOME="$E2E_HOME/tmp/xdg-data" "$bin" --version 2>/dev/null; }
if [ -x "$bin" ] && version | grep -q "^$CODE_SERVER_VERSION"; then
  echo "setup-e2e: code-server $CODE_SERVER_VERSION already in $E2E_HOME"
  exit 0
fi

echo "setup-e2e: installing code-server $CODE_SERVER_VERSION into $E2E_HOME (about a minute)"
mkdir -p "$E2E_HOME/code-server" "$E2E_HOME/tmp"
scratch="$(mktemp -d "$E2E_HOME/tmp/install.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
# @vscode/ripgrep looks in $TMPDIR/vscode-ripgrep-cache-<its version>/ before downloading.
rgcache="$scratch/vscode-ripgrep-cache-1.15.11"
mkdir -p "$rgcache/stage"
cp "$(command -v rg)" "$rgcache/stage/rg"
tar -czf "$rgcache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$rgcache/stage" rg
cd "$E2E_HOME/code-server"
[ -f package.json ] || echo '{"name":"agl-e2e-code-server","private":true}' > package.json
TMPDIR="$scratch" npm_config_unsafe_perm=true npm_config_yes=true npm_config_nodedir="${npm_config_nodedir:-/usr}" \
  npm install --no-audit --no-fund --no-save "code-server@$CODE_SERVER_VERSION"
version
echo "setup-e2e: done"
