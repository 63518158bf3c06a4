# Pinned versions of everything the local stack builds from the Go module proxy.
# (Debian packages come from the distribution release; compose images are pinned in .env.)
# shellcheck shell=bash disable=SC2034 # read by the scripts that source this file
TIDB_MODULE_VERSION=v1.1.0-beta.0.20251126154744-e4e814fdc0af
TIDB_PARSER_VERSION=v0.0.0-20251126154744-e4e814fdc0af
# What tidb_version() reports for our module build (the module proxy has no git checkout).
TIDB_GIT_HASH=e4e814fdc0af
TIDB_RELEASE="${TIDB_MODULE_VERSION}+module-build"
LOKI_VERSION=v3.7.8
# promtail is no longer in Loki's module after v3.5; v3.5.3 is its last home there.
PROMTAIL_VERSION=v3.5.3
# go-tpc's CLI for the TPC-C parity tests: the release k6/go.mod links into our k6 (tests/test_tpcc.py checks they agree)
GOTPC_VERSION=v1.0.7
COMPOSE_VERSION=v2.40.3
# Prometheus: the same release as compose's image (.env PROMETHEUS_IMAGE); module v0.3MM.P = v3.MM.P
PROMETHEUS_VERSION=v3.13.5
PROMETHEUS_MODULE_VERSION=v0.313.5
# The history store's PostgreSQL major version (Debian's postgresql-15 locally; compose's
# HISTORY_DB_IMAGE in .env is the same major, tests/test_history_store.py checks the two agree)
HISTORY_DB_PG_MAJOR=15
