#!/usr/bin/env bash
# Setup for tests/test_compose.py (the compose stack's static proofs; no Docker engine needed):
#   bin/docker-compose  docker compose v2.40.3 from the Go module proxy (scripts/build compose)
#   bin/loki            Loki, for -verify-config on loki/loki.yaml (scripts/build loki)
#   bin/tidb-server     TiDB, to check compose/config/*/tidb.toml and run init.sql (scripts/build tidb)
#   bin/alloy-check     compose/alloy/check: Alloy's own parser and evaluator on config.alloy
#   promtool, haproxy   Debian packages (prometheus, haproxy)
# Idempotent; builds are cached by version (scripts/build) or by Go's build cache.
. "$(dirname "$0")/../lib/common.sh"
cd "$ROOT"

pkgs=()
command -v promtool >/dev/null || pkgs+=(prometheus)
command -v haproxy >/dev/null || pkgs+=(haproxy)
if [ ${#pkgs[@]} -gt 0 ]; then
  log "installing Debian packages for the compose tests: ${pkgs[*]}"
  apt-get update -qq
  # the prometheus package would start its daemon where an init system runs: we only need promtool
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

scripts/build compose loki tidb

log "building bin/alloy-check (compose/alloy/check)"
(cd compose/alloy/check && CGO_ENABLED=0 go build -trimpath -o "$ROOT/bin/alloy-check" .)
