# shellcheck shell=bash
# pytest_phases [PYTEST_ARGS...]: the full tier's pytest (scripts/test), in two phases
# (CONTRIBUTING.md, "Tests side by side"):
#   1. the tests not marked serial, two at a time: pytest-xdist's two workers, --dist loadfile (a
#      file's tests on one worker, so its module fixtures run once);
#   2. the tests marked serial (tests/conftest.py), alone.
# Arguments that choose the markers or the workers themselves (-m, -n, --dist) run one pytest as
# given. --durations: each phase prints its slowest tests, where the suite's time goes. A phase
# with no test to run (exit 5: `scripts/test -k stack` selects serial tests only) is no failure,
# unless neither had any. Returns 0 when every phase passed.
pytest_phases() {
  local a own=0 rc1=0 rc2=0
  for a in "$@"; do
    case $a in -m|-m?*|-n|-n?*|--numprocesses|--numprocesses=*|--dist|--dist=*) own=1 ;; esac
  done
  if [ $own = 1 ]; then
    log "pytest"
    python -m pytest -q -p no:cacheprovider --durations=12 tests "$@"
    return
  fi
  log "pytest, side by side: the tests not marked serial, two at a time"
  python -m pytest -q -p no:cacheprovider --durations=12 -n 2 --dist loadfile -m "not serial" tests "$@" || rc1=$?
  log "pytest, alone: the tests marked serial"
  python -m pytest -q -p no:cacheprovider --durations=12 -m serial tests "$@" || rc2=$?
  if [ $rc1 = 5 ] && [ $rc2 = 5 ]; then
    echo "pytest: no test selected" >&2
    return 5
  fi
  { [ $rc1 = 0 ] || [ $rc1 = 5 ]; } && { [ $rc2 = 0 ] || [ $rc2 = 5 ]; }
}
