"""Issue #29: the History dashboard's queries, taken from the generated JSON
(grafana/dashboards/history/history.json) with the variables and macros substituted as Grafana's
PostgreSQL data source does, run against the local stack's REAL PostgreSQL as Grafana's
read-only user, over synthetic runs pushed with `push` into a database of the test's own:
ten nightly runs, the point selects at 8 threads sliding 3% from the sixth on (the change point
the core detection would record, with its evidence), the rest flat, and one MariaDB run."""
import datetime as dt
import re

import pytest

import dashtools as dt_
import storetools as ht
from storetools import grafana_sql, resolve_variables, run
from tidbbench.history import noise as historynoise, pg as historypg

pytestmark = pytest.mark.full

CP_EVIDENCE = ("QPS 8,060 -> 7,820 (-3.0%, 95% CI -3.6..-2.4), p=0.0004, 5 runs each side\n"
               "1. version v8.5.6 -> v8.5.7")


@pytest.fixture(scope="module")
def dash():
    d = dt_.load_dashboards()["history/history.json"]
    assert d["uid"] == "tbs-history"
    return d


@pytest.fixture(scope="module")
def store_db(request, tmp_path_factory):
    if not ht.up():
        request.getfixturevalue("stack")
    tmp = tmp_path_factory.mktemp("history-dash")
    with ht.own_database(tmp) as (name, conninfo):
        runs = [ht.run_row(i, version="v8.5.6" if i < 5 else "v8.5.7") for i in range(10)]
        points = []
        for i, r in enumerate(runs):
            qps = 8060.0 if i < 5 else 7820.0
            points.append(ht.point_row(r, "oltp_point_select", 8, qps + i, 1.2 if i < 5 else 1.3))
            points.append(ht.point_row(r, "oltp_read_write", 16, 3000.0 + i, 20.0))
        maria = ht.run_row(30, version="10.11.14-MariaDB")  # 2026-12-01: outside the time range
        maria["target"], maria["product"] = "mariadb", "MariaDB"
        maria_early = ht.run_row(-5, version="10.11.14-MariaDB")  # 2026-10-27
        maria_early["target"], maria_early["product"] = "mariadb", "MariaDB"
        points += [ht.point_row(m, "oltp_point_select", 8, 5000.0, 2.0) for m in (maria, maria_early)]
        cps = [{"series": points[0]["series"], "metric": "qps", "run_key_before": runs[4]["run_key"],
                "run_key_after": runs[5]["run_key"], "at": runs[5]["started_at"], "mean_before": 8062.0,
                "mean_after": 7827.0, "magnitude_pct": -2.9, "ci_low_pct": -3.6, "ci_high_pct": -2.4,
                "pvalue": 0.0004, "direction": "regression", "evidence": CP_EVIDENCE}]
        idx = ht.make_index(tmp / "history.sqlite", runs + [maria, maria_early], points, cps)
        historypg.push(idx, conninfo)
        yield name, runs, points, cps


def panel(dash, title):
    return next(p for p in dt_.panels(dash) if p["title"] == title)


def test_every_query_is_sql_on_the_history_data_source(dash):
    qs = dt_.queries(dash)
    assert {q.lang for q in qs} == {"sql"}
    kinds = sorted(q.kind for q in qs)
    assert kinds == ["annotation"] + ["target"] * 6 + ["variable"] * 4
    assert {v["name"] for v in dash["templating"]["list"]} == {"target", "workload", "threads", "series"}


def test_variables_list_what_the_store_holds(dash, store_db):
    db, runs, points, _ = store_db
    values, options = resolve_variables(dash, db)
    assert options["target"] == ["mariadb", "tidb"]
    assert options["workload"] == ["oltp_point_select", "oltp_read_write"]
    assert options["threads"] == ["8", "16"]  # numbers, in order
    assert set(options["series"]) == {p["series"] for p in points}
    # a choice narrows the next ones, as Grafana's chained variables do
    _, opts = resolve_variables(dash, db, {"target": ["mariadb"]})
    assert opts["workload"] == ["oltp_point_select"] and opts["threads"] == ["8"]


@pytest.mark.parametrize("title,column,label", [("QPS per workload x threads", "qps", "QPS"),
                                                ("p95 latency per workload x threads", "p95_ms", "p95 (ms)")])
