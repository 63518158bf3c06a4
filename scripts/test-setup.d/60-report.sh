#!/usr/bin/env bash
# Setup for scripts/report, scripts/sweep and tests/test_report*.py (issue #6), on a fresh
# Debian machine as root; idempotent.
#  - Python packages, pinned (tidbbench/requirements.txt: matplotlib with the Agg
#    backend for the charts, Markdown for report.html, PyMySQL for the sweep's ANALYZE TABLE),
#    with tidbbench itself, into .stack/venv by the shared bootstrap (common.sh's ensure_venv).
#  - Debian's chromium, to render report.html headless in the tests (+ DejaVu fonts).
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
log() { printf '[%s] 60-report: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

ensure_venv # .stack/venv with tidbbench (editable) and its pinned packages; PY is its Python
PY=$STATE/venv/bin/python

if ! command -v chromium >/dev/null || ! fc-list 2>/dev/null | grep -qi dejavu; then
  log "installing Debian packages chromium fonts-dejavu-core"
  apt_install chromium fonts-dejavu-core
fi
log "ok: $("$PY" -c 'import matplotlib, markdown, pymysql; from importlib.metadata import version as v; print(*(n + " " + v(n) for n in ("matplotlib", "Markdown", "PyMySQL")))'), $(chromium --version 2>/dev/null | head -1)"
