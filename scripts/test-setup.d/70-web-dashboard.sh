#!/usr/bin/env bash
# Setup for tests/test_web_dashboard.py (issue 13), on a fresh Debian machine as root; idempotent.
#  - websocket-client (pinned), to drive Debian's headless Chromium over the DevTools protocol
#    (tests/cdp.py): k6's web dashboard keeps a server-sent-events stream open, so a plain
#    `chromium --screenshot` fires before any data arrives.
#  - Debian's chromium comes from 60-report.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
log() { printf '[%s] 70-web-dashboard: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
PY=$(command -v python || true)
if [ -z "$PY" ] || ! "$PY" -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)' 2>/dev/null; then
  VENV=${TBS_STATE:-$ROOT/.stack}/venv
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  PY=$VENV/bin/python
fi
WANT=1.8.0
if ! "$PY" -c "from importlib.metadata import version; import sys; sys.exit(0 if version('websocket-client') == '$WANT' else 1)" 2>/dev/null; then
  log "installing websocket-client==$WANT into $("$PY" -c 'import sys; print(sys.prefix)')"
  "$PY" -m pip install -q --disable-pip-version-check "websocket-client==$WANT"
fi
if ! command -v chromium >/dev/null; then
  log "installing Debian package chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
log "ok: websocket-client $WANT, $(chromium --version 2>/dev/null | head -1)"
