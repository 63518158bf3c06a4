# shellcheck shell=bash
# pytest_phases BEFORE [PYTEST_ARGS...]: the full tier's pytest (scripts/test), in three phases
# (CONTRIBUTING.md, "Tests side by side"):
#   1. the tests marked serial (tests/conftest.py), alone: each changes or restarts what every
#      test shares; none needs a quiet machine, so the setup's last lanes may still run beside;
#   2. BEFORE (a command: scripts/test waits there for those lanes), then the tests marked
#      neither serial nor quiet, three at a time: pytest-xdist's three workers on the two cores
#      (two left 15% of them idle: the tests wait on their runs), --dist loadfile (a file's tests
#      on one worker, so its module fixtures run once; CONTRIBUTING.md, the suite's time);
#   3. the tests marked quiet, alone, last: each times, paces or weighs something that any other
#      load would move.
# Arguments that choose the markers or the workers themselves (-m, -n, --dist) run BEFORE and one
# pytest as given. --durations: each phase prints its slowest tests, where the suite's time goes.
# A phase with no test to run (exit 5: `scripts/test -k stack` selects serial tests only) is no
# failure, unless none had any. Returns 0 when BEFORE and every phase passed.
pytest_phases() {
  local before=$1 a own=0 rc rcs=() fives=0 failed=0
  shift
  for a in "$@"; do
    case $a in -m|-m?*|-n|-n?*|--numprocesses|--numprocesses=*|--dist|--dist=*) own=1 ;; esac
  done
  if [ $own = 1 ]; then
    $before || return 1
    log "pytest"
    python -m pytest -q -p no:cacheprovider --durations=12 tests "$@"
    return
  fi
  log "pytest, alone: the tests marked serial"
  python -m pytest -q -p no:cacheprovider --durations=12 -m serial tests "$@"
  rcs+=($?)
  $before || failed=1
  log "pytest, side by side: the tests marked neither serial nor quiet, three at a time"
  python -m pytest -q -p no:cacheprovider --durations=12 -n 3 --dist loadfile -m "not serial and not quiet" tests "$@"
  rcs+=($?)
  log "pytest, alone on a quiet machine: the tests marked quiet"
  python -m pytest -q -p no:cacheprovider --durations=12 -m quiet tests "$@"
  rcs+=($?)
  for rc in "${rcs[@]}"; do
    case $rc in 0) ;; 5) fives=$((fives + 1)) ;; *) failed=1 ;; esac
  done
  [ $failed = 0 ] || return 1
  if [ $fives = ${#rcs[@]} ]; then
    echo "pytest: no test selected" >&2
    return 5
  fi
}
