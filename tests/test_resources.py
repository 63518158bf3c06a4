"""Resource use per run and per step (issue 13): what a step cost the database and the load
generator.

Two real 2-step oltp_read_write runs (local TiDB, local MariaDB at a fixed rate; conftest.py's
read_write_runs, which test_dashboards_live reads too). The report's per-step CPU
(counters' increase over the measured window: TiDB's own process metrics, MariaDB's from
process-exporter, k6's k6_oltp_client_cpu_seconds_total) is checked against independent
figures: the Benchmark run dashboard's step table (a different PromQL: the mean rate over the
times the step's series exist), k6's own per-step client CPU in the run manifest, and the host's
busy CPU from node_exporter (the processes cannot have used more). The A vs B report compares
QPS per core. (k6's CPU saturation warning is tidbbench/report/loadgen.py's.)
"""
import json
import re
import time

import pytest

import dashtools as dt
from conftest import ROOT, prom, prom_wait
from tidbbench.report.manifest import resolve
from tidbbench.report.loadgen import usable_cores
from tidbbench.report.prom import Prometheus, run_figures
from test_report_helpers import md_tables_after, run_report

# quiet (conftest.py): its database CPU is the whole server's, which other tests' load would move
pytestmark = [pytest.mark.full, pytest.mark.quiet]

@pytest.fixture(scope="module")
def runs(read_write_runs):
    """conftest.py's two oltp_read_write runs (TiDB; MariaDB at a fixed rate), with the scrapes
    after their last measured window (5 s interval) in."""
    res, manifests = read_write_runs
    out = {target: m["testid"] for target, m in manifests.items()}
    for testid in out.values():
        prom_wait(f'max_over_time(k6_oltp_marker{{testid="{testid}", event="run_end"}}[1h])', bool, timeout=60)
    last_end = max(m["steps"][-1]["window"]["measure_end"] for m in manifests.values()) / 1000
    time.sleep(max(0.0, last_end + 8 - time.time()))
    return res, out


def figures(res, testid):
    rs = resolve(res, testid)
    run = rs.first
    return run, run_figures(Prometheus("http://127.0.0.1:9090"), run)


def host_busy_cores(step):
    w = step["window"]
    rng = int(w["measure_end"] - w["measure_start"])
    r = prom(f'sum(increase(node_cpu_seconds_total{{job="node", mode!="idle"}}[{rng}ms]))',
             at=f"{w['measure_end'] / 1000:.3f}")
    return float(r[0]["value"][1]) / (rng / 1000)


def test_report_figures_per_step_against_independent_ones(runs):
    res, ids = runs
    d = json.loads((ROOT / "grafana/dashboards/benchmark/benchmark-run.json").read_text())
    table = next(p for p in dt.panels(d) if p["title"] == "Thread steps")
    for target, testid in ids.items():
        run, figs = figures(res, testid)
        # the dashboard's step table over the run, as Grafana asks it (instant, $__range)
        m = run.manifest
        now = time.time()
        vals = {**dt.static_values(d), "testid": testid, "workload": ".*", "version": ".*", "threads": ".*",
                "__range": f"{int(now - m['run_start'] / 1000) + 30}s", "__rate_interval": "20s"}
        dash = {}
        for t in table["targets"]:
            r = prom(dt.substitute(t["expr"], vals), at=now)
            dash[t["refId"]] = {x["metric"]["threads"]: float(x["value"][1]) for x in r}
        for f in figs:
            th = str(f.threads)
            assert f.db_cores and f.db_cores > 0.05, (target, f)
            assert f.k6_cores and f.k6_cores > 0.05, (target, f)
            assert abs(f.qps_per_core - f.qps / f.db_cores) < 1e-6
            # k6's own per-step CPU (the run manifest, from the process itself)
            own = f.k6.get("client_cpu_s")
            if own is not None:
                own_cores = own / (f.k6.get("elapsed_s") or f.seconds)
                assert abs(f.k6_cores - own_cores) <= 0.3 * own_cores + 0.03, (target, th, f.k6_cores, own_cores)
            # the dashboard's table: same steps, same figures within the difference of method
            assert abs(dash["E"][th] - f.db_cores) <= 0.3 * f.db_cores + 0.05, (target, th, dash["E"], f.db_cores)
            assert abs(dash["G"][th] - f.k6_cores) <= 0.3 * f.k6_cores + 0.05, (target, th, dash["G"], f.k6_cores)
            assert abs(dash["F"][th] - dash["A"][th] / dash["E"][th]) <= 1e-6 * dash["F"][th]
            # the host was at least as busy as the database and k6 together
            busy = host_busy_cores(f.k6)
            assert f.db_cores + f.k6_cores <= busy * 1.1 + 0.05, (target, th, f.db_cores, f.k6_cores, busy)
            print(f"{target} {th} threads: QPS {f.qps:.0f}, DB {f.db_cores:.2f} cores ({f.qps_per_core:.0f} QPS/core, "
                  f"dashboard {dash['E'][th]:.2f}), k6 {f.k6_cores:.2f} cores (dashboard {dash['G'][th]:.2f}, "
                  f"its own {own_cores if own is not None else float('nan'):.2f}), host busy {busy:.2f} cores")


def test_reports_show_resources_and_compare_qps_per_core(runs, tmp_path):
    res, ids = runs
    out = tmp_path / "ab"
    p = run_report("--results", str(res), "--out", str(out), ids["tidb"], ids["mariadb"], env={"GRAFANA_URL": ""})
    assert p.returncode == 0, p.stderr
    md = (out / "report.md").read_text()
    [t] = md_tables_after(md, "### Read Write resources")
    hdr = t[0]
    assert hdr[0] == "Threads" and hdr[2].endswith("QPS per DB core") and hdr[4].endswith("QPS per DB core")
    assert hdr[5] == "QPS per core change"
    changes = []
    for r in t[1:]:
        a, b = float(r[2]), float(r[4])
        # one run a side: no change is claimed from one sample (`~`); the sentence gives the
        # single samples' difference, the mean of the per-step differences of these figures
        assert r[5] == "~", r
        changes.append((b - a) / a * 100)
    m = re.search(r"'s Read Write QPS per database core cannot be said to change \(n=1: no significance\): "
                  r"the single samples differ by ([+-][\d.]+)%", md)
    assert m, md
    mean = sum(changes) / len(changes)
    assert abs(float(m.group(1)) - mean) < 0.05
    assert "Not recorded" not in md
    # one run: its table, with k6's share of its cores
    p = run_report("--results", str(res), "--out", str(tmp_path / "one"), ids["mariadb"], env={"GRAFANA_URL": ""})
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "one" / "report.md").read_text()
    [t] = md_tables_after(md, "### Read Write resources")
    assert t[0] == ["Threads", "QPS", "DB CPU (cores)", "QPS per DB core", "k6 CPU (cores)", "k6 CPU of its cores"]
    assert [r[0] for r in t[1:]] == ["2", "4"] and all(float(r[2]) > 0 and float(r[4]) > 0 for r in t[1:])
    # k6's share of the cores it could use (loadgen.usable_cores: GOMAXPROCS when the manifest records it)
    cores = usable_cores(json.loads((res / f"{ids['mariadb']}.json").read_text())["load_generator"])
    for r in t[1:]:
        assert abs(float(r[5].rstrip("%")) - float(r[4]) / cores * 100) <= 1, (r, cores)
    assert "warned about under Load generator" in md
