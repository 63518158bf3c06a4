#!/usr/bin/env bash
# Setup for tests/test_web_dashboard.py (issue 13), on a fresh Debian machine as root; idempotent.
#  - websocket-client (pinned in tests/requirements.txt, installed by the shared venv bootstrap), to drive Debian's headless Chromium over the DevTools protocol
#    (tests/cdp.py): k6's web dashboard keeps a server-sent-events stream open, so a plain
#    `chromium --screenshot` fires before any data arrives.
#  - Debian's chromium comes from 60-report.sh.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
log() { printf '[%s] 70-web-dashboard: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
ensure_venv "$ROOT/tests/requirements.txt" # websocket-client is pinned there
if ! command -v chromium >/dev/null; then
  log "installing Debian package chromium"
  apt_install chromium fonts-dejavu-core
fi
log "ok: websocket-client $("$STATE/venv/bin/python" -c 'from importlib.metadata import version; print(version("websocket-client"))'), $(chromium --version 2>/dev/null | head -1)"
