"""Static checks of the Grafana dashboards and their provisioning (issue #5).

No service is needed, but the real parsers are: tests/tools/exprcheck (Go: the PromQL parser of the
Prometheus release the stack runs, and Loki's LogQL parser; built on first use) and promtool (of the Prometheus the stack runs:
bin/promtool, else Debian's `prometheus` package). A missing tool fails these tests; it does not skip them.
The one test that skips is the Grafana server test, when no grafana-server is on PATH.
"""
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml

import dashtools as dt
from conftest import stop_process
from tidbbench.dash import pingcap  # PingCAP's dashboards, prepared at start (tests/test_pingcap_dashboards.py)

pytestmark = pytest.mark.fast

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GRAFANA = os.path.join(ROOT, "grafana")
PROVISIONING = os.path.join(GRAFANA, "provisioning")
# The TiDB exposition lives in shared/fixtures/, beside the repository (CI clones it that way;
# TBS_FIXTURES points elsewhere). A plain clone has no shared/: the tests that read it skip, saying so.
FIXTURES = os.environ.get("TBS_FIXTURES") or os.path.join(os.path.dirname(ROOT), "shared", "fixtures")
TIDB_FIXTURE = os.path.join(FIXTURES, "tidb-metrics.txt")

# The dashboards and their uids: stable, readable, linked to from docs and from each other.
EXPECTED_UIDS = {
    "benchmark/benchmark-run.json": "tbs-benchmark-run",
    "benchmark/run-compare.json": "tbs-run-compare",
    "databases/tidb.json": "tbs-tidb",
    "databases/mysql.json": "tbs-mysql",
    "hosts/hosts.json": "tbs-hosts",
    "logs/logs.json": "tbs-logs",
    "history/history.json": "tbs-history",
}

# Real TiKV and PD expositions (their /metrics), when shared/fixtures/ has them: TiKV and PD
# cannot be installed here (no binaries, and the Go module proxy refuses github.com/tikv/pd), and
# a list of their metrics written by hand proves nothing, so the TiKV/PD panel check runs only
# against these files.
TIKV_PD_FIXTURES = [os.path.join(os.path.dirname(TIDB_FIXTURE), f) for f in ("tikv-metrics.txt", "pd-metrics.txt")]
# Labels Prometheus adds to every scraped series (target labels), not the exporter.
TARGET_LABELS = {"job", "instance"}
# Series Prometheus itself synthesizes for every target.
SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}


@pytest.fixture(scope="module")
def dashboards():
    return dt.load_dashboards()


@pytest.fixture(scope="module")
def all_queries(dashboards):
    return [q for d in dashboards.values() for q in dt.queries(d)]


@pytest.fixture(scope="module")
def parsed(all_queries, dashboards):
    """Every PromQL and LogQL query with the dashboard's variables substituted, parsed by exprcheck
    (the History dashboard's SQL runs against a real store in tests/test_history_dashboard.py)."""
    items = []
    all_queries = [q for q in all_queries if q.lang in ("promql", "logql")]
    for i, q in enumerate(all_queries):
        expr = dt.substitute(q.expr, dt.static_values(q.dash))
        items.append({"id": str(i), "lang": q.lang, "expr": expr})
    results = dt.exprcheck(items)
    return list(zip(all_queries, items, results))


# ------------------------------------------------------------------------------ files and uids
def test_json_well_formed_and_complete():
    files = dt.dashboard_files()
    assert sorted(os.path.relpath(f, dt.DASHBOARDS_DIR) for f in files) == sorted(EXPECTED_UIDS)
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        d = json.loads(text)  # raises on malformed JSON
        assert isinstance(d, dict) and d.get("title") and d.get("panels"), f
        assert "${DS_" not in text and "__inputs" not in d, f"{f}: uses ${{DS_...}} inputs"
        ids = [p["id"] for p in d["panels"]]
        assert len(ids) == len(set(ids)), f"{f}: duplicate panel ids"


