"""Issue 30: every test file has a tier (CONTRIBUTING.md): `pytestmark = pytest.mark.fast` (no
server, no build beyond Go's cache: scripts/test --fast) or `pytest.mark.full` (the stack, our k6,
long runs: scripts/test); a fast file's test that needs more carries @pytest.mark.full. The
conftest's collection hook refuses an untiered test too; this test names the file."""
import ast
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, TIERS

pytestmark = pytest.mark.fast


def tier_of(path):
    """The tier the file's module-level pytestmark names, or None."""
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                for t in node.targets):
            marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            names = {m.attr for m in marks if isinstance(m, ast.Attribute)}
            found = names & set(TIERS)
            return found.pop() if len(found) == 1 else None
    return None


def test_every_test_file_has_one_tier():
    files = sorted((ROOT / "tests").glob("test_*.py"))
    assert len(files) > 30
    missing = [f.name for f in files if tier_of(f) is None]
    assert not missing, ("test files without a tier: add `pytestmark = pytest.mark.fast` (no server, no "
                         f"build) or `pytest.mark.full` (CONTRIBUTING.md): {missing}")


def test_the_tier_check_sees_a_file_without_one(tmp_path):
    # negative control
    (tmp_path / "test_x.py").write_text("import pytest\n\ndef test_x():\n    pass\n")
    (tmp_path / "test_y.py").write_text("import pytest\n\npytestmark = [pytest.mark.full]\n")
    assert tier_of(tmp_path / "test_x.py") is None and tier_of(tmp_path / "test_y.py") == "full"


STUB = """#!/bin/sh
# records one call: the program, its folder, the variables the tiers depend on, its arguments
{ printf '%s\\t%s\\t%s\\t%s\\t%s' "$(basename "$0")" "$PWD" "${TBS_TIER-<unset>}" "${mysql_db-<unset>}" "${results_dir-<unset>}"
  for a in "$@"; do printf '\\t%s' "$a"; done; echo; } >> "$STUB_LOG"
[ "$(basename "$0")" = go ] && [ -n "${GO_FAILS:-}" ] && exit 1
exit 0
"""


def run_fast_tier(tmp_path, *args, env=None):
    """scripts/test --fast ARGS with `go` and the venv's python replaced by stubs that record their
    calls: [(program, folder, TBS_TIER, mysql_db, results_dir, *arguments)] and the exit status."""
    state, bindir, log = tmp_path / "state", tmp_path / "bin", tmp_path / "calls"
    (state / "venv/bin").mkdir(parents=True)
    bindir.mkdir()
    for stub in (state / "venv/bin/python", bindir / "go"):
        stub.write_text(STUB)
        stub.chmod(0o755)
    e = {**os.environ, "TBS_STATE": str(state), "STUB_LOG": str(log), "PATH": f"{bindir}:{os.environ['PATH']}",
         # what a developer's shell may export: the tiers run with the product's defaults instead
         "mysql_db": "elsewhere", "results_dir": str(tmp_path / "elsewhere"), **(env or {})}
    e.pop("TBS_TIER", None)
    p = subprocess.run([str(ROOT / "scripts/test"), "--fast", *args], env=e, capture_output=True, text=True, timeout=120)
    calls = [tuple(line.split("\t")) for line in log.read_text().splitlines()] if log.exists() else []
    return p, calls


