#!/usr/bin/env bash
# Setup for tests/test_dashboards.py and tests/test_dashboards_live.py (issue #5), on a fresh
# Debian machine as root; idempotent.
#  - tests/tools/exprcheck: our Go program on Prometheus' PromQL parser and Loki's LogQL parser,
#    pinned by tests/tools/exprcheck/go.mod + go.sum (Go module proxy), built into the cache.
#  - promtool of the Prometheus the stack runs (bin/promtool, scripts/build prometheus), to parse
#    every PromQL expression the way the stack's server does.
#  - the dashboards' generator needs only Python's standard library; the tests need PyYAML
#    (tests/requirements.txt, pinned, installed by scripts/test).
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
log() { printf '[%s] 50-dashboards: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# first what needs none of scripts/build's binaries (scripts/test runs this beside the builds)
command -v go >/dev/null || die "Go is needed to build tests/tools/exprcheck (the machine's Go toolchain, as scripts/build uses)"
log "building tests/tools/exprcheck (PromQL + LogQL parsers; first build takes a few minutes)"
python3 -c "import sys; sys.path.insert(0, '$ROOT/tests'); import dashtools; print(dashtools.exprcheck_binary())"
base_step_only && exit 0
"$ROOT/scripts/build" prometheus
