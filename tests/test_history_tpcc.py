"""scripts/history for TPC-C runs (issue #46 item 3): a k6/tpcc.js run manifest is one run, each of
its thread steps a point of the series tpcc/<threads>t/<options>/<target> (warehouses, as every
option, splits series), with tpmC as its main figure (higher is better), tpmTotal, TPS, errors and
each transaction type's p95 and p99; change points and --check work on them. Fast: the recorded
TPC-C run of tests/golden/tpcc/ (a real run on the local TiDB) and series of its copies
(tests/historytools.py); full: scripts/history ingests the suite's real runs, TPC-C and OLTP."""
import json
import shutil
import sqlite3
import subprocess

import pytest

import historytools as ht
from conftest import ROOT
from tidbbench.history import cli as history, cp as historycp, schema as historyschema, store as historystore

pytestmark = pytest.mark.fast


run, ingest = ht.run, ht.ingest  # scripts/history in process (tests/historytools.py)


def points(db):
    with sqlite3.connect(db) as c:
        c.row_factory = sqlite3.Row
        return [dict(r) for r in c.execute("SELECT * FROM points ORDER BY run_key, threads")]


def test_the_recorded_run_is_a_real_tpcc_run_of_the_five_types():
    g = ht.tpcc_golden()
    assert g["workload"] == historycp.TPCC_WORKLOAD and g["benchmark"] == "tpcc"
    assert tuple(g["tpcc"]["txns"]) == historyschema.TPCC_TXNS  # the columns' transaction types are go-tpc's
    for s in g["steps"]:
        assert s["tpmC"] > 0 and set(s["txns"]) == set(historyschema.TPCC_TXNS)
        assert s["tpmC"] == pytest.approx(s["txns"]["new_order"]["count"] * 60 / s["elapsed_s"])


def test_a_tpcc_run_is_a_point_per_step_with_its_figures(tmp_path, capsys):
    g = ht.tpcc_golden()
    res = tmp_path / "results"
    res.mkdir()
    (res / f"{g['testid']}.json").write_text(json.dumps(g))
    rc, out, _ = ingest(capsys, res)
    assert rc == 0 and "1 new run(s)" in out, out
    pts = points(res / "history.sqlite")
    assert [p["threads"] for p in pts] == [s["threads"] for s in g["steps"]]
    for p, s in zip(pts, g["steps"]):
        assert p["series"] == f"tpcc/{s['threads']}t/{p['options_hash']}/127.0.0.1:4000/{g['target']['db']}"
        assert p["workload"] == "tpcc" and p["tpmc"] == s["tpmC"] and p["tpm_total"] == s["tpmTotal"]
        assert p["tps"] == pytest.approx(s["transactions"] / s["elapsed_s"])
        assert p["errors_per_s"] == pytest.approx(s["errors"] / s["elapsed_s"])
        for t in historyschema.TPCC_TXNS:
            assert p[f"{t}_p95_ms"] == s["txns"][t]["latency_ms"]["p95"], t
            assert p[f"{t}_p99_ms"] == s["txns"][t]["latency_ms"]["p99"], t
        # a TPC-C step has no QPS and no per-query figures: left empty, not made up
        assert p["qps"] is None and p["p95_ms"] is None and p["client_cpu_per_query"] is None
    rc, out, _ = run(capsys, "runs", "--index", str(res / "history.sqlite"), "--series", f"tpcc/{g['steps'][-1]['threads']}t")
    assert rc == 0 and "tpmC" in out and f"{g['steps'][-1]['tpmC']:,.1f}" in out, out


def test_a_tpmc_drop_is_a_regression_and_check_fails(tmp_path, capsys):
    res = tmp_path / "results"
    ht.write_tpcc_series(res, ht.step(10, 8, change=-0.08, mean=3000.0))
    assert ingest(capsys, res)[0] == 0
    rc, out, _ = run(capsys, "--results", str(res), "--check", "--threshold", "3")
    assert rc == history.EXIT_REGRESSION, out
    assert "REGRESSION tpcc/" in out and " tpmc " in out, out
    rc, out, _ = run(capsys, "--results", str(res), "--json")
    cps = json.loads(out)["change_points"]
    tpmc = [c for c in cps if c["metric"] == "tpmc"]
    assert tpmc and all(c["direction"] == "regression" and c["run_key_after"] == "tpcc-010" for c in tpmc), cps
    assert {c["metric"] for c in cps} <= {"tpmc", "new_order_p95_ms"}  # the TPC-C defaults, no QPS