def test_uids_unique_readable_and_stable(dashboards):
    uids = {rel: d["uid"] for rel, d in dashboards.items()}
    assert uids == EXPECTED_UIDS
    assert len(set(uids.values())) == len(uids)
    for uid in uids.values():
        assert re.fullmatch(r"tbs-[a-z0-9-]+", uid) and len(uid) <= 40, uid


def provisioned_datasources():
    with open(os.path.join(PROVISIONING, "datasources", "datasources.yaml"), encoding="utf-8") as f:
        return {d["uid"]: d for d in yaml.safe_load(f)["datasources"]}


def datasource_refs(node, path=""):
    """Every {"type", "uid"} datasource reference anywhere in a dashboard."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "datasource":
                yield path, v
            yield from datasource_refs(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from datasource_refs(v, f"{path}[{i}]")


def test_datasource_uids_exist_in_provisioning(dashboards):
    ds = provisioned_datasources()
    assert {"prometheus", "loki", "history"} <= set(ds)
    assert ds["prometheus"]["url"] == "${PROMETHEUS_URL}" and ds["loki"]["url"] == "${LOKI_URL}"
    # the history store: its address from the environment, its password never in the file
    h = ds["history"]
    assert h["type"] == "grafana-postgresql-datasource" and h["url"] == "${HISTORY_DB_URL}"
    assert h["user"] == "tbs_history_reader" and h["jsonData"]["database"] == "tbs_history"
    assert h["secureJsonData"] == {"password": "${GF_TBS_HISTORY_DB_PASSWORD}"}
    n = 0
    for rel, d in dashboards.items():
        for path, ref in datasource_refs(d):
            n += 1
            assert isinstance(ref, dict), f"{rel}{path}: datasource must be referenced by uid: {ref!r}"
            assert ref.get("uid") in ds, f"{rel}{path}: unknown datasource uid {ref!r}"
            assert ref.get("type") == ds[ref["uid"]]["type"], f"{rel}{path}: type mismatch {ref!r}"
    assert n > 50


def test_providers_one_folder_per_concern():
    files = [f for f in os.listdir(os.path.join(PROVISIONING, "dashboards")) if f.endswith((".yaml", ".yml"))]
    assert files
    providers = []
    for f in files:
        with open(os.path.join(PROVISIONING, "dashboards", f), encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        assert doc["apiVersion"] == 1
        providers += doc["providers"]
    folders = sorted(os.listdir(dt.DASHBOARDS_DIR))
    covered = []
    for p in providers:
        assert p["type"] == "file" and p["folder"] and p["folderUid"], p
        path = p["options"]["path"]
        if p["name"] == "pingcap":
            # PingCAP's dashboards, prepared at start (tests/test_pingcap_dashboards.py)
            assert path == "${GRAFANA_PINGCAP_DASHBOARDS}", path
            continue
        m = re.fullmatch(r"\$\{?GRAFANA_DASHBOARDS\}?/([a-z0-9-]+)", path)
        assert m, f"provider {p['name']}: path must be $GRAFANA_DASHBOARDS/<folder>: {path}"
        covered.append(m.group(1))
        # As Grafana expands it for the local stack (GRAFANA_DASHBOARDS=<repo>/grafana/dashboards).
        local = path.replace("${GRAFANA_DASHBOARDS}", dt.DASHBOARDS_DIR).replace("$GRAFANA_DASHBOARDS", dt.DASHBOARDS_DIR)
        assert [f for f in os.listdir(local) if f.endswith(".json")], local
    assert sorted(covered) == folders, "every dashboards/<folder> has exactly one provider"
    assert "pingcap" in {p["name"] for p in providers}
    assert len({p["name"] for p in providers}) == len(providers)
    assert len({p["folderUid"] for p in providers}) == len(providers)


def test_links_point_at_existing_dashboards(dashboards):
    uids = {d["uid"] for d in dashboards.values()} | {pingcap.uid(n) for n in pingcap.DASHBOARDS}
    n = 0
    for rel, d in dashboards.items():
        for uid in re.findall(r"/d/([A-Za-z0-9_-]+)", json.dumps(d)):
            n += 1
            assert uid in uids, f"{rel}: link to unknown dashboard {uid}"
        for link in d.get("links", []):
            assert link["type"] == "dashboards" and "tbs" in link["tags"] and link["keepTime"]
    assert n >= 5


# ------------------------------------------------------------------------------ panel rules
def test_every_panel_has_unit_and_one_line_description(dashboards):
    n = 0
    for rel, d in dashboards.items():
        for p in dt.panels(d):
            n += 1
            desc = p.get("description", "")
            assert desc.strip() and "\n" not in desc, f"{rel}: panel {p['title']!r}: one-line description"
            unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit")
            assert isinstance(unit, str) and unit, f"{rel}: panel {p['title']!r} has no unit"
            for o in p["fieldConfig"].get("overrides", []):
                for prop in o["properties"]:
                    if prop["id"] == "unit":
                        assert prop["value"], f"{rel}: {p['title']!r}: empty unit override"
    assert n >= 60


RANGE_FN = re.compile(r"\b(rate|irate|increase|delta|idelta|deriv)\((?:[^()\[\]]|\([^()]*\))*?\[([^\]]+)\]")


def test_rate_queries_use_rate_interval(all_queries):
    checked = 0
    for q in all_queries:
        if q.lang != "promql":
            continue
        for fn, window in RANGE_FN.findall(q.expr):
            checked += 1
            assert window == "$__rate_interval", f"{q.id}: {fn}(...[{window}]) must use $__rate_interval"
    assert checked > 40


def test_latency_quantiles_come_from_histograms(parsed):
    n = 0
    for q, item, r in parsed:
        if "histogram_quantile" not in q.expr:
            continue
        n += 1
        metrics = {s["metric"] for s in r["selectors"]}
        assert all(m.endswith("_bucket") or m in ("k6_oltp_latency_seconds", "k6_oltp_response_latency_seconds",
                                                  "k6_tpcc_latency_seconds")
                   for m in metrics), \
            f"{q.id}: quantile of something other than a histogram: {metrics}"
    assert n >= 12
    # and every latency/duration panel computes its latency figures from a histogram
    by_panel = {}
    for q, item, r in parsed:  # (PromQL and LogQL: the History dashboard's p95 is the store's figure)
        if q.kind == "target" and re.search(r"latency|duration|p95|p99", q.panel["title"], re.I):
            by_panel.setdefault(q.id.rsplit(" target ", 1)[0], []).append(q.expr)
    assert len(by_panel) >= 10
    for pid, exprs in by_panel.items():
        assert any(re.search(r"histogram_(quantile|sum|count)", e) for e in exprs), pid


# ------------------------------------------------------------------------------ parsers
def test_exprcheck_parses_promql_with_the_stacks_prometheus_version():
    """exprcheck's PromQL parser is the module of the Prometheus the stack runs."""
    with open(os.path.join(ROOT, "scripts", "lib", "versions.sh"), encoding="utf-8") as f:
        m = re.search(r"^PROMETHEUS_MODULE_VERSION=(\S+)", f.read(), re.M)
    assert m, "scripts/lib/versions.sh pins no PROMETHEUS_MODULE_VERSION"
    with open(os.path.join(dt.EXPRCHECK_DIR, "go.mod"), encoding="utf-8") as f:
        mod = re.search(r"^\s*github.com/prometheus/prometheus (\S+)", f.read(), re.M)
    assert mod and mod.group(1) == m.group(1), \
        f"tests/tools/exprcheck/go.mod has prometheus {mod and mod.group(1)}, the stack runs {m.group(1)}"