def test_across_runs_one_point_per_run_with_version_and_testid(dash, store_db, title, column, label):
    db, runs, points, _ = store_db
    p = panel(dash, title)
    (t,) = p["targets"]
    values, _ = resolve_variables(dash, db)
    rows = run(db, grafana_sql(t["rawSql"], values))
    # every run in the range, once per series: 10 TiDB runs x 2 series + the MariaDB run of 27 Oct
    assert len(rows) == 21
    assert [r["time"] for r in rows] == sorted(r["time"] for r in rows)
    by = {(r["testid"], r["series"]): r for r in rows}
    tidb_runs = {r["run_key"]: r for r in runs}
    for pt in points:
        run_ = tidb_runs.get(pt["run_key"])
        if run_ is None:  # the MariaDB runs
            continue
        name = f"{pt['workload']} x {pt['threads']} threads (tidb, options o1)"
        got = by[(run_["testid"], name)]
        assert got[label] == pt[column]
        assert got["version"] == run_["version"]  # what the tooltip shows beside the figure
        assert got["time"] == dt.datetime.fromisoformat(run_["started_at"].replace("Z", "+00:00"))
        assert got["run_to"] - got["run_from"] == 7 * 3600 * 1000
    # the partition field and every field a link or an override names are columns of the result
    fields = set(rows[0])
    part = next(x for x in p["transformations"] if x["id"] == "partitionByValues")
    assert set(part["options"]["fields"]) <= fields
    for link in p["fieldConfig"]["defaults"]["links"]:
        assert set(re.findall(r"__data\.fields\.(\w+)", link["url"] + link["title"])) <= fields
        assert "/d/tbs-benchmark-run?var-testid=" in link["url"]
    for o in p["fieldConfig"]["overrides"]:
        assert o["matcher"]["options"] in fields
    # the slide of the point selects is there to see: 5 runs at ~8,060, then 5 at ~7,820
    if column == "qps":
        series = [r[label] for r in rows if r["series"].startswith("oltp_point_select x 8 threads (tidb")]
        assert len(series) == 10 and max(series[5:]) < min(series[:5]) * 0.975


def test_one_workload_and_thread_step(dash, store_db):
    db, runs, _, _ = store_db
    values, _ = resolve_variables(dash, db, {"target": ["tidb"], "workload": ["oltp_read_write"], "threads": ["16"]})
    rows = run(db, grafana_sql(panel(dash, "QPS per workload x threads")["targets"][0]["rawSql"], values))
    assert {r["series"] for r in rows} == {"oltp_read_write x 16 threads (tidb, options o1)"}
    assert [r["testid"] for r in rows] == [r["testid"] for r in runs]
    # the time range decides which runs show
    rows = run(db, grafana_sql(panel(dash, "QPS per workload x threads")["targets"][0]["rawSql"], values,
                               "2026-11-03T00:00:00Z", "2026-11-05T00:00:00Z"))
    assert [r["testid"] for r in rows] == [runs[2]["testid"], runs[3]["testid"]]


def test_the_change_point_annotation_carries_its_evidence_and_links(dash, store_db):
    db, runs, _, cps = store_db
    (a,) = dash["annotations"]["list"]
    assert a["datasource"] == {"type": "grafana-postgresql-datasource", "uid": "history"} and a["enable"]
    values, _ = resolve_variables(dash, db)
    (row,) = run(db, grafana_sql(a["target"]["rawSql"], values))
    before, after = runs[4]["testid"], runs[5]["testid"]
    assert row["time"] == dt.datetime(2026, 11, 6, 2, 0, tzinfo=dt.timezone.utc)
    assert row["tags"] == "regression,qps,oltp_point_select"
    text = row["text"]
    assert "QPS regression -2.9%" in text and "(oltp_point_select x 8 threads, tidb)" in text
    # the evidence, escaped for the HTML of the text, a line each
    assert CP_EVIDENCE.replace(">", "&gt;").replace("\n", "<br/>") in text
    start = int(dt.datetime(2026, 11, 6, 2, 0, tzinfo=dt.timezone.utc).timestamp() * 1000)
    assert f'href="/d/tbs-benchmark-run?var-testid={after}&from={start - 3600_000}&to={start + 6 * 3600_000}"' in text
    assert f'href="/d/tbs-benchmark-run?var-testid={before}&' in text
    assert f"scripts/report {before} {after}" in text and f"results/report-{before}-vs-{after}/report.html" in text
    # a series not chosen hides it
    values, _ = resolve_variables(dash, db, {"workload": ["oltp_read_write"]})
    assert run(db, grafana_sql(a["target"]["rawSql"], values)) == []


def test_the_tables(dash, store_db):
    db, runs, _, _ = store_db
    values, _ = resolve_variables(dash, db)
    (cp,) = run(db, grafana_sql(panel(dash, "Change points")["targets"][0]["rawSql"], values))
    assert (cp["Before"], cp["After"], cp["Direction"], cp["Change"], cp["p"]) == \
        (runs[4]["testid"], runs[5]["testid"], "regression", -2.9, 0.0004)
    assert cp["A vs B report"] == f"scripts/report {runs[4]['testid']} {runs[5]['testid']}"
    assert cp["Evidence"] == CP_EVIDENCE and (cp["Workload"], cp["Threads"]) == ("oltp_point_select", 8)
    rows = run(db, grafana_sql(panel(dash, "Runs")["targets"][0]["rawSql"], values))
    assert len(rows) == 11 and rows[0]["testid"] == runs[9]["testid"]  # newest first, the range only
    assert rows[0]["Series"] == 2 and rows[0]["Version"] == "v8.5.7" and rows[-1]["Target"] == "mariadb"


