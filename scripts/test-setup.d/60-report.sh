#!/usr/bin/env bash
# Setup for scripts/report, scripts/sweep and tests/test_report*.py (issue #6), on a fresh
# Debian machine as root; idempotent.
#  - Python packages, pinned (scripts/lib/tbsreport/requirements.txt: matplotlib with the Agg
#    backend for the charts, Markdown for report.html, PyMySQL for the sweep's ANALYZE TABLE),
#    into the active Python: scripts/test puts .stack/venv/bin first on PATH, so `python`
#    here is the test venv's (else .stack/venv is used, created if missing).
#  - Debian's chromium, to render report.html headless in the tests (+ DejaVu fonts).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
log() { printf '[%s] 60-report: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

PY=$(command -v python || true)
if [ -z "$PY" ] || ! "$PY" -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)' 2>/dev/null; then
  VENV=${TBS_STATE:-$ROOT/.stack}/venv
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  PY=$VENV/bin/python
fi
REQ=$ROOT/scripts/lib/tbsreport/requirements.txt
if ! "$PY" - "$REQ" <<'PYEOF' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    name, want = line.split("==")
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PYEOF
then
  log "installing Python packages (pinned) into $("$PY" -c 'import sys; print(sys.prefix)')"
  "$PY" -m pip install -q --disable-pip-version-check -r "$REQ"
fi

if ! command -v chromium >/dev/null || ! fc-list 2>/dev/null | grep -qi dejavu; then
  log "installing Debian packages chromium fonts-dejavu-core"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
log "ok: $("$PY" -c 'import matplotlib, markdown, pymysql; from importlib.metadata import version as v; print(*(n + " " + v(n) for n in ("matplotlib", "Markdown", "PyMySQL")))'), $(chromium --version 2>/dev/null | head -1)"
