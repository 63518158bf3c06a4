#!/usr/bin/env bash
# Setup for tests/test_k8s.py (the Kubernetes manifests of k8s/, validated offline): the pinned
# validators of k8s/requirements.txt -- kubernetes-validate (Kubernetes' own OpenAPI schemas,
# strict) and check-jsonschema (the TestRun against k6-operator's CRD schema) -- in their own
# venv, .stack/venv-k8s, so their dependencies do not meet the test venv's. Idempotent.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${TBS_STATE:-$ROOT/.stack}/venv-k8s
REQ=$ROOT/k8s/requirements.txt
log() { printf '[%s] 70-k8s: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
want=$(grep -v '^#' "$REQ" | sed '/^$/d' | tr 'A-Z_' 'a-z-' | sort)
have=$("$VENV/bin/python" -m pip freeze 2>/dev/null | tr 'A-Z_' 'a-z-' | sort)
if [ "$want" != "$(comm -12 <(echo "$want") <(echo "$have"))" ]; then
  log "installing the pinned validators into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
fi
log "ok: $("$VENV/bin/kubernetes-validate" --version 2>&1 | head -1), $("$VENV/bin/check-jsonschema" --version 2>&1 | head -1)"
