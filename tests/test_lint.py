"""Issue 10: the linters, clean, on every language of the repository (setup:
scripts/test-setup.d/30-lint.sh). Each test runs the real tool on the committed files and fails
with its findings. The k6 scripts and Go code under k6/ have tests of their own, so a finding
there fails only those."""
import os
import re
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
    # for alloycheck, dashtools for exprcheck: CGO_ENABLED=0 -trimpath, and common.sh's compiler
    # flags in GOFLAGS, which conftest.py sets), so vet reuses the packages
    # those builds compiled; with Go's defaults it compiled them all again, 4.7 min of the
    # side-by-side phase on a fresh machine (CONTRIBUTING.md, the suite's time)
    env = dict(os.environ, GOFLAGS=os.environ["GOFLAGS"] + " -mod=mod", GOTOOLCHAIN="local", CGO_ENABLED="0")
    p = subprocess.run(["go", "vet", "-trimpath", "./..."], cwd=ROOT / module, capture_output=True, text=True,
                       timeout=900, env=env)
    assert p.returncode == 0, p.stdout + p.stderr


# ---------------------------------------------------------------- the Node.js the linters run on

def node_ok():
    sys.path.insert(0, str(ROOT / "lint"))
    try:
        import node_ok as mod
    finally:
        sys.path.pop(0)
    return mod


def test_node_ok_reads_npms_engines_ranges():
    """lint/node_ok.py: ESLint 10's range as npm records it, and each form it reads (^ stays in its
    major, >= does not); a form it cannot read is an error, not a pass."""
    sat = node_ok().satisfies
    rng = "^20.19.0 || ^22.13.0 || >=24"
    assert [sat(v, rng) for v in ((18, 19, 0), (20, 18, 9), (20, 19, 0), (21, 0, 0), (22, 12, 0), (22, 13, 0),
                                  (23, 9, 0), (24, 0, 0), (26, 1, 0))] == \
        [False, False, True, False, False, True, False, True, True]
    assert sat((18, 0, 0), ">=18") and sat((18, 0, 0), ">= 4") and not sat((17, 9, 9), ">=18")
    with pytest.raises(ValueError, match="cannot read"):
        sat((22, 0, 0), "~22.1")
    # what lint/package-lock.json asks today includes ESLint's range
    assert node_ok().needs()["eslint"] == rng


@pytest.mark.full  # pip fetches Node.js (about 30 MB) from PyPI
def test_the_lint_setup_brings_a_node_eslint_runs_on(tmp_path):
    """ensure_node (30-lint.sh): a Node on PATH that ESLint 10 does not run on (Debian bookworm's
    18) gets PyPI's pinned Node first on PATH instead, its npm and ESLint run on it, and a second
    call installs nothing; a Node that ESLint runs on is left alone. Mutation: without the check,
    Node 18 stays and ESLint fails to start."""
    want = subprocess.run(["bash", "-c", ". scripts/lib/versions.sh; echo $NODE_WHEEL_VERSION"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.strip()

    def run(state, node_version, script):
        bindir = state.parent / f"bin-{node_version}"
        bindir.mkdir(exist_ok=True)
        (bindir / "node").write_text(f"#!/bin/sh\necho {node_version}\n")
        (bindir / "node").chmod(0o755)
        if not (state / "venv").exists():
            state.mkdir(exist_ok=True)
            (state / "venv").symlink_to(ROOT / ".stack/venv")
        return subprocess.run(["bash", "-c", ". scripts/lib/common.sh; " + script], cwd=ROOT, capture_output=True,
                              text=True, timeout=600, env={**os.environ, "TBS_STATE": str(state),
                                                           "PATH": f"{bindir}:{os.environ['PATH']}"})
    state = tmp_path / "old"
    p = run(state, "v18.19.0", "ensure_node; command -v node; node --version")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [str(state / "node/bin/node"), f"v{want}"], p.stdout
    assert re.search(r"Node v18\.19\.0 is not one \S*eslint\S* runs on", p.stderr), p.stderr
    p = run(state, "v18.19.0", f"ensure_node; npm --version; {ESLINT} --version")
    assert p.returncode == 0 and "installing" not in p.stderr, p.stderr
    assert p.stdout.split()[1].startswith("v10."), p.stdout
    fine = tmp_path / "fine"
    p = run(fine, "v22.13.0", "ensure_node; node --version")
    assert p.returncode == 0 and p.stdout.strip() == "v22.13.0" and not (fine / "node").exists(), (p.stdout, p.stderr)


def test_every_go_command_compiles_with_one_set_of_flags():
    """common.sh puts its compiler flags (TBS_GOFLAGS: no DWARF) in GOFLAGS once, however often it
    is sourced, after what the shell had; conftest.py does the same for a pytest run; and no script
    or test sets GOFLAGS outright, which would drop them and compile every package anew (a cold
    build of k6 and exprcheck again, minutes on a fresh machine)."""
    import conftest
    p = subprocess.run(["bash", "-c", '. scripts/lib/common.sh; . scripts/lib/common.sh; echo "$GOFLAGS"'], cwd=ROOT,
                       capture_output=True, text=True, check=True,
                       env={**os.environ, "GOFLAGS": "-mod=mod"})  # a shell's own GOFLAGS
    assert p.stdout.split() == ["-mod=mod", conftest._TBS_GOFLAGS] and conftest._TBS_GOFLAGS.startswith("-gcflags=")
    assert conftest._TBS_GOFLAGS in os.environ["GOFLAGS"].split()
    outright = []
    for f in tracked("scripts/*", "tests/*.py", "tools/*", "k6/*.sh", "*.sh"):
        for n, line in enumerate((ROOT / f).read_text(errors="replace").splitlines(), 1):
            for m in re.finditer(r"""\bGOFLAGS=(\S+)|["']GOFLAGS["']\s*:\s*(\S+)""", line):
                value = m.group(1) or m.group(2)
                if "$GOFLAGS" not in value and 'os.environ["GOFLAGS"]' not in value and "TBS_GOFLAGS" not in line \
                        and "a shell's own GOFLAGS" not in line:
                    outright.append(f"{f}:{n}: {line.strip()}")
    assert not outright, outright