def test_a_new_order_latency_rise_is_found_and_tpmc_left_alone(tmp_path, capsys):
    res = tmp_path / "results"
    ht.write_tpcc_series(res, ht.noise(18, mean=3000.0, cv=0.005), latency=[1.0] * 10 + [1.15] * 8)
    assert ingest(capsys, res)[0] == 0
    rc, out, _ = run(capsys, "--results", str(res), "--json")
    cps = json.loads(out)["change_points"]
    lat = [c for c in cps if c["metric"] == "new_order_p95_ms"]
    assert lat and all(c["direction"] == "regression" and c["run_key_after"] == "tpcc-010" for c in lat), cps
    assert not [c for c in cps if c["metric"] == "tpmc"], cps
    # another type's latency on request; OLTP's metrics do not apply to a TPC-C series (no note either)
    rc, out, err = run(capsys, "--results", str(res), "--metric", "payment_p99_ms", "--metric", "qps")
    assert rc == 0 and "payment_p99_ms" in out and "qps" not in out + err, out + err


def test_warehouses_split_series(tmp_path, capsys):
    res = tmp_path / "results"
    ht.write_tpcc_series(res, [3000.0, 3010.0], prefix="w1")
    ht.write_tpcc_series(res, [3000.0, 3010.0], warehouses=4, prefix="w4", start_ms=1_796_000_000_000)
    assert ingest(capsys, res)[0] == 0
    by_series = {}
    for p in points(res / "history.sqlite"):
        by_series.setdefault(p["series"], set()).add(p["run_key"][:2])
    assert len(by_series) == 2 * len(ht.tpcc_golden()["steps"])
    assert all(len(v) == 1 for v in by_series.values()), by_series


def test_an_index_made_before_tpcc_grows_its_columns(tmp_path, capsys):
    """An index written before the TPC-C columns existed gets them at the end (the tables only
    grow), keeps its rows and takes TPC-C runs beside OLTP ones."""
    res = tmp_path / "results"
    ht.write_series(res, [1000.0, 1010.0])
    db = res / "history.sqlite"
    old = [c for c in historyschema.columns("points")
           if c not in {c for c, _, _ in historyschema.TPCC_COLUMNS} | {"ref_run_key", "vs_ref"}]
    with sqlite3.connect(db) as c:
        c.executescript(historystore.SCHEMA)
        assert [r[1] for r in c.execute("PRAGMA table_info(points)")] == old
    assert ingest(capsys, res)[0] == 0
    ht.write_tpcc_series(res, [3000.0])
    rc, out, _ = ingest(capsys, res)
    assert rc == 0 and "1 new run(s), 0 replaced, 2 unchanged" in out, out
    with sqlite3.connect(db) as c:
        assert [r[1] for r in c.execute("PRAGMA table_info(points)")] == historyschema.columns("points")
    pts = points(db)
    assert {p["workload"] for p in pts} == {"oltp_point_select", "tpcc"}
    assert all((p["tpmc"] is None) == (p["workload"] != "tpcc") for p in pts)


def test_each_workload_gets_its_own_metrics():
    assert historycp.series_metrics("tpcc") == ("tpmc", "new_order_p95_ms")
    assert historycp.series_metrics("oltp_read_write") == ("qps", "p95_ms")
    assert historycp.series_metrics("tpcc", ["qps", "tpmc", "tps"]) == ("tpmc", "tps")
    assert historycp.series_metrics("oltp_read_only", ["tpmc", "delivery_p99_ms", "p99_ms"]) == ("p99_ms",)
    assert historycp.METRICS["tpmc"] is True and historycp.METRICS["stock_level_p95_ms"] is False


@pytest.mark.full
def test_scripts_history_ingests_the_suites_real_runs(tpcc_run, read_write_runs, tmp_path):
    """scripts/history, as a user runs it, on the suite's real runs: the TPC-C run beside the two
    OLTP runs; each series' main figure is its manifest's."""
    tpcc_dir, m = tpcc_run
    rw_dir, rw = read_write_runs
    res = tmp_path / "results"
    res.mkdir()
    shutil.copy(tpcc_dir / f"{m['testid']}.json", res)
    for x in rw.values():
        shutil.copy(rw_dir / f"{x['testid']}.json", res)
    cmd = [str(ROOT / "scripts/history")]
    p = subprocess.run([*cmd, "ingest", "--results", str(res), "--no-prometheus"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "3 new run(s)" in p.stdout, p.stdout + p.stderr
    for s in m["steps"]:
        p = subprocess.run([*cmd, "runs", "--results", str(res), "--series", f"tpcc/{s['threads']}t/", "--json"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        (pt,) = json.loads(p.stdout)["runs"]
        assert pt["testid"] == m["testid"] and pt["tpmc"] == s["tpmC"] and pt["tpm_total"] == s["tpmTotal"]
        assert pt["new_order_p95_ms"] == s["txns"]["new_order"]["latency_ms"]["p95"] and pt["qps"] is None
    p = subprocess.run([*cmd, "series", "--results", str(res), "--json"], capture_output=True, text=True, timeout=60)
    workloads = {x["workload"] for x in json.loads(p.stdout)["series"]}
    assert workloads == {"tpcc", "oltp_read_write"}, p.stdout
