"""Helpers (no tests here) shared by the dashboard tests (test_dashboards, test_dashboards_live,
test_pingcap_dashboards, test_resources) and scripts/test-setup.d/50-dashboards.sh.

Reads the generated dashboards, lists every query they run (panel targets, annotations and
variable queries), substitutes Grafana's variables with concrete values, and drives the
exprcheck parser (tests/tools/exprcheck, the real PromQL and LogQL parsers).
"""
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRAFANA = os.path.join(ROOT, "grafana")
DASHBOARDS_DIR = os.path.join(GRAFANA, "dashboards")
EXPRCHECK_DIR = os.path.join(ROOT, "tests", "tools", "exprcheck")


def cache_dir():
    base = os.environ.get("TBS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tidb-bench-stack")
    return os.path.join(base, "bin")


def dashboard_files():
    return sorted(glob.glob(os.path.join(DASHBOARDS_DIR, "*", "*.json")))


def load_dashboards(sql=True):
    """{relative path: dashboard dict} for every committed dashboard; sql=False leaves out the
    ones that read the history store (SQL: tests/test_history_dashboard.py runs their queries)."""
    out = {}
    for f in dashboard_files():
        with open(f, encoding="utf-8") as fh:
            d = json.load(fh)
        if sql or not any(q.lang == "sql" for q in queries(d)):
            out[os.path.relpath(f, DASHBOARDS_DIR)] = d
    return out


def panels(dash):
    """Every panel, rows' nested panels included (rows themselves excluded)."""
    for p in dash.get("panels", []):
        if p.get("type") == "row":
            yield from p.get("panels", [])
        else:
            yield p


def ds_lang(ds):
    t = (ds or {}).get("type")
    return {"prometheus": "promql", "loki": "logql", "grafana-postgresql-datasource": "sql"}.get(t)


class Query:
    """One query a dashboard runs: where it is, its language and expression."""

    def __init__(self, dash, where, lang, expr, kind, panel=None, target=None, annotation=None,
                 variable=None):
        self.dash, self.where, self.lang, self.expr, self.kind = dash, where, lang, expr, kind
        self.panel, self.target, self.annotation, self.variable = panel, target, annotation, variable

    @property
    def id(self):
        return f"{self.dash['uid']}: {self.where}"

    @property
    def instant(self):
        return bool(self.target and self.target.get("instant"))

    def __repr__(self):
        return f"<{self.id} {self.expr!r}>"


LABEL_VALUES = re.compile(r"^\s*label_values\((?:(?P<expr>.*),\s*)?(?P<label>[A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$",
                          re.S)


def queries(dash):
    """Every query of a dashboard: panel targets, annotations, Prometheus variable queries, and
    the SQL of the history store's (lang "sql": target rawSql, annotations, variable queries)."""
    out = []
    for p in panels(dash):
        for t in p.get("targets", []):
            ds = t.get("datasource") or p.get("datasource")
            out.append(Query(dash, f"panel '{p['title']}' target {t['refId']}", ds_lang(ds),
                             t["rawSql"] if ds_lang(ds) == "sql" else t["expr"], "target", panel=p, target=t))
    for a in dash.get("annotations", {}).get("list", []):
        expr = (a.get("target") or {}).get("expr") or a.get("expr") or (a.get("target") or {}).get("rawSql")
        if expr:
            out.append(Query(dash, f"annotation '{a['name']}'", ds_lang(a.get("datasource")), expr,
                             "annotation", annotation=a))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        lang = ds_lang(v.get("datasource"))
        if lang == "sql":
            out.append(Query(dash, f"variable '{v['name']}'", "sql", v["query"], "variable", variable=v))
        elif lang == "promql":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = LABEL_VALUES.match(q)
            assert m, f"{dash['uid']}: variable {v['name']}: unsupported query {q!r}"
            if m.group("expr"):
                out.append(Query(dash, f"variable '{v['name']}'", "promql", m.group("expr"),
                                 "variable", variable=v))
    return out


VAR_RE = re.compile(r"\$\{(\w+)(?::([^}]*))?\}|\$(\w+)|\[\[(\w+)\]\]")


def substitute(expr, values):
    """Replace Grafana variables ($x, ${x}, ${x:fmt}, [[x]]) by values[x] (values["x:fmt"] where
    given, e.g. "__to:date:H"); KeyError if unknown."""
    def rep(m):
        name = m.group(1) or m.group(3) or m.group(4)
        if m.group(2) and f"{name}:{m.group(2)}" in values:
            return values[f"{name}:{m.group(2)}"]
        return values[name]
    return VAR_RE.sub(rep, expr)


def variables_used(expr):
    return {m.group(1) or m.group(2) or m.group(3) for m in VAR_RE.finditer(expr)}


# Grafana's built-in variables, with the values a dashboard over a 1-hour range would give.
BUILTIN_STATIC = {"__rate_interval": "20s", "__interval": "5s", "__range": "3600s",
                  "__range_s": "3600", "__range_ms": "3600000", "__interval_ms": "5000",
                  "__auto": "5s"}


def static_values(dash):
    """A value for every variable of a dashboard as Grafana would send it: the 'All' value for
    include-all variables, the default of custom and textbox ones, a sample otherwise."""
    vals = dict(BUILTIN_STATIC)
    for v in dash.get("templating", {}).get("list", []):
        name = v["name"]
        if v.get("includeAll"):
            vals[name] = v.get("allValue") or ".*"
        elif v["type"] in ("custom", "textbox"):
            vals[name] = (v.get("current") or {}).get("value", "")
        else:
            vals[name] = "static-sample"
    return vals


# ---------------------------------------------------------------------------------------------
# exprcheck: the real PromQL (prometheus/promql/parser) and LogQL (loki/pkg/logql/syntax) parsers
# ---------------------------------------------------------------------------------------------
def exprcheck_binary():
    """Path of the exprcheck binary for the current sources, built with Go if missing.
    Raises (so tests fail) when Go is not installed."""
    h = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        with open(os.path.join(EXPRCHECK_DIR, name), "rb") as f:
            h.update(f.read())
    path = os.path.join(cache_dir(), f"exprcheck-{h.hexdigest()[:16]}")
    if os.path.exists(path):
        return path
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if not go:
        raise RuntimeError("go is not installed: it is needed to build tests/tools/exprcheck "
                           "(scripts/test-setup.d/50-dashboards.sh installs what it needs)")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    subprocess.run([go, "build", "-trimpath", "-o", path + ".tmp", "."], cwd=EXPRCHECK_DIR,
                   check=True, env={**os.environ, "CGO_ENABLED": "0"})
    os.replace(path + ".tmp", path)
    return path


def exprcheck(items):
    """items: [{"id", "lang", "expr"}] -> results in the same order (see exprcheck/main.go)."""
    out = subprocess.run([exprcheck_binary()], input=json.dumps(items), capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)