@pytest.mark.parametrize("lang,at_least", [("promql", 101), ("logql", 3)])
def test_every_expression_parses(parsed, lang, at_least):
    n = 0
    for q, item, r in parsed:
        if q.lang == lang:
            n += 1
            assert r["ok"], f"{q.id}: {r.get('error')}\n  {item['expr']}"
    assert n >= at_least


def test_exprcheck_rejects_bad_expressions():
    """The parser really parses: broken PromQL and LogQL are reported, not waved through."""
    res = dt.exprcheck([
        {"id": "1", "lang": "promql", "expr": "sum(rate(x[5m])"},
        {"id": "2", "lang": "promql", "expr": 'rate(x{a="b"}[$__rate_interval])'},
        {"id": "3", "lang": "logql", "expr": '{service=~".*"}'},  # Loki refuses an all-empty matcher
        {"id": "4", "lang": "logql", "expr": 'sum by (service) (count_over_time({service="k6"}[1m]))'},
    ])
    assert [r["ok"] for r in res] == [False, False, False, True]


def stack_promtool():
    """The promtool of the Prometheus the local stack runs: bin/promtool when the project built
    its Prometheus (scripts/build prometheus), else the one on PATH (Debian's package)."""
    own = os.path.join(ROOT, "bin", "promtool")
    if os.access(own, os.X_OK):
        return own
    found = shutil.which("promtool")
    return found if found and os.access(os.path.realpath(found), os.X_OK) else None


