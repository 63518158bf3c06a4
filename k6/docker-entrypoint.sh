#!/bin/sh
# The k6 image's entrypoint (k6/Dockerfile): k6 itself, except that a `run` goes through the
# launcher core (`k6 x tbs run`, k6/ext/launch), as scripts/k6 does locally: the password given
# with -e replaces the compose one (mysql_password_file), a run of oltp.js gets its testid (yours
# from -e testid=..., else a new one) and, where TBS_RUN_LOGS names a folder (compose/k6.yaml:
# the k6-logs volume), its lines also go to $TBS_RUN_LOGS/<testid>.log, which Alloy ships to
# Loki as service "k6-run" with the label testid (compose/alloy/config.alloy): the run
# dashboard links to them.
set -u
if [ "${1:-}" != run ]; then exec k6 "$@"; fi
shift
if [ -n "${TBS_RUN_LOGS:-}" ]; then exec k6 x tbs run --prefix k6 --run-logs "$TBS_RUN_LOGS" "$@"; fi
exec k6 x tbs run --prefix k6 "$@"
