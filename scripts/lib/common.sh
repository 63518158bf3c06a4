# Shared helpers for scripts/*. Source it; it sets ROOT, CACHE and a few functions.
# shellcheck shell=bash
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Built binaries are cached outside the work tree (keyed by version) so a fresh clone is fast.
CACHE=${TBS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tidb-bench-stack}
STATE=${TBS_STATE:-$ROOT/.stack}
# shellcheck source=versions.sh
. "$ROOT/scripts/lib/versions.sh"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# gomod_dir MODULE VERSION -> prints the unpacked module directory (downloads it if needed).
gomod_dir() {
  local dir
  dir=$(cd /tmp && GOFLAGS=-mod=mod GOSUMDB=off go mod download -json "$1@$2" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || die "could not download Go module $1@$2 from the module proxy"
  printf '%s\n' "$dir"
}

# writable_copy SRC DEST: a writable copy of a read-only module directory.
writable_copy() {
  rm -rf "$2.tmp"; mkdir -p "$(dirname "$2")"
  cp -r "$1" "$2.tmp" && chmod -R u+w "$2.tmp"
  rm -rf "$2"; mv "$2.tmp" "$2"
}
