#!/usr/bin/env bash
# Setup for tests/test_compose*.py (the compose stack's static proofs; no Docker engine needed):
#   bin/docker-compose  docker compose v2.40.3 from the Go module proxy (scripts/build compose)
#   bin/loki            Loki, for -verify-config on loki/loki.yaml (scripts/build loki)
#   bin/tidb-server     TiDB, to check compose/config/*/tidb.toml and run init.sql (scripts/build tidb)
#   bin/alloy-check     tests/tools/alloycheck: Alloy's own parser and evaluator on config.alloy
#   promtool            bin/promtool (scripts/build prometheus, the release of compose's image)
#   haproxy             Debian package
# Idempotent; builds are cached by version (scripts/build) or by Go's build cache.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
cd "$ROOT"

if ! command -v haproxy >/dev/null; then
  log "installing Debian package haproxy"
  apt_install haproxy
fi

# first what needs none of scripts/build's binaries (scripts/test runs this beside the builds)
log "building bin/alloy-check (tests/tools/alloycheck)"
(cd tests/tools/alloycheck && CGO_ENABLED=0 go build -trimpath -o "$ROOT/bin/alloy-check.tmp" . && mv "$ROOT/bin/alloy-check.tmp" "$ROOT/bin/alloy-check")

scripts/build compose
base_step_only && exit 0
scripts/build loki tidb prometheus

# scripts/test runs pytest from the one venv (tests/requirements.txt); when this script runs on
# its own, the shared bootstrap makes that venv too.
ensure_venv "$ROOT/tests/requirements.txt"
