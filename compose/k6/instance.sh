#!/bin/sh
# Entrypoint of compose's k6-instance service: one replica of a run split over K6_INSTANCES
# k6 processes (`deploy.replicas`), as `scripts/k6 run --instances N` splits it on one host.
# Compose gives replicas no index, so each takes the first free one by creating a directory
# in the shared results folder (mkdir is atomic): results/.claims-<testid>/<i>. Every replica
# gets the same TBS_TESTID and TBS_START_AT (epoch ms; each k6's setup() waits for it); the
# launcher core (`k6 x tbs run --instances N --instance i`, k6/ext/launch) checks the split and
# runs instance i's execution segment, writing results/<testid>.instance-<i>.json;
# `scripts/k6 merge <testid>` then merges them.
set -eu
n=${K6_INSTANCES:-}
testid=${TBS_TESTID:-}
start_at=${TBS_START_AT:-}
results=${TBS_RESULTS:-/scripts/results}
fail() { echo "error: $*" >&2; exit 2; }
case $n in ''|*[!0-9]*|0) fail "K6_INSTANCES='$n': the number of replicas, a whole number 1 or more" ;; esac
[ -n "$testid" ] || fail "set TBS_TESTID (one testid for every replica), e.g. TBS_TESTID=\$(docker compose run --rm --no-deps k6 x tbs testid)"
case $testid in -*|*[!A-Za-z0-9._-]*) fail "TBS_TESTID='$testid': letters, digits, '.', '_' and '-'" ;; esac
case $start_at in ''|*[!0-9]*) fail "set TBS_START_AT to the shared start in epoch ms, e.g. \$(( (\$(date +%s) + 30) * 1000 ))" ;; esac
mkdir -p "$results/.claims-$testid"
i=0
while [ "$i" -lt "$n" ] && ! mkdir "$results/.claims-$testid/$i" 2>/dev/null; do i=$((i + 1)); done
[ "$i" -lt "$n" ] || fail "all $n instances of testid $testid are taken (a testid names one run: choose a new TBS_TESTID)"
echo "k6-instance: testid=$testid instance $i of $n, start_at=$start_at" >&2
# TBS_K6_ARGS: the workload's options, word-split on purpose (-e name=value ...)
# shellcheck disable=SC2086
exec k6 x tbs run --prefix k6-instance --instances "$n" --instance "$i" -e "testid=$testid" -e "start_at=$start_at" \
  ${TBS_K6_ARGS:-} "${TBS_SCRIPT:-oltp.js}"