def test_the_noise_panel_gives_each_series_cv_and_mdc_as_scripts_history_does(dash, store_db):
    """Per series and metric, the runs of its current level (the point selects' QPS since its change
    point, five runs; everything else all its runs, whatever the time range), their CV and minimum
    detectable change: tidbbench/history/noise.py's figures on the same runs."""
    db, runs, points, cps = store_db
    values, _ = resolve_variables(dash, db)
    rows = run(db, grafana_sql(panel(dash, "Noise per series")["targets"][0]["rawSql"], values))
    by = {(r["Series"], r["Metric"]): r for r in rows}
    assert len(rows) == 6  # 3 series (TiDB's two, MariaDB's point selects: both its runs) x qps and p95
    order = {r["run_key"]: i for i, r in enumerate(sorted(runs, key=lambda r: r["started_at"]))}
    for series in {p["series"] for p in points}:
        pts = sorted((p for p in points if p["series"] == series), key=lambda p: (order.get(p["run_key"], -99),
                                                                                   p["run_key"]))
        p0 = pts[0]
        name = f"{p0['workload']} x {p0['threads']} threads ({p0['target']}, options o1)"
        for metric in ("qps", "p95_ms"):
            keys = [p["run_key"] for p in pts]
            at = [keys.index(c["run_key_after"]) for c in cps if c["series"] == series and c["metric"] == metric]
            want = historynoise.series_noise(series, metric, pts, at, historynoise.DEFAULTS)
            got = by[(name, metric)]
            assert got["Runs"] == want.runs
            assert float(got["CV"]) == pytest.approx(want.cv_pct, abs=1e-9)
            assert float(got["Minimum detectable change"]) == pytest.approx(want.mdc_pct, rel=1e-6)
            assert (got["Level since"] is not None) == bool(at)
    assert by[("oltp_point_select x 8 threads (tidb, options o1)", "qps")]["Runs"] == 5  # since the change point
    # a series not chosen is not shown
    values, _ = resolve_variables(dash, db, {"workload": ["oltp_read_write"]})
    rows = run(db, grafana_sql(panel(dash, "Noise per series")["targets"][0]["rawSql"], values))
    assert {r["Series"] for r in rows} == {"oltp_read_write x 16 threads (tidb, options o1)"}


@pytest.fixture(scope="module")
def tpcc_store_db(request, tmp_path_factory):
    """A store of TPC-C runs only (k6/tpcc.js's series: tpmC, no QPS): four nightly runs at 1 and 2 threads."""
    if not ht.up():
        request.getfixturevalue("stack")
    tmp = tmp_path_factory.mktemp("history-dash-tpcc")
    with ht.own_database(tmp) as (name, conninfo):
        runs = [ht.run_row(i) for i in range(4)]
        points = []
        for i, r in enumerate(runs):
            for threads, tpmc in ((1, 1206.0), (2, 2340.0)):
                p = ht.point_row(r, "tpcc", threads, 0.0, 0.0)  # (then its OLTP figures emptied)
                p.update(qps=None, tps=None, p95_ms=None, p99_ms=None, tpmc=tpmc + i, tpm_total=2.2 * tpmc,
                         new_order_p95_ms=75.8)
                points.append(p)
        historypg.push(ht.make_index(tmp / "history.sqlite", runs, points), conninfo)
        yield name, runs, points


def test_tpmc_shows_tpcc_runs_and_only_them(dash, tpcc_store_db, store_db):
    db, runs, points = tpcc_store_db
    values, options = resolve_variables(dash, db)
    assert options["workload"] == ["tpcc"]
    (t,) = panel(dash, "tpmC per threads (TPC-C runs)")["targets"]
    rows = run(db, grafana_sql(t["rawSql"], values))
    assert sorted((r["testid"], r["series"], r["tpmC"]) for r in rows) == sorted(
        (next(x["testid"] for x in runs if x["run_key"] == p["run_key"]),
         f"tpcc x {p['threads']} threads (tidb, options o1)", p["tpmc"]) for p in points)
    # the QPS panel has no point of a TPC-C run, the tpmC panel none of an OLTP run
    (q,) = panel(dash, "QPS per workload x threads")["targets"]
    assert run(db, grafana_sql(q["rawSql"], values)) == []
    oltp_db = store_db[0]
    assert run(oltp_db, grafana_sql(t["rawSql"], resolve_variables(dash, oltp_db)[0])) == []