def test_promql_parses_with_the_stacks_prometheus(parsed, tmp_path):
    """The promtool of the Prometheus the stack runs parses every expression: each becomes a
    recording rule and `promtool check rules` validates it."""
    promtool = stack_promtool()
    assert promtool, ("promtool is missing: scripts/build prometheus, or Debian's prometheus "
                      "package (scripts/test-setup.d/50-dashboards.sh installs it)")
    rules = [{"record": f"tbs:check_{i}", "expr": item["expr"]}
             for i, (q, item, r) in enumerate(parsed) if q.lang == "promql"]
    f = tmp_path / "rules.yml"
    f.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    out = subprocess.run([promtool, "check", "rules", str(f)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(rules)} rules found" in out.stdout


# ------------------------------------------------------------------------------ drift
def test_generated_json_equals_committed_json(tmp_path):
    subprocess.run([sys.executable, "-m", "tidbbench.dash.generate", "--out", str(tmp_path)],
                   check=True, capture_output=True)
    generated = sorted(os.path.relpath(os.path.join(d, f), tmp_path)
                       for d, _, fs in os.walk(tmp_path) for f in fs)
    committed = sorted(os.path.relpath(f, dt.DASHBOARDS_DIR) for f in dt.dashboard_files())
    assert generated == committed, "run python3 -m tidbbench.dash.generate and commit the result"
    for rel in generated:
        with open(tmp_path / rel, encoding="utf-8") as a, open(os.path.join(dt.DASHBOARDS_DIR, rel), encoding="utf-8") as b:
            assert a.read() == b.read(), f"{rel} drifted from tidbbench/dash/generate.py: regenerate and commit"


# ------------------------------------------------------------------------------ annotations, variables
def test_run_annotations_on_every_dashboard(dashboards):
    """Every dashboard of Prometheus' series marks the runs (History marks its change points:
    tests/test_history_dashboard.py)."""
    checked = 0
    for rel, d in dashboards.items():
        if rel == "history/history.json":
            continue
        checked += 1
        names = {v["name"] for v in d["templating"]["list"]}
        assert "testid" in names, f"{rel}: annotations need the testid variable"
        annos = {a["name"]: a for a in d["annotations"]["list"]}
        assert set(annos) >= {"Run start / end", "Thread steps"}, rel
        for a in annos.values():
            assert a["datasource"] == {"type": "prometheus", "uid": "prometheus"}
            assert a["useValueForTime"] is True and a["enable"] is True
            expr = a["target"]["expr"]
            assert expr == a["expr"] and "k6_oltp_marker" in expr and 'testid=~"$testid"' in expr
        se = annos["Run start / end"]
        assert 'event=~"run_start|run_end"' in se["expr"]
        assert "{{version}}" in se["textFormat"] and "{{workload}}" in se["textFormat"]
        st = annos["Thread steps"]
        assert 'event="step_start"' in st["expr"] and "{{threads}}" in st["titleFormat"]
    assert checked == len(EXPECTED_UIDS) - 1


def test_benchmark_variables_from_k6_series(dashboards):
    """The run dashboard's variables list the runs of k6/oltp.js (their queries) and of k6/tpcc.js
    (their transactions) alike."""
    d = dashboards["benchmark/benchmark-run.json"]
    v = {x["name"]: x for x in d["templating"]["list"]}
    runs = '__name__=~"k6_oltp_queries_total|k6_tpcc_transactions_total"'
    assert v["testid"]["query"]["query"] == f"label_values({{{runs}}}, testid)"
    for name in ("workload", "version", "threads"):
        assert v[name]["query"]["query"] == f'label_values({{{runs}, testid="$testid"}}, {name})', name


def test_step_table_follows_the_contract(dashboards):
    d = dashboards["benchmark/benchmark-run.json"]
    table = next(p for p in dt.panels(d) if p["title"] == "Thread steps")
    exprs = {t["refId"]: t["expr"] for t in table["targets"]}
    assert all(t["instant"] and t["format"] == "table" for t in table["targets"])
    for e in exprs.values():
        assert 'warmup="false"' in e and "[$__range]" in e
    for ref in ("A", "B"):  # QPS, TPS: counter totals of the phase over its measured seconds
        assert "max_over_time(k6_oltp_" in exprs[ref]
        assert 'event="measure_end"' in exprs[ref] and 'event="measure_start"' in exprs[ref]
    assert "k6_oltp_queries_total" in exprs["A"] and "k6_oltp_transactions_total" in exprs["B"]
    assert exprs["C"].startswith("histogram_quantile(0.95") and "last_over_time(k6_oltp_latency_seconds" in exprs["C"]
    assert "k6_oltp_errors_total" in exprs["D"]
    org = next(t for t in table["transformations"] if t["id"] == "organize")["options"]["renameByName"]
    assert [org[k] for k in ("threads", "Value #A", "Value #B", "Value #C", "Value #D")] == \
        ["Threads", "QPS", "TPS", "p95 (ms)", "errors"]


TPCC_PANELS = {"TPC-C thread steps", "TPC-C per transaction type", "tpmC and tpmTotal", "tpmC by thread step",
               "TPC-C p95 latency by transaction type", "TPC-C p99 latency by transaction type",
               "TPC-C errors by transaction type"}


def test_tpcc_panels_follow_the_contract(dashboards):
    """k6/tpcc.js's panels (docs/tpcc.md): every one reads k6_tpcc_* series only and says why it
    is empty for an OLTP run; tpmC is 60 x New-Orders committed over the measured seconds with
    contract/promql.json's tpcc_step queries; latency from the native histogram."""
    from tidbbench import contract
    d = dashboards["benchmark/benchmark-run.json"]
    tpcc = [p for p in dt.panels(d) if "k6_tpcc_" in json.dumps(p.get("targets"))]
    assert {p["title"] for p in tpcc} == TPCC_PANELS
    for p in tpcc:
        assert p["fieldConfig"]["defaults"]["noValue"] == "no data: not a TPC-C run (k6/tpcc.js)", p["title"]
        for t in p["targets"]:
            assert "k6_oltp_" not in t["expr"].replace("k6_oltp_marker", ""), (p["title"], t["expr"])
    q = contract.promql()["tpcc_step"]["queries"]
    steps = {t["refId"]: t["expr"] for t in next(p for p in tpcc if p["title"] == "TPC-C thread steps")["targets"]}
    tx = q["transactions"].replace("<BY>", " by (threads) ").replace("[<RANGE>]", "[$__range]")
    sel = 'testid="$testid", workload=~"$workload", version=~"$version", threads=~"$threads", warmup="false"'
    assert steps["A"].startswith("60 * " + tx.replace("<SEL>", sel + ', txn="new_order"') + " / on (threads)")
    assert steps["B"].startswith("60 * " + tx.replace("<SEL>", sel) + " / on (threads)")
    for ref in "AB":
        assert 'event="measure_end"' in steps[ref] and 'event="measure_start"' in steps[ref]
    assert steps["C"].startswith("histogram_quantile(0.95") and 'txn="new_order"' in steps["C"]
    assert steps["D"].startswith("histogram_quantile(0.99") and "k6_tpcc_latency_seconds" in steps["D"]
    assert "k6_tpcc_errors_total" in steps["E"]
    per_type = next(p for p in tpcc if p["title"] == "TPC-C per transaction type")
    assert all("by (threads, txn)" in t["expr"] for t in per_type["targets"])
    # the OLTP panels carry no such text: an empty OLTP panel on a TPC-C run is Grafana's plain "No data"
    assert not [p["title"] for p in dt.panels(d) if p not in tpcc and p["fieldConfig"]["defaults"].get("noValue")]


# ------------------------------------------------------------------------------ TiDB, TiKV, PD
def parse_exposition(path):
    """{sample name: {label: set(values)}} of a Prometheus text exposition."""
    fams = {}
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+\S+')
    lab_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            m = line_re.match(line)
            assert m, line
            labels = fams.setdefault(m.group(1), {})
            for k, v in lab_re.findall(m.group(3) or ""):
                labels.setdefault(k, set()).add(v)
    return fams


def matcher_ok(m, values):
    if m["type"] == "=":
        return m["value"] in values
    if m["type"] == "=~":
        return any(re.fullmatch(m["value"], v) for v in values)
    return True  # != and !~ exclude; they need only the label to exist


def legend_labels(q):
    return set(re.findall(r"\{\{\s*(\w+)\s*\}\}", (q.target or {}).get("legendFormat", "")))


def test_tidb_panels_use_metrics_and_labels_tidb_exports(parsed):
    if not os.path.exists(TIDB_FIXTURE):
        pytest.skip(f"no real TiDB exposition at {TIDB_FIXTURE}: ../shared/fixtures beside the checkout (or "
                    "TBS_FIXTURES) holds it; a plain clone does not, so the TiDB panels' metrics are not checked "
                    "(not counted)")
    fams = parse_exposition(TIDB_FIXTURE)
    assert "tidb_server_query_total" in fams  # a real TiDB exposition
    checked = 0
    for q, item, r in parsed:
        tidb_sel = [s for s in r["selectors"]
                    if s["metric"].startswith("tidb_")
                    or any(m["name"] == "job" and m["value"] == "tidb" for m in s["matchers"])]
        if not tidb_sel:
            continue
        metrics = set()
        for s in tidb_sel:
            if s["metric"] in SYNTHETIC:
                continue
            checked += 1
            assert s["metric"] in fams, f"{q.id}: TiDB exports no metric {s['metric']}"
            labels = fams[s["metric"]]
            metrics.add(s["metric"])
            for m in s["matchers"]:
                if m["name"] in TARGET_LABELS:
                    continue
                assert m["name"] in labels, f"{q.id}: {s['metric']} has no label {m['name']}"
                assert matcher_ok(m, labels[m["name"]]), \
                    f"{q.id}: {s['metric']}{{{m['name']}{m['type']}{m['value']!r}}} matches nothing TiDB exports"
        for g in r["groupings"]:
            gm = [x for x in g["metrics"] if x in fams]
            for lab in g["labels"]:
                if lab in TARGET_LABELS or not gm:
                    continue
                assert any(lab in fams[x] for x in gm), f"{q.id}: no TiDB metric of {gm} has label {lab}"
        for lab in legend_labels(q) - TARGET_LABELS:
            if metrics and q.kind == "target":
                assert any(lab in fams[x] for x in metrics), \
                    f"{q.id}: legend label {lab} is on none of {metrics}"
    assert checked >= 15


def test_tikv_and_pd_panels_use_metrics_from_their_sources(parsed):
    """Every tikv_*/pd_* metric a panel names is in a real TiKV or PD exposition, with the labels
    (and, for = and =~ matchers, a label value) the panel uses."""
    missing = [f for f in TIKV_PD_FIXTURES if not os.path.exists(f)]
    if missing:
        pytest.skip(f"no real TiKV/PD exposition ({', '.join(missing)} missing): TiKV and PD cannot be "
                    "installed here, so their panels' metrics are not checked (not counted)")
    fams = {}
    for f in TIKV_PD_FIXTURES:
        fams.update(parse_exposition(f))
    checked = 0
    for q, item, r in parsed:
        for s in r["selectors"]:
            name = s["metric"]
            if not name.startswith(("tikv_", "pd_")):
                continue
            checked += 1
            assert name in fams, f"{q.id}: {name} is in no TiKV or PD exposition"
            for m in s["matchers"]:
                if m["name"] in TARGET_LABELS:
                    continue
                assert m["name"] in fams[name], f"{q.id}: {name} has no label {m['name']}"
                if m["type"] in ("=", "=~"):
                    assert matcher_ok(m, fams[name][m["name"]]), \
                        f"{q.id}: {name} {m['name']}{m['type']}{m['value']!r} matches no value it has"
        for g in r["groupings"]:
            gm = [x for x in g["metrics"] if x in fams]
            for lab in g["labels"]:
                if lab not in TARGET_LABELS and gm:
                    assert any(lab in fams[x] for x in gm), f"{q.id}: label {lab} not in {gm}"
    assert checked >= 12


# ------------------------------------------------------------------------------ Grafana server
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_grafana_server_provisions_every_dashboard(dashboards, tmp_path):
    """Provisions a real Grafana with grafana/ and fetches each dashboard by uid."""
    binary = shutil.which("grafana-server")
    if not binary:
        pytest.skip("no grafana-server on PATH: Grafana cannot be installed on this machine (no Debian "
                    "package, not on PyPI or npm), so provisioning is not exercised (not counted); the "
                    "dashboards are checked statically and their queries against the local stack")
    home = os.environ.get("GRAFANA_HOME") or next(
        (p for p in ("/usr/share/grafana", os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(binary))))) if os.path.isdir(os.path.join(p, "conf"))),
        "/usr/share/grafana")
    port = free_port()
    env = {**os.environ,
           "PROMETHEUS_URL": "http://127.0.0.1:9090", "LOKI_URL": "http://127.0.0.1:3100",
           "HISTORY_DB_URL": "127.0.0.1:5432", "GF_TBS_HISTORY_DB_PASSWORD": "tbs-test-only",
           "GRAFANA_DASHBOARDS": dt.DASHBOARDS_DIR,
           "GRAFANA_PINGCAP_DASHBOARDS": str(tmp_path / "pingcap"),
           "GF_PATHS_PROVISIONING": PROVISIONING, "GF_PATHS_DATA": str(tmp_path / "data"),
           "GF_PATHS_LOGS": str(tmp_path / "logs"), "GF_PATHS_PLUGINS": str(tmp_path / "plugins"),
           "GF_SERVER_HTTP_ADDR": "127.0.0.1", "GF_SERVER_HTTP_PORT": str(port),
           "GF_SECURITY_ADMIN_USER": "admin", "GF_SECURITY_ADMIN_PASSWORD": "tbs-test-only",
           "GF_ANALYTICS_REPORTING_ENABLED": "false", "GF_ANALYTICS_CHECK_FOR_UPDATES": "false"}
    log = open(tmp_path / "grafana.log", "w")
    proc = subprocess.Popen([binary, "--homepath", home], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    auth = "Basic " + base64.b64encode(b"admin:tbs-test-only").decode()

    def get(path):
        req = urllib.request.Request(base + path, headers={"Authorization": auth})
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.load(resp)
    try:
        deadline = time.time() + 120
        while True:
            try:
                if get("/api/health").get("database") == "ok":
                    break
            except OSError:
                pass
            assert proc.poll() is None, (tmp_path / "grafana.log").read_text()[-3000:]
            assert time.time() < deadline, "Grafana did not start in 120 s"
            time.sleep(1)
        ds = {d["uid"] for d in get("/api/datasources")}
        assert {"prometheus", "loki", "history"} <= ds
        for rel, d in dashboards.items():
            deadline = time.time() + 60
            while True:
                try:
                    got = get(f"/api/dashboards/uid/{d['uid']}")
                    break
                except urllib.error.HTTPError as e:
                    assert e.code == 404 and time.time() < deadline, f"{d['uid']}: HTTP {e.code}"
                    time.sleep(1)
            assert got["dashboard"]["title"] == d["title"]
            assert got["meta"]["provisioned"] is True
            assert len(list(dt.panels(got["dashboard"]))) == len(list(dt.panels(d)))
    finally:
        stop_process(proc)
        log.close()
