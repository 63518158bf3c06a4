"""Issue 45 (item 5): functions a reader can hold. No function of tidbbench/, tools/ or k6/ (Python,
Go, JavaScript, tests of those trees included) is over 80 lines, except a declarative table
(a dashboard's panels, a list of cases): such a function says so in the comment just above it,
with the words "declared table" and why. A generated file (its first lines say GENERATED, such
as the bundle k6/oltp.js) is measured in its sources instead.

Each language is measured by a real parser: Python's ast, Go's go/ast (tests/tools/funclen,
the standard library only), JavaScript's acorn (pinned in lint/package.json)."""
import ast
import functools
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.fast

MAX_LINES = 80
TREES = ("tidbbench", "tools", "k6")
TOOL = ROOT / "tests/tools/funclen"
ACORN = ROOT / "lint/node_modules/acorn"
DECLARED = re.compile(r"declared table", re.I)


def tracked(*patterns):
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--", *patterns], capture_output=True,
                         text=True, check=True).stdout.split()
    return [f for f in out if (ROOT / f).is_file() and f.split("/")[0] in TREES and not generated(f)]


def generated(path):
    with open(ROOT / path, encoding="utf-8", errors="replace") as fh:
        return any("GENERATED" in fh.readline() for _ in range(3))


def python_files():
    files = tracked("*.py")
    for f in tracked("*"):
        if "." not in os.path.basename(f):
            with open(ROOT / f, "rb") as fh:
                if b"python" in fh.readline():
                    files.append(f)
    return files


def python_functions(path):
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"), path)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield path, first, node.end_lineno, node.name


def listed(command, files, cwd=ROOT):
    out = subprocess.run(command, input="\n".join(files), capture_output=True, text=True, cwd=cwd,
                         timeout=300)
    assert out.returncode == 0, f"{command[0]} failed: {out.stderr}"
    for line in out.stdout.splitlines():
        path, first, last, name = line.split("\t")
        yield path, int(first), int(last), name


def go_functions(files):
    go = shutil.which("go")
    assert go, "go is not installed (scripts/build installs the toolchain)"
    binary = ROOT / ".stack/funclen"
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}
    subprocess.run([go, "build", "-trimpath", "-o", str(binary), "."], cwd=TOOL, check=True, env=env,
                   timeout=300)
    return listed([str(binary)], files)


def js_functions(files):
    node = shutil.which("node")
    assert node and ACORN.is_dir(), "node and lint/node_modules are needed: run scripts/test-setup.d/30-lint.sh"
    return listed([node, str(TOOL / "funclen.cjs"), str(ACORN.parent)], files)


def declared_table(lines, first):
    """True when the comment lines just above line `first` (1-based) say "declared table"."""
    comment, i = [], first - 2
    while i >= 0 and lines[i].lstrip().startswith(("#", "//")):
        comment.append(lines[i])
        i -= 1
    return bool(DECLARED.search(" ".join(comment)))


def source_lines(path):
    return (ROOT / path).read_text(encoding="utf-8").splitlines()


def long_functions(functions, read=source_lines):
    sources, found = {}, []
    for path, first, last, name in functions:
        length = last - first + 1
        if length <= MAX_LINES:
            continue
        if path not in sources:
            sources[path] = read(path)
        if not declared_table(sources[path], first):
            found.append(f"{path}:{first} {name} ({length} lines)")
    return found


@functools.lru_cache(maxsize=1)
def all_functions():
    functions = [f for p in python_files() for f in python_functions(p)]
    functions += go_functions(tracked("*.go"))
    functions += js_functions(tracked("*.js", "*.mjs", "*.cjs"))
    return tuple(functions)


def test_every_language_is_measured():
    # the check below would pass on nothing: each parser must see the functions we know are there
    names = {(path, name) for path, _, _, name in all_functions()}
    assert ("tidbbench/report/report.py", "markdown") in names
    assert ("k6/ext/launch/run.go", "instances") in names
    assert ("k6/lib/steps.js", "connectSeconds") in names
    assert not any(path == "k6/oltp.js" for path, _ in names), "the generated bundle is measured in its sources"


def test_no_function_is_over_80_lines():
    found = long_functions(all_functions())
    assert not found, (f"{len(found)} function(s) over {MAX_LINES} lines (split them, or, for a declarative "
                       "table, say \"declared table\" and why in the comment just above):\n  " + "\n  ".join(found))


def test_a_declared_table_is_the_only_exception():
    lines = ["x = 1", "# the panels of the dashboard: a declared table, one row a panel", "def panels():"]
    assert declared_table(lines, 3)
    assert not declared_table(["# a long function", "def panels():"], 2)
    lines = ["def f():"] + ["    pass"] * MAX_LINES
    functions = [("t.py", 1, MAX_LINES + 1, "f"), ("t.py", 1, MAX_LINES, "g")]
    assert long_functions(functions, read=lambda _: lines) == [f"t.py:1 f ({MAX_LINES + 1} lines)"]
    declared = ["# a declared table: one row a case"] + lines
    assert long_functions([("t.py", 2, MAX_LINES + 2, "f")], read=lambda _: declared) == []
