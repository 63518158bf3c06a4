#!/bin/sh
# The k6 image's entrypoint (k6/Dockerfile): k6 itself, except for a run of oltp.js when
# TBS_RUN_LOGS names a folder (compose/k6.yaml: the k6-logs volume). Such a run gets its testid
# before k6 starts (yours from -e testid=..., else one made as k6/lib/run.js makes it) and its
# lines also go to $TBS_RUN_LOGS/<testid>.log, which Alloy ships to Loki as service "k6-run"
# with the label testid (compose/alloy/config.alloy): the run dashboard links to them. The
# local stack does the same in scripts/k6 (promtail).
set -u
logs=${TBS_RUN_LOGS:-}
is_run=0
testid=
prev=
for a in "$@"; do
  case $a in *oltp.js) is_run=1 ;; esac
  case $prev:$a in -e:testid=*|--env:testid=*) testid=${a#testid=} ;; esac
  case $a in -e=testid=*|--env=testid=*) testid=${a#*testid=} ;; esac
  prev=$a
done
if [ "${1:-}" != run ] || [ "$is_run" = 0 ] || [ -z "$logs" ] || ! mkdir -p "$logs" 2>/dev/null; then
  exec k6 "$@"
fi
if [ -z "$testid" ]; then
  testid=$(date -u +%Y%m%d-%H%M%S)-$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')
  set -- "$@" -e "testid=$testid"
fi
case $testid in
  */*|.*) exec k6 "$@" ;;  # not a file name: k6 rejects the testid itself
esac
fifo=$(mktemp -u)
mkfifo "$fifo"
tee -a "$logs/$testid.log" < "$fifo" &
tee_pid=$!
k6 "$@" > "$fifo" 2>&1 &
pid=$!
# k6 runs in the background (SIGINT ignored there): hand it the signals this shell gets
trap 'kill -INT "$pid" 2>/dev/null' INT
trap 'kill -TERM "$pid" 2>/dev/null' TERM
rc=0
wait "$pid" || rc=$?
while kill -0 "$pid" 2>/dev/null; do rc=0; wait "$pid" || rc=$?; done
wait "$tee_pid"
rm -f "$fifo"
exit "$rc"
