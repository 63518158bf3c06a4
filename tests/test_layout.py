"""Issue 30: the Python is one package, tidbbench/, with one import style and no import cycle; it
imports neither tools/ nor tests/; what runs outside the venv (compose's plain Python image,
scripts/stack before the venv exists) needs only the standard library; scripts/lib holds no
Python; pyproject.toml installs every subpackage. Static: reads the modules' syntax trees
(imports inside functions count too: a cycle hidden in a function is still a cycle)."""
import ast
import sys
import tomllib

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
