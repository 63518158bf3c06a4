"""Issue 10: tidbbench is a package with one venv bootstrap, so the README's commands work in
any order on a fresh clone. These tests clone the committed repository to a temporary folder
(no .stack/, no venv) and run the commands there: the first creates .stack/venv through
scripts/lib/common.sh's ensure_venv (pip from PyPI, pinned), the second finds it ready."""
import os
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.full


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    dest = tmp_path_factory.mktemp("fresh") / "tidb-bench-stack"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True, timeout=120)
    assert not (dest / ".stack").exists()
    return dest


def fresh_env():
    # the system's python3 first, none of the test venv's variables
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "TBS_STATE", "TBS_REEXEC", "PYTHONPATH")}
    env["PATH"] = ":".join(p for p in env["PATH"].split(":") if "/.stack/" not in p)
    return env


@pytest.mark.parametrize("command,usage", [("scripts/report", "usage: scripts/report"),
                                           ("scripts/sweep", "usage: scripts/sweep"),
                                           ("scripts/history", "usage: scripts/history")])
def test_help_works_on_a_fresh_clone(clone, command, usage):
    p = subprocess.run([command, "--help"], cwd=clone, env=fresh_env(), capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.startswith(usage), p.stdout[:500]
    venv = clone / ".stack/venv"
    # the command made the clone's own venv, with tidbbench installed editable from the clone (asked
    # from /: run from a checkout's root, Python would import that checkout's tidbbench/ as it stands)
    q = subprocess.run([str(venv / "bin/python"), "-c", "import tidbbench; print(tidbbench.ROOT)"],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert q.stdout.strip() == str(clone), q.stderr
    assert (venv / "bin" / ("tbs-" + command.split("/")[1])).is_file()


def test_bad_input_on_a_fresh_clone_is_a_clear_error(clone):
    p = subprocess.run(["scripts/sweep", "--workloads", "oltp_nope", "--threads", "2"], cwd=clone,
                       env=fresh_env(), capture_output=True, text=True, timeout=900)
    assert p.returncode == 2 and "unknown workload 'oltp_nope'" in p.stderr and "oltp_point_select" in p.stderr
