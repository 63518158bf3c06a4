#!/bin/sh
# Entrypoint of compose's k6-instance service: one replica of a run split over K6_INSTANCES
# k6 processes (`deploy.replicas`), as `scripts/k6 run --instances N` splits it on one host.
# Compose gives replicas no index, so each takes the first free one by creating a directory
# in the shared results folder (mkdir is atomic): results/.claims-<testid>/<i>. Every replica
# gets the same TBS_TESTID and TBS_START_AT (epoch ms; each k6's setup() waits for it) and runs
#   k6 run --execution-segment i/N:(i+1)/N --execution-segment-sequence 0,1/N,...,1
#          --tag instance_id=i -e testid=... -e start_at=... $TBS_K6_ARGS oltp.js
# writing results/<testid>.instance-<i>.json; `scripts/k6 merge <testid>` then merges them.
set -eu
n=${K6_INSTANCES:-}
testid=${TBS_TESTID:-}
start_at=${TBS_START_AT:-}
results=${TBS_RESULTS:-/scripts/results}
fail() { echo "error: $*" >&2; exit 2; }
case $n in ''|*[!0-9]*|0) fail "K6_INSTANCES='$n': the number of replicas, a whole number 1 or more" ;; esac
[ -n "$testid" ] || fail "set TBS_TESTID (one testid for every replica), e.g. TBS_TESTID=\$(date -u +%Y%m%d-%H%M%S)-c$n"
case $testid in -*|*[!A-Za-z0-9._-]*) fail "TBS_TESTID='$testid': letters, digits, '.', '_' and '-'" ;; esac
case $start_at in ''|*[!0-9]*) fail "set TBS_START_AT to the shared start in epoch ms, e.g. \$(( (\$(date +%s) + 30) * 1000 ))" ;; esac
mkdir -p "$results/.claims-$testid"
i=0
while [ "$i" -lt "$n" ] && ! mkdir "$results/.claims-$testid/$i" 2>/dev/null; do i=$((i + 1)); done
[ "$i" -lt "$n" ] || fail "all $n instances of testid $testid are taken (a testid names one run: choose a new TBS_TESTID)"
seq=0
j=1
while [ "$j" -lt "$n" ]; do seq="$seq,$j/$n"; j=$((j + 1)); done
seq="$seq,1"
echo "k6-instance: testid=$testid instance $i of $n ($i/$n:$((i + 1))/$n), start_at=$start_at" >&2
# TBS_INSTANCES: one monitor VU per process (k6/lib/progress.js); testid as a tag too (k6's
# --tag replaces the script's own tags on k6's built-in series)
export TBS_INSTANCES="$n"
# TBS_K6_ARGS: the workload's options, word-split on purpose (-e name=value ...)
# shellcheck disable=SC2086
exec k6 run --execution-segment "$i/$n:$((i + 1))/$n" --execution-segment-sequence "$seq" \
  --tag "instance_id=$i" --tag "testid=$testid" -e "testid=$testid" -e "start_at=$start_at" ${TBS_K6_ARGS:-} "${TBS_SCRIPT:-oltp.js}"
