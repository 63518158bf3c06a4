"""Live checks of the dashboards on the local stack (issue #5).

Two real 2-step sysbench runs with our k6 — oltp_read_write against the local TiDB and against
the local MariaDB (conftest.py's read_write_runs, which test_resources reads too) — then every panel, annotation and variable query that concerns the local
stack (TiKV and PD need the compose cluster) is run against Prometheus and Loki with the
dashboard variables set to those runs, and must return data. The step table's QPS per step must
equal k6's own per-step figure (the run's JSON summary) within 2%.

The Benchmark run dashboard's TPC-C panels (k6_tpcc_* series) are checked with a real 2-step
TPC-C run of k6/tpcc.js (conftest.py's tpcc_run): each returns data for it, nothing for the OLTP
run (their "no data: not a TPC-C run" text), and its step tables' tpmC, tpmTotal, per-type tpm
and errors equal the run manifest's within 2%, their p95 (types of 100 transactions or more) within the histogram's resolution.
"""
import json
import math
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

pytestmark = pytest.mark.full

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
import dashtools as dt  # noqa: E402

PROM = "http://127.0.0.1:9090"
LOKI = "http://127.0.0.1:3100"

# The official k6 dashboard for Prometheus with native histograms ("k6 Prometheus (Native
# Histograms)", grafana/xk6-output-prometheus-remote: grafana/dashboards/
# k6-prometheus-native-histogram.json) selects runs with the variable
# `label_values(testid)` and filters every query by testid=~"$testid". These are its queries
# that do not depend on HTTP (our runs make SQL calls); they must work on our runs.
OFFICIAL_K6_QUERIES = [
    ("Performance Overview: vus", 'avg(k6_vus{testid=~"$testid"})'),
    ("Iterations: iteration_duration_q$quantile",
     'histogram_quantile($quantile, sum by(le) (rate(k6_iteration_duration_seconds{testid=~"$testid"}[$__rate_interval])))'),
]


# ------------------------------------------------------------------------------ HTTP helpers
def get_json(url, params):
    full = url + "?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(full, timeout=30) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{full}: HTTP {e.code}: {e.read().decode()[:500]}") from None
    assert body.get("status") == "success", body
    return body["data"]


def prom_instant(expr, at):
    return get_json(f"{PROM}/api/v1/query", {"query": expr, "time": f"{at:.3f}"})["result"]


