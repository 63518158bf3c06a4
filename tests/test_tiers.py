"""Issue 30: every test file has a tier (CONTRIBUTING.md): `pytestmark = pytest.mark.fast` (no
server, no build beyond Go's cache: scripts/test --fast) or `pytest.mark.full` (the stack, our k6,
long runs: scripts/test); a fast file's test that needs more carries @pytest.mark.full. The
conftest's collection hook refuses an untiered test too; this test names the file."""
import ast
import os
import subprocess
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
