"""Issue 10: the linters, clean, on every language of the repository (setup:
scripts/test-setup.d/30-lint.sh). Each test runs the real tool on the committed files and fails
with its findings. The k6 scripts and Go code under k6/ have tests of their own, so a finding
there fails only those."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.fast

VENV_BIN = Path(sys.executable).parent
ESLINT = ROOT / "lint/node_modules/.bin/eslint"


def tracked(*patterns):
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--", *patterns], capture_output=True, text=True,
                         check=True).stdout.split()
    return [f for f in out if (ROOT / f).is_file()]


def first_line(f):
    with open(ROOT / f, "rb") as fh:
        return fh.readline().decode(errors="replace")


def shell_scripts():
    """Every tracked shell script: *.sh and the extension-less ones with a bash/sh shebang."""
    files = []
    for f in tracked():
        if f.endswith(".sh") or (("." not in Path(f).name) and first_line(f).startswith("#!")
                                 and ("bash" in first_line(f) or first_line(f).rstrip().endswith("/sh"))):
            files.append(f)
    return files


def python_files():
    return tracked("*.py") + [f for f in tracked("scripts/*") if "." not in Path(f).name
                              and "python" in first_line(f)]


def run(args, cwd=ROOT, timeout=600):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def tool(name):
    path = VENV_BIN / name if (VENV_BIN / name).exists() else shutil.which(name)
    assert path, f"{name} is not installed: run scripts/test-setup.d/30-lint.sh"
    return str(path)


def test_the_file_lists_are_not_empty():
    # the linters below would pass on nothing: make sure they see the repository's files
    assert {"scripts/stack", "scripts/test", "scripts/report", "scripts/lib/common.sh"} <= set(shell_scripts())
    assert {"tools/tbstools/bench.py", "tidbbench/report/prom.py", "tests/conftest.py"} <= set(python_files())


def test_shellcheck():
    p = run(["shellcheck", "-x", "-f", "gcc", *shell_scripts()])
    assert p.returncode == 0, p.stdout + p.stderr


def test_ruff():
    p = run([tool("ruff"), "check", "--output-format", "concise", *python_files()])
    assert p.returncode == 0, p.stdout + p.stderr


def test_yamllint_compose_provisioning_and_configs():
    files = tracked("*.yaml", "*.yml")
    assert "compose.yaml" in files and any(f.startswith("grafana/provisioning/") for f in files)
    p = run([tool("yamllint"), "-s", "-f", "parsable", *files])
    assert p.returncode == 0, p.stdout + p.stderr


def eslint(paths):
    assert ESLINT.exists(), "ESLint is not installed: run scripts/test-setup.d/30-lint.sh"
    return run([str(ESLINT), "--config", "lint/eslint.config.mjs", "--max-warnings", "0",
                *paths])


def test_eslint_k6_scripts():
    p = eslint(["k6"])
    assert p.returncode == 0, p.stdout + p.stderr


def test_eslint_other_javascript():
    others = [f for f in tracked("*.js", "*.mjs") if not f.startswith("k6/")]
    assert others
    p = eslint(others)
    assert p.returncode == 0, p.stdout + p.stderr


def go_modules():
    return sorted(str(Path(f).parent) for f in tracked("*go.mod") if Path(f).name == "go.mod")


def test_gofmt_outside_k6():
    files = [f for f in tracked("*.go") if not f.startswith("k6/")]
    assert files
    p = run(["gofmt", "-l", *files])
    assert p.returncode == 0 and p.stdout == "", p.stdout + p.stderr


def test_gofmt_k6():
    p = run(["gofmt", "-l", *tracked("k6/*.go")])
    assert p.returncode == 0 and p.stdout == "", p.stdout + p.stderr


@pytest.mark.parametrize("module", ["tests/tools/alloycheck", "tests/tools/exprcheck", "k6"])
def test_go_vet(module):
    assert module in go_modules()
    # with the flags each module is built with (scripts/build and scripts/test for k6/, 40-compose.sh
    # for alloycheck, dashtools for exprcheck: CGO_ENABLED=0 -trimpath), so vet reuses the packages
    # those builds compiled; with Go's defaults it compiled them all again, 4.7 min of the
    # side-by-side phase on a fresh machine (CONTRIBUTING.md, the suite's time)
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local", CGO_ENABLED="0")
    p = subprocess.run(["go", "vet", "-trimpath", "./..."], cwd=ROOT / module, capture_output=True, text=True,
                       timeout=900, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