def test_scripts_test_fast_selects_the_fast_tier(tmp_path):
    """What `scripts/test --fast` runs, not what its comments say: `go test -short` in every Go
    module (each go.mod of git ls-files) but otelcol/ (the log shipper: no tests, and a test build of
    its ~200 modules takes minutes), then pytest of tests/ with -m "fast and not full", the
    extra arguments and TBS_TIER=fast; both with the shell's options unset; a failing part fails
    the tier without stopping the other."""
    out = subprocess.run(["git", "ls-files", "--", "*go.mod"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    modules = sorted(str(ROOT / Path(m).parent) for m in out.split() if Path(m).parent != Path("otelcol"))
    assert str(ROOT / "otelcol") not in modules and (ROOT / "otelcol/go.mod").is_file()
    assert str(ROOT / "k6") in modules and len(modules) >= 2, modules
    p, calls = run_fast_tier(tmp_path, "-k", "report")
    assert p.returncode == 0, p.stderr
    go = [c for c in calls if c[0] == "go"]
    assert sorted(c[1] for c in go) == modules, go
    # with scripts/build's flags (CGO_ENABLED=0 -trimpath): the packages bin/k6 compiled are reused
    assert all(c[5:] == ("test", "-trimpath", "-short", "-count=1", "./...") for c in go), go
    pytest_calls = [c for c in calls if c[0] == "python" and c[5:7] == ("-m", "pytest")]
    assert len(pytest_calls) == 1, calls
    (name, cwd, tier, db, results, *argv), = pytest_calls
    assert argv == ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "fast and not full", "tests", "-k", "report"], argv
    assert (cwd, tier) == (str(ROOT), "fast")
    assert all(c[3:5] == ("<unset>", "<unset>") for c in go + pytest_calls), calls
    # a failing Go test fails the tier, and pytest still runs
    p, calls = run_fast_tier(tmp_path / "fails", env={"GO_FAILS": "1"})
    assert p.returncode == 1 and any(c[5:7] == ("-m", "pytest") for c in calls), (p.returncode, calls)


SLOW_GO = """#!/bin/sh
# go, stubbed: its version; any other call records its pid and builds for a minute
[ "$1" = env ] && { echo go1.26.8; exit 0; }
echo $$ >> "$STUB_PIDS"
sleep 60
"""


def test_a_suite_that_dies_in_its_setup_leaves_no_lane_building(tmp_path):
    """The full tier starts its build lanes before the venv's pip (they need no Python): when pip
    fails, scripts/test exits non-zero at once, says the late lanes' go-ahead is "failed", and no
    build it started runs on (each lane's processes, children first). Mutation: without
    early_exit's kill the stub builds outlive the suite."""
    state, bindir, pids = tmp_path / "state", tmp_path / "bin", tmp_path / "pids"
    (state / "venv/bin").mkdir(parents=True)
    bindir.mkdir()
    # pip fails, once a build is under way (at most 20 s on)
    (state / "venv/bin/python").write_text('#!/bin/sh\nfor i in $(seq 200); do [ -s "$STUB_PIDS" ] && break; sleep 0.1; done\n'
                                           'exit 1\n')
    (bindir / "go").write_text(SLOW_GO)
    for f in (state / "venv/bin/python", bindir / "go"):
        f.chmod(0o755)
    env = {**os.environ, "TBS_STATE": str(state), "TBS_CACHE": str(tmp_path / "cache"), "STUB_PIDS": str(pids),
           "PATH": f"{bindir}:{os.environ['PATH']}"}
    t0 = time.time()
    p = subprocess.run([str(ROOT / "scripts/test")], env=env, capture_output=True, text=True, timeout=50)
    assert p.returncode != 0 and time.time() - t0 < 30, (p.returncode, p.stderr[-2000:])
    assert (state / "logs/setup-stack-lanes.result").read_text().strip() == "failed"
    started = [int(x) for x in pids.read_text().split()] if pids.exists() else []
    assert started, "no build lane had started before pip ran: " + p.stderr[-2000:]
    time.sleep(0.5)
    alive = [pid for pid in started if Path(f"/proc/{pid}").exists()
             and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"]
    for pid in alive:
        os.kill(pid, 9)
    assert not alive, f"builds still running after the suite exited: {alive}"


PHASES_STUB = """#!/usr/bin/env bash
# python, stubbed: the arguments (one line, tab-separated) and the exit status of its turn
printf '%s\\n' "$(IFS=$'\\t'; echo "$*")" >> "$STUB_LOG"
n=$(grep -vcx BEFORE "$STUB_LOG")  # its turn: BEFORE is no python call
exit "$(sed -n "${n}p" "$STUB_CODES")"
"""
PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=12"]


def run_phases(tmp_path, codes, *args, before_rc=0):
    """scripts/lib/pytest-phases.sh's pytest_phases BEFORE ARGS with python stubbed (its n-th call
    exits codes[n]) and BEFORE a function that logs ["BEFORE"] and returns before_rc: (exit status,
    the calls' arguments)."""
    bindir, log, rcs = tmp_path / "bin", tmp_path / "calls", tmp_path / "codes"
    bindir.mkdir(exist_ok=True)
    (bindir / "python").write_text(PHASES_STUB)
    (bindir / "python").chmod(0o755)
    log.write_text("")
    rcs.write_text("".join(f"{c}\n" for c in codes))
    script = ('. scripts/lib/common.sh; . scripts/lib/pytest-phases.sh; set +e; '
              f'before() {{ echo BEFORE >> "$STUB_LOG"; return {before_rc}; }}; pytest_phases before "$@"; echo "rc=$?"')
    p = subprocess.run(["bash", "-c", script, "phases", *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "STUB_LOG": str(log),
                            "STUB_CODES": str(rcs)})
    assert p.stdout.startswith("rc="), p.stdout + p.stderr
    return int(p.stdout.strip()[3:]), [line.split("\t") for line in log.read_text().splitlines()]


def test_the_full_tiers_pytest_runs_serial_then_side_by_side_then_quiet(tmp_path):
    """scripts/test's pytest: the serial tests alone, then BEFORE (its wait for the late setup
    lanes), then the tests marked neither serial nor quiet on three xdist workers (a file's tests
    on one), then the quiet ones alone, each with the extra arguments. A phase with no test (5) is no
    failure unless none had any; a failed BEFORE fails it, and the phases after it still run;
    arguments naming markers or workers run BEFORE and one pytest."""
    rc, calls = run_phases(tmp_path, [0, 0, 0], "-k", "report")
    assert rc == 0 and calls == [PYTEST + ["-m", "serial", "tests", "-k", "report"], ["BEFORE"],
                                 PYTEST + ["-n", "3", "--dist", "loadfile", "-m", "not serial and not quiet", "tests",
                                           "-k", "report"],
                                 PYTEST + ["-m", "quiet", "tests", "-k", "report"]], calls
    for codes, want in (([5, 0, 0], 0), ([0, 5, 5], 0), ([5, 5, 0], 0), ([5, 5, 5], 5), ([1, 0, 0], 1),
                        ([0, 1, 0], 1), ([0, 0, 1], 1), ([2, 5, 5], 1), ([5, 5, 3], 1)):
        rc, calls = run_phases(tmp_path, codes)
        assert (rc != 0, rc == 5) == (want != 0, want == 5) and len(calls) == 4, (codes, rc, calls)
    for codes in ([0, 0, 0], [5, 5, 5]):
        rc, calls = run_phases(tmp_path, codes, before_rc=1)
        assert rc == 1 and len(calls) == 4 and calls[1] == ["BEFORE"], (codes, rc, calls)
    for own in (["-m", "not full"], ["-n", "3"], ["--dist=load"], ["-mfast"]):
        rc, calls = run_phases(tmp_path, [3], *own)
        assert rc == 3 and calls == [["BEFORE"], PYTEST + ["tests", *own]], (own, calls)
        rc, calls = run_phases(tmp_path, [0], *own, before_rc=1)
        assert rc == 1 and calls == [["BEFORE"]], (own, calls)


ONCE = """
import sys, time
sys.path.insert(0, sys.argv[1])
import conftest
def make(folder):
    with open(sys.argv[2], "a") as f:
        f.write(f"{folder}\\n")
    time.sleep(1)  # the other process asks meanwhile
    (folder / "run.json").write_text("{}")
    return [str(folder), {"made_by": sys.argv[3]}]
print(conftest.once_per_suite("runs", None, make))
"""


def test_a_suites_shared_run_is_made_once_for_all_its_pytest_processes(tmp_path):
    """conftest.once_per_suite (the session runs read_write_runs and tpcc_run, asked by the two
    xdist workers and then by the serial phase): with TBS_SUITE_ID, made once under its lock,
    every process reading the same value; another suite makes its own."""
    made = tmp_path / "made"
    env = {**os.environ, "TBS_STATE": str(tmp_path / "state"), "TBS_SUITE_ID": "s1"}
    procs = [subprocess.Popen([sys.executable, "-c", ONCE, str(ROOT / "tests"), str(made), str(i)], env=env,
                              stdout=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs) and outs[0] == outs[1], outs
    assert made.read_text().splitlines() == [str(tmp_path / "state/test-runs/s1/runs")]
    assert (tmp_path / "state/test-runs/s1/runs/run.json").is_file()
    p = subprocess.run([sys.executable, "-c", ONCE, str(ROOT / "tests"), str(made), "2"],
                       env={**env, "TBS_SUITE_ID": "s2"}, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "'made_by': '2'" in p.stdout, p.stdout + p.stderr
    assert len(made.read_text().splitlines()) == 2


def test_every_serial_and_quiet_mark_says_why():
    """A file or test runs alone (CONTRIBUTING.md, "Tests side by side") for a reason its mark
    states: a `# serial (conftest.py): why` or `# quiet (conftest.py): why` line above a file's
    pytestmark, a comment beside a test's @pytest.mark.serial or quiet; no file or test has both."""
    unsaid, files = [], {"serial": 0, "quiet": 0}
    for f in sorted((ROOT / "tests").glob("test_*.py")):
        lines, file_mark = f.read_text().splitlines(), None
        for i, line in enumerate(lines):
            marks = [m for m in files if f"mark.{m}" in line]
            if line.startswith("pytestmark") and marks:
                files[marks[0]] += 1
                file_mark = marks[0]
                if len(marks) > 1 or not (i and lines[i - 1].startswith(f"# {marks[0]} (conftest.py): ")
                                          and len(lines[i - 1]) > 40):
                    unsaid.append(f"{f.name}:{i + 1}")
            elif re.match(r"\s*@pytest\.mark\.(serial|quiet)\b", line) and (
                    len(marks) > 1 or "  # " not in line or file_mark not in (None, *marks)):
                unsaid.append(f"{f.name}:{i + 1}")
    assert files["serial"] >= 8 and files["quiet"] >= 5 and not unsaid, (files, unsaid)