def prom_range(expr, start, end, step=5):
    return get_json(f"{PROM}/api/v1/query_range",
                    {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": step})["result"]


def loki_range(expr, start, end, step=5):
    return get_json(f"{LOKI}/loki/api/v1/query_range",
                    {"query": expr, "start": str(int(start * 1e9)), "end": str(int(end * 1e9)),
                     "step": step, "limit": 100})["result"]


def has_values(result):
    for r in result:
        vals = r.get("values") or ([r["value"]] if "value" in r else [])
        if any(not math.isnan(float(v[1])) for v in vals):
            return True
        if r.get("histograms") or r.get("histogram"):
            return True
    return False


def grafana_regex(value):
    """A value as Grafana puts a multi-value variable into a PromQL regex matcher."""
    value = value.replace("\\", "\\\\\\\\")
    return re.sub(r"[$^*{}\[\]'+?.()|]", lambda m: "\\\\" + m.group(0), value)


# ------------------------------------------------------------------------------ the runs
class Run:
    def __init__(self, summary):
        self.s = summary
        self.testid = summary["testid"]
        self.version = summary["version"]
        self.start = summary["run_start"] / 1000
        self.end = summary["run_start"] / 1000 + summary["k6"]["test_run_duration_ms"] / 1000

    def window(self):
        return self.start - 30, self.end + 30


@pytest.fixture(scope="module")
def runs(read_write_runs):
    """conftest.py's two runs (TiDB; MariaDB at a fixed rate), as Run objects, with what k6 wrote
    in: its last remote write (the run_end marker, sent when it stopped) in Prometheus and its
    log lines in Loki. The scrapes after the runs' end are waited for by the panel test, query
    by query (SETTLE_S)."""
    _, manifests = read_write_runs
    out = {target: Run(m) for target, m in manifests.items()}
    deadline = time.time() + 60
    for r in out.values():
        while not prom_instant(f'max_over_time(k6_oltp_marker{{testid="{r.testid}", event="run_end"}}[1h])',
                               time.time()):
            assert time.time() < deadline, f"the run_end marker of {r.testid} never reached Prometheus"
            time.sleep(1)
    last = max(out.values(), key=lambda r: r.end)
    deadline = time.time() + 60
    while not loki_range('{service="k6"} |= "' + last.testid + '"', last.start - 60, time.time()):
        assert time.time() < deadline, "the k6 log of the run never reached Loki"
        time.sleep(2)
    return out


@pytest.fixture(scope="module")
def dashboards():
    # the dashboards of Prometheus' and Loki's series (History's SQL: tests/test_history_dashboard.py)
    return dt.load_dashboards(sql=False)


def values_for(dash, r, other=None, now=None):
    """The dashboard variables as Grafana sends them with the run r selected."""
    start, end = r.window()
    now = now or time.time()
    v = dict(dt.static_values(dash))
    v.update({"__rate_interval": "20s", "__interval": "5s",
              "__range": f"{int(math.ceil(now - start))}s", "lookback": "1d",
              "quantile": "0.99", "search": "", "service": ".+",
              "tidb_instance": ".*", "tikv_instance": ".*", "mysql_instance": ".*", "host": ".*"})
    uid = dash["uid"]
    if uid == "tbs-benchmark-run":
        v.update({"testid": r.testid, "workload": grafana_regex("oltp_read_write"),
                  "version": grafana_regex(r.version), "threads": "(2|4)"})
    elif uid == "tbs-run-compare":
        v.update({"run_a": r.testid, "run_b": other.testid, "testid": ".*"})
    else:
        v["testid"] = grafana_regex(r.testid)
    return v


LOCAL_ONLY_EXCLUDED = re.compile(r'\b(tikv_|pd_)|job="(tikv|pd)"')


def local(q):
    """Queries about the local stack (TiKV and PD exist only in the compose cluster)."""
    return not LOCAL_ONLY_EXCLUDED.search(q.expr)


def is_tpcc(q):
    """A TPC-C panel's query (k6/tpcc.js's series): checked with the TPC-C run (below)."""
    return "k6_tpcc_" in q.expr


def run_for(dash, runs):
    """The run a dashboard is checked with: the MariaDB run for the MySQL dashboard."""
    return runs["mariadb"] if dash["uid"] == "tbs-mysql" else runs["tidb"]


# ------------------------------------------------------------------------------ panels
# how long after the runs' end a panel query may take to return data: scrapes (5 s) and rate
# windows ($__rate_interval 20s) past the end of the last run, and the log shipper (otelcol), catching up. A query
# without data is asked again until then (it was a fixed wait of 25 s before any query).
SETTLE_S = 40


def test_every_local_panel_query_returns_data(runs, dashboards):
    checks = []
    for rel, d in dashboards.items():
        for q in dt.queries(d):
            if q.kind != "target" or not local(q) or is_tpcc(q):
                continue
            # response-time queries need a rate run: the MariaDB one
            r = runs["mariadb"] if "k6_oltp_response_latency" in q.expr else run_for(d, runs)
            checks.append((d, q, r))

    def returns_data(d, q, r, now):
        vals = values_for(d, r, other=runs["mariadb"] if r is not runs["mariadb"] else runs["tidb"], now=now)
        start, end = r.window()
        expr = dt.substitute(q.expr, vals)
        if q.lang == "logql":
            res = loki_range(expr, start, end)
            return bool(res) and any(x.get("values") for x in res), expr
        if q.instant:
            return has_values(prom_instant(expr, now)), expr
        return has_values(prom_range(expr, start, end)), expr

    settled = max(r.end for r in runs.values()) + SETTLE_S
    pending, late = checks, []
    while True:
        now = time.time()
        failures = [(c, expr) for c in pending for ok, expr in [returns_data(*c, now)] if not ok]
        if not failures or now > settled:
            break
        pending = [c for c, _ in failures]
        late.append(len(pending))
        time.sleep(2)
    print(f"{len(checks)} panel queries; asked again until they had data: {late or 'none'}; "
          f"done {time.time() - settled + SETTLE_S:.0f} s after the runs' end")
    assert len(checks) >= 70
    assert not failures, f"{len(failures)} of {len(checks)} queries returned no data:\n" + \
        "\n".join(f"{q.id}: no data\n    {expr}" for (_, q, _), expr in failures)


def test_every_local_variable_query_lists_the_run(runs, dashboards):
    r = runs["tidb"]
    expect = {"testid": r.testid, "run_a": r.testid, "run_b": r.testid, "workload": "oltp_read_write",
              "version": r.version, "threads": "4", "tidb_instance": "127.0.0.1:10080",
              "mysql_instance": "127.0.0.1:9104", "host": "127.0.0.1:9100"}
    start, end = runs["tidb"].start - 60, time.time()
    for rel, d in dashboards.items():
        vals = values_for(d, r, other=runs["mariadb"])
        for v in d["templating"]["list"]:
            if v["type"] != "query":
                continue
            q = v["query"]["query"] if isinstance(v["query"], dict) and "query" in v["query"] else v["definition"]
            m = dt.LABEL_VALUES.match(q)
            assert m, q
            label, sel = m.group("label"), m.group("expr")
            if sel and LOCAL_ONLY_EXCLUDED.search(sel):
                continue
            if v["datasource"]["type"] == "loki":
                got = get_json(f"{LOKI}/loki/api/v1/label/{label}/values",
                               {"start": str(int(start * 1e9)), "end": str(int(end * 1e9))})
                assert {"tidb", "k6", "mariadb"} <= set(got), f"{d['uid']}: {v['name']}: {got}"
                continue
            params = {"start": f"{start:.3f}", "end": f"{end:.3f}"}
            if sel:
                # the variables a selector refers to, e.g. {testid="$testid"}, as Grafana sends them
                params["match[]"] = dt.substitute(sel, {**vals, "testid": r.testid})
            got = get_json(f"{PROM}/api/v1/label/{label}/values", params)
            assert expect[v["name"]] in got, f"{d['uid']}: variable {v['name']} ({q}): {got}"


# ------------------------------------------------------------------------------ annotations
def test_annotations_mark_the_run_and_its_steps(runs, dashboards):
    for rel, d in dashboards.items():
        r = run_for(d, runs)
        vals = values_for(d, r, other=runs["mariadb"])
        vals["testid"] = grafana_regex(r.testid)  # the run dashboard's single value works too
        start, end = r.window()
        annos = {a["name"]: a for a in d["annotations"]["list"]}
        # run start / end: two events, at the run's start and end, with version and workload
        res = prom_range(dt.substitute(annos["Run start / end"]["target"]["expr"], vals), start, end, step=15)
        events = {x["metric"]["event"]: {float(v) for _, v in x["values"]} for x in res}
        assert set(events) == {"run_start", "run_end"}, f"{d['uid']}: {res}"
        for x in res:
            assert x["metric"]["version"] == r.version and x["metric"]["workload"] == "oltp_read_write"
        (t_start,), (t_end,) = events["run_start"], events["run_end"]  # one time each (useValueForTime)
        assert t_start == r.s["run_start"], (t_start, r.s["run_start"])
        assert abs(t_end / 1000 - r.end) < 5 and t_end > t_start
        # thread steps: one event per step, at the step's start, titled with its thread count
        res = prom_range(dt.substitute(annos["Thread steps"]["target"]["expr"], vals), start, end, step=15)
        steps = {x["metric"]["threads"]: {float(v) for _, v in x["values"]} for x in res}
        assert set(steps) == {"2", "4"}, f"{d['uid']}: {res}"
        for s in r.s["steps"]:
            (t,) = steps[str(s["threads"])]
            assert abs(t - s["window"]["step_start"]) < 1000, (s["threads"], t, s["window"])


# ------------------------------------------------------------------------------ step table
def step_table(dash, r, now, **extra):
    vals = {**values_for(dash, r, now=now), **extra}
    table = next(p for p in dt.panels(dash) if p["title"] == "Thread steps")
    out = {}
    for t in table["targets"]:
        res = prom_instant(dt.substitute(t["expr"], vals), now)
        out[t["refId"]] = {x["metric"]["threads"]: float(x["value"][1]) for x in res}
    return out


def test_step_table_qps_equals_k6_per_step_figures(runs, dashboards):
    d = dashboards["benchmark/benchmark-run.json"]
    now = time.time()
    for target, r in runs.items():
        tab = step_table(d, r, now)
        for s in r.s["steps"]:
            th = str(s["threads"])
            qps, tps, p95, errors = (tab[k].get(th) for k in "ABCD")
            assert qps is not None, f"{target}: no QPS row for {th} threads: {tab}"
            assert abs(qps - s["qps"]) <= 0.02 * s["qps"], f"{target} {th} threads: QPS {qps} vs k6 {s['qps']}"
            assert abs(tps - s["tps"]) <= 0.02 * s["tps"], f"{target} {th} threads: TPS {tps} vs k6 {s['tps']}"
            assert errors == s["errors"], (target, th, errors, s["errors"])
            # p95 from the step's whole native histogram: exact up to the histogram's bucket
            # resolution (k6 computes its own from every sample)
            assert abs(p95 - s["latency_ms"]["p95"]) <= 0.15 * s["latency_ms"]["p95"], \
                (target, th, p95, s["latency_ms"])
            print(f"{target} {th} threads: QPS {qps:.2f} (k6 {s['qps']:.2f}), TPS {tps:.2f} "
                  f"(k6 {s['tps']:.2f}), p95 {p95:.3f} ms (k6 {s['latency_ms']['p95']:.3f}), errors {errors:g}")


def test_step_table_ignores_warmup_and_other_steps(runs, dashboards):
    """Filtering one step keeps that row only, and the warm-up phase's queries are not in it."""
    d = dashboards["benchmark/benchmark-run.json"]
    r, now = runs["tidb"], time.time()
    tab = step_table(d, r, now, threads="(4)")
    assert set(tab["A"]) == {"4"}
    warm = prom_instant(f'sum(max_over_time(k6_oltp_queries_total{{testid="{r.testid}", threads="4", warmup="true"}}[1h]))', now)
    assert warm and float(warm[0]["value"][1]) > 0  # the warm-up ran and was counted apart
    step4 = next(s for s in r.s["steps"] if s["threads"] == 4)
    assert abs(tab["A"]["4"] * step4["seconds"] - step4["queries"]["total"]) <= 0.02 * step4["queries"]["total"]


def test_run_comparison_per_step_change(runs, dashboards):
    d = dashboards["benchmark/run-compare.json"]
    a, b = runs["tidb"], runs["mariadb"]
    now = time.time()
    vals = values_for(d, a, other=b, now=now)
    table = next(p for p in dt.panels(d) if p["title"] == "QPS and p95 per thread step")
    got = {}
    for t in table["targets"]:
        res = prom_instant(dt.substitute(t["expr"], vals), now)
        got[t["refId"]] = {x["metric"]["threads"]: float(x["value"][1]) for x in res}
    for sa, sb in zip(a.s["steps"], b.s["steps"]):
        th = str(sa["threads"])
        assert abs(got["A"][th] - sa["qps"]) <= 0.02 * sa["qps"]
        assert abs(got["B"][th] - sb["qps"]) <= 0.02 * sb["qps"]
        change = (sb["qps"] - sa["qps"]) / sa["qps"] * 100
        assert abs(got["C"][th] - change) <= 3, (th, got["C"][th], change)
        assert th in got["F"]


# ------------------------------------------------------------------------------ official k6 dashboard
def test_official_k6_dashboard_queries_work_on_our_runs(runs):
    r = runs["tidb"]
    start, end = r.window()
    got = get_json(f"{PROM}/api/v1/label/testid/values", {"start": f"{start:.3f}", "end": f"{end:.3f}"})
    assert r.testid in got  # its run selector: label_values(testid)
    names = get_json(f"{PROM}/api/v1/label/__name__/values", {})
    assert {"k6_vus", "k6_iterations_total", "k6_iteration_duration_seconds"} <= set(names)  # metrics(k6_)
    for title, expr in OFFICIAL_K6_QUERIES:
        e = dt.substitute(expr, {"testid": grafana_regex(r.testid), "quantile": "0.99",
                                 "__rate_interval": "20s"})
        assert has_values(prom_range(e, start, end)), f"{title}: {e}"


# ------------------------------------------------------------------------------ TPC-C
@pytest.fixture(scope="module")
def tpcc_live(tpcc_run):
    """conftest.py's TPC-C run as a Run, once its run_end marker is in Prometheus."""
    _, m = tpcc_run
    r = Run(m)
    deadline = time.time() + 60
    while not prom_instant(f'max_over_time(k6_oltp_marker{{testid="{r.testid}", event="run_end"}}[1h])', time.time()):
        assert time.time() < deadline, f"the run_end marker of {r.testid} never reached Prometheus"
        time.sleep(1)
    return r


def tpcc_values(dash, r, now):
    v = values_for(dash, r, now=now)
    v.update({"workload": grafana_regex("tpcc"), "threads": "(1|2)"})
    return v


def tpcc_targets(dash):
    return [q for q in dt.queries(dash) if q.kind == "target" and is_tpcc(q)]


def test_tpcc_panels_return_data_for_a_tpcc_run(tpcc_live, dashboards):
    d = dashboards["benchmark/benchmark-run.json"]
    qs = tpcc_targets(d)
    assert len({q.panel["title"] for q in qs}) == 7
    settled, failures = tpcc_live.end + SETTLE_S, ["none asked"]
    while failures:
        now = time.time()
        failures = []
        for q in qs:
            expr = dt.substitute(q.expr, tpcc_values(d, tpcc_live, now))
            res = prom_instant(expr, now) if q.instant else prom_range(expr, *tpcc_live.window())
            if not has_values(res):
                failures.append(f"{q.id}: no data\n    {expr}")
        if not failures or now > settled:
            break
        time.sleep(2)
    assert not failures, "\n".join(failures)


def test_tpcc_panels_are_empty_for_an_oltp_run(runs, dashboards):
    """An OLTP run has no k6_tpcc_* series: every TPC-C query answers with nothing (no error), and
    the panel says why (its noValue)."""
    d = dashboards["benchmark/benchmark-run.json"]
    r, now = runs["tidb"], time.time()
    for q in tpcc_targets(d):
        expr = dt.substitute(q.expr, values_for(d, r, now=now))
        res = prom_instant(expr, now) if q.instant else prom_range(expr, *r.window())
        assert res == [], f"{q.id}: data for the OLTP run {r.testid}: {res[:2]}"
        assert q.panel["fieldConfig"]["defaults"]["noValue"].startswith("no data: not a TPC-C run")


def tpcc_table(dash, r, title, now, keys=("threads",)):
    vals = tpcc_values(dash, r, now)
    table = next(p for p in dt.panels(dash) if p["title"] == title)
    out = {}
    for t in table["targets"]:
        res = prom_instant(dt.substitute(t["expr"], vals), now)
        out[t["refId"]] = {tuple(x["metric"][k] for k in keys): float(x["value"][1]) for x in res}
    return out


def test_tpcc_step_tables_equal_the_manifest(tpcc_live, dashboards):
    d = dashboards["benchmark/benchmark-run.json"]
    now = time.time()
    steps = tpcc_table(d, tpcc_live, "TPC-C thread steps", now)
    per_type = tpcc_table(d, tpcc_live, "TPC-C per transaction type", now, keys=("threads", "txn"))
    for s in tpcc_live.s["steps"]:
        th = str(s["threads"])
        tpmc, tpm_total, p95, p99, errors = (steps[k].get((th,)) for k in "ABCDE")
        assert tpmc is not None, f"no tpmC row for {th} threads: {steps}"
        assert abs(tpmc - s["tpmC"]) <= 0.02 * s["tpmC"], (th, tpmc, s["tpmC"])
        assert abs(tpm_total - s["tpmTotal"]) <= 0.02 * s["tpmTotal"], (th, tpm_total, s["tpmTotal"])
        assert errors == s["errors"], (th, errors, s["errors"])
        no = s["txns"]["new_order"]["latency_ms"]
        # the step's whole native histogram: exact up to its bucket resolution (k6 keeps every sample)
        assert abs(p95 - no["p95"]) <= 0.15 * no["p95"] and p99 >= p95, (th, p95, p99, no)
        one_txn = 60 / s["elapsed_s"]  # one transaction's share of a type's tpm
        for txn, x in s["txns"].items():
            if not x["count"]:
                continue
            tpm, tp95 = per_type["A"][(th, txn)], per_type["B"][(th, txn)]
            assert abs(tpm - x["tpm"]) <= max(0.02 * x["tpm"], one_txn), (th, txn, tpm, x["tpm"])
            # from 100 transactions (New-Order, Payment): with fewer, the p95 falls among a bucket's few
            # samples, and the native histogram's interpolation in it is far off (seen: 26 Stock-Levels, 19.2 vs 11.2 ms)
            if x["count"] >= 100:
                assert abs(tp95 - x["latency_ms"]["p95"]) <= 0.15 * x["latency_ms"]["p95"], (th, txn, tp95, x["latency_ms"])
            assert per_type["D"][(th, txn)] == x["errors"], (th, txn)
        print(f"TPC-C {th} threads: tpmC {tpmc:.1f} (manifest {s['tpmC']:.1f}), tpmTotal {tpm_total:.1f} "
              f"(manifest {s['tpmTotal']:.1f}), New-Order p95 {p95:.2f} ms (manifest {no['p95']:.2f}), errors {errors:g}")


def test_tpcc_run_is_listed_and_marked(tpcc_live, dashboards):
    d = dashboards["benchmark/benchmark-run.json"]
    r = tpcc_live
    start, end = r.start - 60, time.time()
    vals = tpcc_values(d, r, end)
    got = {}
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            m = dt.LABEL_VALUES.match(v["query"]["query"])
            got[v["name"]] = get_json(f"{PROM}/api/v1/label/{m.group('label')}/values",
                                      {"start": f"{start:.3f}", "end": f"{end:.3f}",
                                       "match[]": dt.substitute(m.group("expr"), vals)})
    assert r.testid in got["testid"] and got["workload"] == ["tpcc"] and set(got["threads"]) == {"1", "2"}, got
    assert r.version in got["version"]
    annos = {a["name"]: a for a in d["annotations"]["list"]}
    vals["testid"] = grafana_regex(r.testid)
    res = prom_range(dt.substitute(annos["Run start / end"]["target"]["expr"], vals), *r.window(), step=15)
    assert {x["metric"]["event"] for x in res} == {"run_start", "run_end"} and \
        {x["metric"]["workload"] for x in res} == {"tpcc"}, res
    res = prom_range(dt.substitute(annos["Thread steps"]["target"]["expr"], vals), *r.window(), step=15)
    assert {x["metric"]["threads"] for x in res} == {"1", "2"}, res
