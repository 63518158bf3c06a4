"""Issue 30: the Python is one package, tidbbench/, with one import style and no import cycle; it
imports neither tools/ nor tests/; what runs outside the venv (compose's plain Python image,
scripts/stack before the venv exists) needs only the standard library; scripts/lib holds no
Python; pyproject.toml installs every subpackage. Static: reads the modules' syntax trees
(imports inside functions count too: a cycle hidden in a function is still a cycle).
Issue 45: each Dockerfile under deploy/ and k6/ copies what its entrypoints need, derived from
their code (below)."""
import ast
import fnmatch
import functools
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.fast

PKG = "tidbbench"
# run by any python3, outside the venv: compose (tidbbench.dash.pingcap in a plain Python image),
# scripts/stack and scripts/k6 before the venv exists (common.sh's tbs_py)
OLD_NAMES = ("tbsreport", "tbsdash")  # before issue 30 (keep-old-name)
STDLIB_ENTRY_POINTS = ["tidbbench.dash.pingcap", "tidbbench.dash.generate", "tidbbench.gen.runtime",
                       "tidbbench.gen.docs", "tidbbench.merge"]


def modules(root=ROOT, pkg=PKG):
    """{dotted name: path} of every module of the package under root."""
    out = {}
    for p in sorted((root / pkg).rglob("*.py")):
        parts = p.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def imports(path):
    """(module named, level, lineno) of every import in the file, nested ones included; for
    `from X import a, b` both X.a and X.b are named (either may be a submodule)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, 0, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            out.append((base, node.level, node.lineno))
            out += [(f"{base}.{a.name}" if base else a.name, node.level, node.lineno) for a in node.names]
    return out


def graph(mods):
    """{module: {package module it imports}}: each import resolved to the longest known module."""
    g = {m: set() for m in mods}
    for m, path in mods.items():
        for name, level, _ in imports(path):
            if level:
                continue
            while name and name not in mods:
                name = name.rpartition(".")[0]
            if name and name != m:
                g[m].add(name)
    return g


def cycles(g):
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def closure(g, start):
    seen, todo = set(), list(start)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += g[m]
    return seen


def test_the_package_has_its_modules():
    mods = modules()
    assert {"tidbbench", "tidbbench.report.cli", "tidbbench.sweep.cli", "tidbbench.dash.pingcap",
            "tidbbench.gen.runtime", "tidbbench.merge", "tidbbench.selectors"} <= set(mods), sorted(mods)


def test_no_import_cycle():
    found = cycles(graph(modules()))
    assert not found, f"import cycles in {PKG}/ (move the shared part to a module of its own): {found}"
    tools = modules(ROOT / "tools", "tbstools")
    assert "tbstools.faultkit" in tools
    found = cycles(graph(tools))
    assert not found, f"import cycles in tools/tbstools: {found}"


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function(tmp_path):
    # negative control: a cycle made only by an import inside a function is found
    (tmp_path / PKG / "sub").mkdir(parents=True)
    (tmp_path / PKG / "__init__.py").write_text("")
    (tmp_path / PKG / "sub" / "__init__.py").write_text("")
    (tmp_path / PKG / "sub" / "a.py").write_text("from tidbbench.sub import b\n")
    (tmp_path / PKG / "sub" / "b.py").write_text("def f():\n    from tidbbench.sub.a import x\n    return x\n")
    (tmp_path / PKG / "c.py").write_text("from tidbbench.sub import a\n")
    assert cycles(graph(modules(tmp_path))) == [["tidbbench.sub.a", "tidbbench.sub.b"]]


def test_one_import_style_absolute_and_no_old_names():
    bad = []
    files = list(modules().values()) + sorted((ROOT / "tools").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))
    for path in files:
        for name, level, line in imports(path):
            if level or name.split(".")[0] in OLD_NAMES:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {'.' * level}{name}")
    bad = list(dict.fromkeys(b.rsplit(".", 1)[0] if ": ." in b else b for b in bad))
    assert not bad, "relative imports or the old package names (write `from tidbbench.x import y`):\n" + "\n".join(bad)


def test_the_package_imports_neither_tools_nor_tests():
    # what lives in tools/ and tests/: their packages and the helper modules the tests import
    outside = {"tbstools", "tests", "conftest"} | {p.stem for p in (ROOT / "tests").glob("*.py")}
    outside |= {p.name for p in (ROOT / "tools").iterdir() if p.is_dir()}
    bad = []
    for m, path in modules().items():
        src = path.read_text()
        for name, level, line in imports(path):
            if not level and name.split(".")[0] in outside:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {name}")
        if "sys.path" in src:
            bad.append(f"{path.relative_to(ROOT)}: changes sys.path")
    assert not bad, f"{PKG}/ must not reach into tools/ or tests/:\n" + "\n".join(bad)


def test_what_runs_outside_the_venv_needs_only_the_standard_library():
    mods = modules()
    g = graph(mods)
    bad = []
    for m in sorted(closure(g, STDLIB_ENTRY_POINTS)):
        for name, level, line in imports(mods[m]):
            top = name.split(".")[0]
            if not level and top != PKG and top not in sys.stdlib_module_names:
                bad.append(f"{mods[m].relative_to(ROOT)}:{line}: {name}")
    assert not bad, ("compose's plain Python image and scripts/stack (before the venv) run these: "
                     "standard library only:\n" + "\n".join(bad))


def test_pyproject_installs_every_subpackage_and_scripts_lib_holds_no_python():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(py["tool"]["setuptools"]["packages"])
    dirs = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / PKG).rglob("__init__.py")}
    assert dirs - listed == set(), f"pyproject.toml [tool.setuptools] packages misses {sorted(dirs - listed)}"
    no_init = [str(p.relative_to(ROOT)) for p in (ROOT / PKG).rglob("*.py") if not (p.parent / "__init__.py").exists()]
    assert not no_init, no_init
    for ep in py["project"]["scripts"].values():
        mod = ep.split(":")[0]
        assert mod in modules(), f"console script {ep}: no module {mod}"
    assert not list((ROOT / "scripts/lib").rglob("*.py")), "scripts/lib holds Python: it belongs in tidbbench/"


# -- issue 45: every image holds what its entrypoint needs ------------------------------------
# A Dockerfile under deploy/ or k6/ is built by compose (its `build:` gives the context). What the
# image runs: the Dockerfile's ENTRYPOINT, a compose service's entrypoint override, and a command
# of a Kubernetes manifest (k8s/) naming a file of the context under the image's WORKDIR (the
# CronJob's driver); a path neither under WORKDIR nor copied in is a mount, not the image's. What
# that needs is read from the code, file by file, from there:
#   bash: files sourced; "$ROOT/..." and "$(dirname "$0")/..." paths; the tidbbench modules it runs
#         (-m, tbs_py, a heredoc's `from ... import`); `pip install -e "$ROOT"`: pyproject.toml and
#         every package it lists (tidbbench/..., tools/tbstools). A function's paths count only
#         where the function is called (ensure_venv reads tidbbench/requirements.txt);
#   Python: the tidbbench modules imported, with what they import (the package's import graph),
#         and the paths they build from ROOT;
#   JavaScript: the relative paths of its imports and open() (k6's workloads, copied *.js);
#   Go: `go build ./PKG` in a RUN: the module's packages it imports, go.mod and go.sum.
# A needed path counts when its first part is a tracked top-level entry of the context that the
# context's .dockerignore keeps (bin/, .stack/, results/ are made in the image or at run time).

DOCKERFILES = ("deploy", "k6")
SH_ROOT = re.compile(r"\$\{?ROOT\}?/([\w./-]+)")
SH_HERE = re.compile(r"\$\(dirname \"\$(?:0|\{BASH_SOURCE\[0\]\})\"\)/([\w./-]+)")
SH_MODULE = re.compile(r"(?:-m|tbs_py|from|import)\s+(tidbbench(?:\.\w+)*)")
SH_FUNC = re.compile(r"^(\w+)\(\)\s*\{(.*)$")
PY_ROOT = re.compile(r"\bROOT((?:\s*/\s*\"[^\"]+\")+)")
PY_PARENTS = re.compile(r"parents\[(\d+)\]((?:\s*/\s*\"[^\"]+\")+)")
JS_REL = re.compile(r"['\"](\.\.?/[^'\"]+\.(?:js|json))['\"]")


def norm(path):
    """A context-relative path, normalised; None outside the context or for the context itself."""
    p = os.path.normpath(path)
    return None if p == "." or p.startswith("..") or p.startswith("/") else p


def kind(path):
    if path.suffix in (".py", ".sh", ".js"):
        return path.suffix[1:]
    with open(path, "rb") as f:  # the first line only (bin/k6 is 100 MB)
        first = f.readline(200).decode(errors="replace")
    return "py" if first.startswith("#!") and "python" in first else "sh" if first.startswith("#!") else None


def shell_needs(ctx, rel, needs):
    """The paths a bash script and the files it sources need: {path: why}."""
    texts, todo, sourced = [], [rel], set()
    while todo:  # the script and what it sources, recursively
        r = todo.pop()
        if r in sourced:
            continue
        sourced.add(r)
        text = (ctx / r).read_text()
        texts.append((r, text))
        for line in text.splitlines():
            if re.match(r"\s*(\.|source)\s", line):
                todo += [p for p in [norm(x) for x in SH_ROOT.findall(line)] +
                         [norm(os.path.join(os.path.dirname(r), x)) for x in SH_HERE.findall(line)] if p]
    top, funcs = [], {}
    for r, text in texts:
        name = None
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            m = SH_FUNC.match(line)
            if m and name is None:
                name = m[1]
                funcs[name] = [(r, m[2])]
                if m[2].rstrip().endswith("}"):
                    name = None
            elif name is not None:
                funcs[name].append((r, line))
                if line.startswith("}"):
                    name = None
            else:
                top.append((r, line))
    used, lines = set(), list(top)
    while True:  # the functions called from the top level or from a called function
        text = "\n".join(line for _, line in lines)
        new = {f for f in funcs if f not in used and re.search(rf"\b{f}\b", text)}
        if not new:
            break
        used |= new
        lines += [x for f in sorted(new) for x in funcs[f]]
    for r, line in lines:
        why = f"{r}: {line.strip()[:80]}"
        for x in SH_ROOT.findall(line):
            needs.setdefault(norm(x), why)
        for x in SH_HERE.findall(line):
            needs.setdefault(norm(os.path.join(os.path.dirname(r), x)), why)
        for mod in SH_MODULE.findall(line):
            python_module_needs(mod, why, needs)
        if re.search(r"pip install .*-e \"\$ROOT\"", line):
            py = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
            needs.setdefault("pyproject.toml", why)
            for pkg in py["packages"]:
                where = py.get("package-dir", {}).get(pkg) or pkg.replace(".", "/")
                needs.setdefault(where, f"{why} (pyproject.toml installs {pkg})")
    needs.pop(None, None)
    return sourced


@functools.cache
def package_graph():
    mods = modules()
    return mods, graph(mods)


def python_module_needs(name, why, needs):
    """A tidbbench module and what it imports of the package: their files and the paths they read."""
    mods, g = package_graph()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    for m in sorted(closure(g, [name] if name else [])):
        rel = str(mods[m].relative_to(ROOT))
        if rel not in needs:
            needs[rel] = why
            python_paths(mods[m], rel, needs)


def python_paths(path, rel, needs):
    """The paths a Python file builds from ROOT (or its own parents[N]); for a file outside the
    package, the tidbbench modules it imports too."""
    text = path.read_text()
    for parts in PY_ROOT.findall(text):
        needs.setdefault(norm("/".join(re.findall(r"\"([^\"]+)\"", parts))), rel)
    for n, parts in PY_PARENTS.findall(text):
        needs.setdefault(norm(str(Path(rel).parents[int(n)] / "/".join(re.findall(r"\"([^\"]+)\"", parts)))), rel)
    if not rel.startswith(PKG + "/"):
        for name, level, _ in imports(path):
            if not level and name.split(".")[0] == PKG:
                python_module_needs(name, rel, needs)
    needs.pop(None, None)


def go_needs(ctx, pkg, needs):
    """A Go package of the context's module and the module's packages it imports, recursively."""
    mod = re.search(r"^module (\S+)", (ctx / "go.mod").read_text(), re.M)[1]
    needs.setdefault("go.mod", "go build")
    needs.setdefault("go.sum", "go build")
    seen, todo = set(), [norm(pkg)]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        needs.setdefault(p, "go build")
        for f in sorted((ctx / p).glob("*.go")):
            if not f.name.endswith("_test.go"):
                for imp in re.findall(rf"\"{re.escape(mod)}/([^\"]+)\"", f.read_text()):
                    needs.setdefault(imp, f"{p}/{f.name}")
                    todo.append(imp)


def image_needs(ctx, starts):
    """{context-relative path: why} of what the start files need, followed file by file."""
    needs, done = {}, set()
    for rel, why in starts:
        needs.setdefault(rel, why)
    while True:
        todo = [r for r in needs if r not in done and (ctx / r).is_file()]
        if not todo:
            return needs
        for rel in todo:
            done.add(rel)
            k = kind(ctx / rel)
            if k == "sh":
                done |= shell_needs(ctx, rel, needs)
            elif k == "py":
                python_paths(ctx / rel, rel, needs)
            elif k == "js":
                for x in JS_REL.findall((ctx / rel).read_text()):
                    needs.setdefault(norm(os.path.join(os.path.dirname(rel), x)), rel)
                needs.pop(None, None)


@functools.cache
def compose_builds():
    """{Dockerfile (repository path): (context folder, [entrypoint overrides])} of every compose build."""
    import yaml
    out = {}
    for f in [ROOT / "compose.yaml", *sorted((ROOT / "compose").glob("*.yaml"))]:
        doc = yaml.safe_load(f.read_text()) or {}
        for svc in (doc.get("services") or {}).values():
            b = svc.get("build") if isinstance(svc, dict) else None
            if isinstance(b, dict) and "context" in b:
                ctx = (f.parent / b["context"]).resolve()
                df = str((ctx / b.get("dockerfile", "Dockerfile")).relative_to(ROOT))
                entry = out.setdefault(df, (ctx, []))[1]
                if svc.get("entrypoint"):
                    entry.append(svc["entrypoint"])
    return out


@functools.cache
def k8s_commands():
    import yaml
    out = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("command"), list) and "image" in node:
                out.append(node["command"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    for f in sorted((ROOT / "k8s").rglob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            walk(doc)
    return out


def parse_dockerfile(text):
    """The final stage's WORKDIR and ENTRYPOINT, the context's COPY sources, {COPY destination:
    sources}, and the packages of every `go build` (relative to its stage's WORKDIR)."""
    text = re.sub(r"\\\n", " ", "\n".join(x for x in text.splitlines() if not x.lstrip().startswith("#")))
    workdir, entry, copies, dests, gobuild = "/", [], [], {}, []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        op, args = words[0].upper(), words[1:]
        if op == "FROM":
            workdir = "/"
        elif op == "WORKDIR":
            workdir = os.path.join(workdir, args[0])
        elif op == "ENTRYPOINT":
            entry = json.loads(line.split(None, 1)[1])
        elif op == "COPY":
            srcs = [a for a in args if not a.startswith("--")]
            dest = os.path.normpath(os.path.join(workdir, srcs.pop()))
            if not any(a.startswith("--from") for a in args):
                srcs = [os.path.normpath(s) for s in srcs]
                copies += srcs
                dests[dest] = srcs
        elif op == "RUN" and "go build" in line:
            gobuild += re.findall(r"\s(\./[\w./-]+)", line.split("go build", 1)[1])
    return workdir, entry, copies, dests, gobuild


def in_image(path, workdir, dests, ctx):
    """The context file an absolute path of the image is (under WORKDIR, or a COPY destination)."""
    for dest, srcs in dests.items():
        if path == dest and len(srcs) == 1:
            return srcs[0]
    rel = os.path.relpath(path, workdir)
    return rel if not rel.startswith("..") and (ctx / rel).is_file() else None


def left_out(dockerfile, text=None):
    """['PATH (why)'] of what the image's entrypoints need that its COPY lines leave out."""
    builds = compose_builds()
    assert dockerfile in builds, f"{dockerfile}: no compose service builds it (no build context known)"
    ctx, overrides = builds[dockerfile]
    workdir, entry, copies, dests, gobuild = parse_dockerfile(text or (ROOT / dockerfile).read_text())
    starts = []
    for cmd in [entry, *overrides, *k8s_commands()]:
        for word in cmd[:2]:  # the program, or the script a shell is given
            if word.startswith("/") and (rel := in_image(word, workdir, dests, ctx)):
                starts.append((rel, f"runs {word}"))
                break
    assert entry and starts, f"{dockerfile}: its ENTRYPOINT names no file of the image"
    copied_js = [str(p.relative_to(ctx)) for s in copies if "*" in s for p in ctx.glob(s) if p.suffix == ".js"]
    starts += [(js, "a k6 script the image holds") for js in copied_js]
    needs = image_needs(ctx, starts)
    for pkg in gobuild:
        go_needs(ctx, pkg, needs)
    tracked = subprocess.run(["git", "ls-files", "--", "."], cwd=ctx, capture_output=True, text=True, check=True)
    tops = {line.split("/")[0] for line in tracked.stdout.splitlines()}
    ignore = ctx / ".dockerignore"
    ignored = {line.strip().rstrip("/") for line in ignore.read_text().splitlines()
               if line.strip() and not line.startswith("#")} if ignore.exists() else set()

    def covered(p):
        return any(p == s or p.startswith(s + "/") or s.startswith(p + "/")
                   or (p.count("/") == s.count("/") and fnmatch.fnmatch(p, s)) for s in copies)  # COPY's * stops at /
    return sorted(f"{p} ({why})" for p, why in needs.items()
                  if p.split("/")[0] in tops and p.split("/")[0] not in ignored and p not in ignored
                  and not covered(p))


def dockerfiles():
    out = subprocess.run(["git", "ls-files", "--", *DOCKERFILES], cwd=ROOT, capture_output=True, text=True, check=True)
    return [f for f in out.stdout.split() if Path(f).name.startswith("Dockerfile")]


@pytest.mark.parametrize("dockerfile", ["deploy/nightly/Dockerfile", "k6/Dockerfile"])
def test_each_image_holds_what_its_entrypoint_needs(dockerfile):
    assert sorted(dockerfiles()) == ["deploy/nightly/Dockerfile", "k6/Dockerfile"], \
        "a new Dockerfile: add it to this test's parameters"
    missing = left_out(dockerfile)
    by_top = {}
    for m in missing:
        by_top.setdefault(m.split("/")[0].split(" ")[0], []).append(m)
    assert not by_top, (f"{dockerfile} leaves out what its entrypoint needs (add a COPY):\n" + "\n".join(
        f"  {top}: {len(ms)} path(s), e.g. {ms[0]}" for top, ms in sorted(by_top.items())))


def test_the_image_check_derives_the_needs():
    # what the nightly image's entrypoints need, derived from the code, and a Dockerfile that
    # leaves one out
    text = (ROOT / "deploy/nightly/Dockerfile").read_text()
    ctx, _ = compose_builds()["deploy/nightly/Dockerfile"]
    needs = image_needs(ctx, [("scripts/nightly", "entrypoint"), ("k8s/nightly/tbs-nightly", "k8s")])
    tops = {p.split("/")[0] for p in needs}
    assert {"scripts", "tidbbench", "tools", "k6", "plans", "k8s", "pyproject.toml"} <= tops, sorted(tops)
    assert "tidbbench/requirements.txt" in needs and "tests/requirements.txt" not in needs
    assert "tidbbench/sweep/cli.py" in needs and "tidbbench/history/cli.py" in needs and "tidbbench/merge.py" in needs
    assert "scripts/lib/common.sh" in needs and "k8s/render-testrun" in needs
    without = "\n".join(line for line in text.splitlines() if not line.startswith("COPY plans "))
    assert any(m.startswith("plans/nightly.json ") for m in left_out("deploy/nightly/Dockerfile", without)), \
        left_out("deploy/nightly/Dockerfile", without)
    k6 = "\n".join(line for line in (ROOT / "k6/Dockerfile").read_text().splitlines() if line != "COPY lib ./lib")
    assert "lib/config.js (prepare.js)" in left_out("k6/Dockerfile", k6), left_out("k6/Dockerfile", k6)
    go = {}
    go_needs(ROOT / "k6", "./cmd/k6", go)
    assert {"cmd/k6", "ext/tbs", "ext/launch", "ext/results", "driver/mysql", "go.mod"} <= set(go), go


# Issue 45 (the suite's time): scripts/test runs its setup in lanes side by side, and apt's lock
# fails instead of waiting, so every apt-get on this machine goes through common.sh's
# apt_install (one apt at a time). A Dockerfile's RUN apt-get (inside an image) is not this
# machine's apt.
APT_ALLOWED = {"scripts/lib/common.sh"}


def raw_apt_calls(files):
    """[(path, line number, line)] of the apt-get install/update calls outside apt_install and
    outside a Dockerfile being written (a line in a heredoc or printf for an image)."""
    out = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if rel in APT_ALLOWED:
            continue
        in_heredoc = None
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if in_heredoc:
                if line.strip() == in_heredoc:
                    in_heredoc = None
                continue
            m = re.search(r"<<-?'?(\w+)'?", line)
            if m:
                in_heredoc = m.group(1)
            code = line.split("#", 1)[0]
            if re.search(r"\bapt-get\s+(-\S+\s+)*(install|update)\b", code) and "echo " not in code:
                out.append((rel, n, line.strip()))
    return out


def shell_scripts():
    files = subprocess.run(["git", "ls-files", "scripts", "tests/compose-engine", "tools", "deploy"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    out = []
    for f in files:
        p = ROOT / f
        if p.is_file() and (f.endswith(".sh") or p.read_bytes()[:40].startswith(b"#!/usr/bin/env bash")):
            out.append(p)
    return out


def test_every_apt_on_this_machine_goes_through_apt_install():
    scripts = shell_scripts()
    assert ROOT / "scripts/test" in scripts and ROOT / "tests/compose-engine/build-standins" in scripts
    assert raw_apt_calls(scripts) == []


def test_the_apt_check_finds_a_raw_apt_get():
    bad = ROOT / "scripts/test-setup.d/30-lint.sh"
    text = bad.read_text().replace('apt_install "${pkgs[@]}"',
                                   'apt-get update -qq && apt-get install -y -qq "${pkgs[@]}"')
    assert text != bad.read_text()
    copy = ROOT / "scripts/test-setup.d" / f".mut-{os.getpid()}.sh"
    copy.write_text(text)
    try:
        found = raw_apt_calls([copy, ROOT / "tests/compose-engine/build-standins"])
    finally:
        copy.unlink()
    assert [n for _, n, _ in found] == [n for n, line in enumerate(text.splitlines(), 1) if "apt-get update -qq &&" in line]
