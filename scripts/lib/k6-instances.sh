# One run split over several k6 processes (sourced by scripts/k6; it has set K6, ROOT and the
# environment). k6's own execution segments split every thread step: process i of N runs
#   k6 run --execution-segment i/N:(i+1)/N --execution-segment-sequence 0,1/N,...,1
#          --tag instance_id=i -e testid=T -e start_at=MS ... k6/oltp.js
# (150 threads over 4: 38+38+37+37 VUs). All share the testid and a start time (epoch ms, now +
# 10 s unless given) that every process's setup() waits for, so each step covers the same
# wall-clock interval everywhere. Each writes results/T.instance-i.json; when all have ended,
# tidbbench/merge.py writes results/T.json (docs/kubernetes.md has the details).
#
#   scripts/k6 run --instances 4 -e threads=150,300 k6/oltp.js            # 4 processes here
#   scripts/k6 run --instances 4 --instance 1 -e testid=T -e start_at=MS k6/oltp.js
#                                     # segment 1 of 4 on this host; then scripts/k6 merge T
# shellcheck shell=bash

k6_instances_die() { printf 'error: %s\n' "$*" >&2; exit 2; }

k6_instances() {
  local n='' only='' prev='' a testid=${testid:-} start_at='' rdir=${results_dir:-$ROOT/results}
  local threads='1' args=() script='' workload=''
  [ "${1:-}" = run ] || k6_instances_die "--instances goes with 'scripts/k6 run' (got '${1:-}')"
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --instances) [ $# -ge 2 ] || k6_instances_die "--instances needs a number of k6 processes, 1 or more"
                   n=$2; shift 2; continue ;;
      --instances=*) n=${1#*=}; shift; continue ;;
      --instance) [ $# -ge 2 ] || k6_instances_die "--instance needs the instance number(s) to run here, e.g. 0 or 0,1"
                  only=$2; shift 2; continue ;;
      --instance=*) only=${1#*=}; shift; continue ;;
      --execution-segment*|--segment*)
        k6_instances_die "$1: --instances sets the execution segments itself; leave out $1" ;;
    esac
    case $prev:$1 in
      --tag:instance_id=*|--tag:*,instance_id=*)
        k6_instances_die "--tag $1: --instances tags each process with instance_id itself" ;;
    esac
    case $1 in --tag=instance_id=*) k6_instances_die "$1: --instances tags each process with instance_id itself" ;; esac
    if [ "$prev" = -e ] || [ "$prev" = --env ]; then
      case $1 in
        testid=*) testid=${1#testid=}; prev=''; args=("${args[@]:0:${#args[@]}-1}"); shift; continue ;;
        start_at=*) start_at=${1#start_at=}; prev=''; args=("${args[@]:0:${#args[@]}-1}"); shift; continue ;;
        results_dir=*) rdir=${1#results_dir=} ;;
        threads=*) threads=${1#threads=} ;;
        workload=*) workload=${1#workload=} ;;
      esac
    fi
    args+=("$1"); prev=$1; shift
  done
  [ ${#args[@]} -gt 0 ] && script=${args[${#args[@]}-1]}

  # ---- validate everything before anything starts
  if ! [[ $n =~ ^[0-9]{1,6}$ ]] || [ "$n" -lt 1 ]; then
    k6_instances_die "--instances '$n': the number of k6 processes, a whole number 1 or more (e.g. --instances 4)"
  fi
  case $script in
    *prepare.js) k6_instances_die "--instances splits a run of k6/oltp.js; k6/prepare.js loads the tables once: run it without --instances" ;;
    *oltp.js) ;;
    *) k6_instances_die "--instances splits a run of k6/oltp.js (the script must come last; got '${script:-nothing}')" ;;
  esac
  [[ $threads =~ ^[0-9]+(,[0-9]+)*$ ]] || k6_instances_die "threads=$threads: a thread count or a list like 8,16,32"
  local t min='' _steps=()
  IFS=, read -r -a _steps <<<"$threads"
  for t in "${_steps[@]}"; do
    if [ -z "$min" ] || [ "$t" -lt "$min" ]; then min=$t; fi
  done
  [ "$n" -le "$min" ] || k6_instances_die "--instances $n: the smallest thread step has $min thread(s); each of the $n instances needs at least one thread of every step (use --instances 1..$min or more threads)"
  local ids=()
  if [ -n "$only" ]; then
    [[ $only =~ ^[0-9]+(,[0-9]+)*$ ]] || k6_instances_die "--instance '$only': instance numbers 0..$((n - 1)), comma-separated"
    IFS=, read -r -a ids <<<"$only"
    for a in "${ids[@]}"; do
      [ "$a" -lt "$n" ] || k6_instances_die "--instance $a: instances of --instances $n are 0..$((n - 1))"
    done
    if [ -z "$testid" ] || [ -z "$start_at" ]; then
      k6_instances_die "--instance runs part of a split run: give every host the same -e testid=... and -e start_at=<epoch ms> (e.g. start_at=\$(( (\$(date +%s) + 60) * 1000 )))"
    fi
  else
    for ((a = 0; a < n; a++)); do ids+=("$a"); done
  fi
  if [ -z "$testid" ]; then  # as k6/lib/run.js newTestId(): UTC time and 4 hex digits
    testid=$(date -u +%Y%m%d-%H%M%S)-$(od -An -N2 -tx2 /dev/urandom | tr -d ' \n')
  fi
  [[ $testid =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ ]] || k6_instances_die "testid '$testid': letters, digits, '.', '_' and '-'"
  local now_ms
  now_ms=$(date +%s%3N)
  if [ -z "$start_at" ]; then
    start_at=$((now_ms + 10000))
  elif ! [[ $start_at =~ ^[0-9]{13}$ ]]; then
    k6_instances_die "start_at=$start_at: a time in epoch milliseconds (13 digits), e.g. \$(( (\$(date +%s) + 60) * 1000 ))"
  elif [ "$start_at" -lt "$now_ms" ]; then
    printf 'scripts/k6: warning: start_at=%s is %s s in the past: this host starts at once\n' \
      "$start_at" $(((now_ms - start_at) / 1000)) >&2
  fi
  # k6's --tag replaces the script's own tags (testid, workload) on k6's built-in series: give them too
  [ -n "$workload" ] || workload=$(sed -n '/"workload": {/,/}/s/.*"default": "\([a-z_]*\)".*/\1/p' "$ROOT/k6/contract.json" | head -1)
  mkdir -p "$rdir"
  for a in "${ids[@]}"; do
    [ ! -e "$rdir/$testid.instance-$a.json" ] || k6_instances_die "$rdir/$testid.instance-$a.json exists: a testid names one run; choose another -e testid"
  done

  # ---- start
  local seq=0 i
  for ((i = 1; i < n; i++)); do seq+=",$i/$n"; done
  seq+=",1"
  echo "scripts/k6: testid=$testid split over $n instance(s) (running ${ids[*]} here), start_at=$start_at ($(( (start_at - now_ms) / 1000 )) s from now)" >&2
  local -A id_of=()
  local log pid
  trap k6_instances_stop INT TERM
  for i in "${ids[@]}"; do
    log=$rdir/$testid.instance-$i.log
    TBS_INSTANCES=$n "$K6" run --address "" --execution-segment "$i/$n:$((i + 1))/$n" --execution-segment-sequence "$seq" \
      --tag "instance_id=$i" --tag "testid=$testid" --tag "workload=$workload" \
      -e "testid=$testid" -e "start_at=$start_at" "${args[@]}" \
      > >(trap "" INT TERM; tee "$log" | k6_instances_prefix "$i") 2>&1 &
    pid=$!
    id_of[$pid]=$i
    echo "$pid" >"$rdir/.$testid.instance-$i.pid"
    echo "scripts/k6: instance $i ($i/$n:$((i + 1))/$n) pid $pid, output in $log" >&2
  done

  # ---- wait for every process, noting each one's exit status and end time
  local exits=() failed=0 rc done_pid
  while [ ${#id_of[@]} -gt 0 ]; do
    done_pid=''
    set +e
    wait -n -p done_pid "${!id_of[@]}"
    rc=$?
    set -e
    [ -n "$done_pid" ] || continue  # a signal interrupted the wait (the trap passed it on)
    i=${id_of[$done_pid]}
    unset "id_of[$done_pid]"
    rm -f "$rdir/.$testid.instance-$i.pid"
    exits+=(--exit "$i=$rc@$(date +%s%3N)")
    if [ "$rc" != 0 ]; then
      echo "scripts/k6: instance $i exited with status $rc (output: $rdir/$testid.instance-$i.log)" >&2
      [ "$failed" != 0 ] || failed=$rc
    fi
  done
  trap - INT TERM
  if [ -n "$only" ]; then
    echo "scripts/k6: instance(s) ${ids[*]} of $testid done; copy $rdir/$testid.instance-*.json of every host into one results/ folder and run: scripts/k6 merge $testid" >&2
    return "$failed"
  fi
  set +e
  tbs_py tidbbench.merge --results "$rdir" --expect "$n" "${exits[@]}" "$testid"
  rc=$?
  set -e
  [ "$failed" = 0 ] || return "$failed"
  return "$rc"
}

# on INT/TERM: pass it on to the k6 processes still running (they stop gracefully and write
# their summaries); k6_instances keeps waiting for them
k6_instances_stop() {
  local p
  for p in "${!id_of[@]}"; do kill -INT "$p" 2>/dev/null || true; done
}

k6_instances_prefix() {
  if [ -n "${TBS_LOG_DIR:-}" ] && [ -d "$TBS_LOG_DIR" ]; then
    sed -u "s/^/[k6 $1] /" | tee -a "$TBS_LOG_DIR/k6.log"
  else
    sed -u "s/^/[k6 $1] /"
  fi
}
