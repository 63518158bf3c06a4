#!/usr/bin/env bash
# Setup for tests/test_dashboards.py and tests/test_dashboards_live.py (issue #5), on a fresh
# Debian machine as root; idempotent.
#  - promtool of the Prometheus the stack runs (bin/promtool from scripts/build, else Debian's
#    `prometheus` package), to parse every PromQL expression the way the stack's server does.
#  - tests/tools/exprcheck: our Go program on Prometheus' PromQL parser and Loki's LogQL parser,
#    pinned by tests/tools/exprcheck/go.mod + go.sum (Go module proxy), built into the cache.
#  - the dashboards' generator needs only Python's standard library; the tests need PyYAML
#    (tests/requirements.txt, pinned, installed by scripts/test).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
log() { printf '[%s] 50-dashboards: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# promtool of the stack's Prometheus: bin/promtool when scripts/build made it, else Debian's.
promtool_ok() { [ -x "$ROOT/bin/promtool" ] || { p=$(command -v promtool) && [ -x "$(readlink -f "$p")" ]; }; }
if ! promtool_ok; then
  log "installing Debian package prometheus (promtool)"
  policy=/usr/sbin/policy-rc.d made_policy=
  # keep the package's own service from starting: the stack runs its own Prometheus
  if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' > $policy; chmod +x $policy; made_policy=1; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  if [ -n "$made_policy" ]; then rm -f $policy; fi
fi

GO=$(command -v go || echo /usr/local/go/bin/go)
[ -x "$GO" ] || { echo "error: Go is needed to build tests/tools/exprcheck (the machine's Go toolchain)" >&2; exit 1; }
PY=$(command -v python3)
log "building tests/tools/exprcheck (PromQL + LogQL parsers; first build takes a few minutes)"
"$PY" -c "import sys; sys.path.insert(0, '$ROOT/tests'); import dashtools; print(dashtools.exprcheck_binary())"
