#!/usr/bin/env bash
# Setup for tests/test_compose*.py (the compose stack's static proofs; no Docker engine needed):
#   bin/docker-compose  docker compose v2.40.3 from the Go module proxy (scripts/build compose)
#   bin/loki            Loki, for -verify-config on loki/loki.yaml (scripts/build loki)
#   bin/tidb-server     TiDB, to check compose/config/*/tidb.toml and run init.sql (scripts/build tidb)
#   bin/alloy-check     tests/tools/alloycheck: Alloy's own parser and evaluator on config.alloy
#   promtool            bin/promtool (scripts/build prometheus, the release of compose's image)
#                       where scripts/build has it, else Debian's prometheus package
#   haproxy             Debian package
# Idempotent; builds are cached by version (scripts/build) or by Go's build cache.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
cd "$ROOT"

targets=(compose loki tidb)
grep -q '^build_prometheus()' scripts/build && targets+=(prometheus)
scripts/build "${targets[@]}"

pkgs=()
[ -x bin/promtool ] || command -v promtool >/dev/null || pkgs+=(prometheus)
command -v haproxy >/dev/null || pkgs+=(haproxy)
if [ ${#pkgs[@]} -gt 0 ]; then
  log "installing Debian packages for the compose tests: ${pkgs[*]}"
  apt-get update -qq
  # the prometheus package would start its daemon where an init system runs: we only need promtool
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

if [ -x /usr/bin/promtool ] || [ -x bin/promtool ]; then :; elif dpkg -s prometheus >/dev/null 2>&1; then
  log "reinstalling Debian package prometheus (its promtool is missing)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall --no-install-recommends prometheus >/dev/null
fi

log "building bin/alloy-check (tests/tools/alloycheck)"
(cd tests/tools/alloycheck && CGO_ENABLED=0 go build -trimpath -o "$ROOT/bin/alloy-check" .)

# scripts/test runs pytest from the one venv (tests/requirements.txt); when this script runs on
# its own, the shared bootstrap makes that venv too.
ensure_venv "$ROOT/tests/requirements.txt"
