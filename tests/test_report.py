"""Reports (issue #6): scripts/report and scripts/sweep.

- golden: a fixed manifest set + recorded Prometheus answers (served by a local replay
  server) -> report.md exactly equal to the committed expected file;
- integration on the local stack: a real 2-step run -> report whose QPS per step is within
  2% of k6's own summary; a real sweep on MariaDB compared with it -> the comparison table,
  % column and closing sentence; charts decode; report.html rendered by headless Chromium;
- bad input: unknown testid, a testid Prometheus has no data for, two runs with no workload
  in common, unreachable Prometheus -> message, exit code, no report folder left behind.
"""
import base64
import json
import os
import re
import statistics
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import ROOT, fresh_db, k6, password, run_testid, summary
from test_report_helpers import (GOLDEN, chromium_screenshot, count_color, decode_png, grafana_standin,
                                 ink_fraction, k6_summary_table, md_tables_after, prometheus_replay, run_report,
                                 run_sweep)

pytestmark = pytest.mark.fast

GOLDEN_ENV = {"SOURCE_DATE_EPOCH": "1795400000", "TBS_STACK_VERSION": "golden (fixed for the test)",
              "GRAFANA_URL": "", "GRAFANA_TOKEN": "", "TBS_PROM_RECORD": ""}
BLUE, RED = (0x1f, 0x77, 0xb4), (0xd6, 0x27, 0x28)  # the charts' baseline and candidate colours
RESULTS = ROOT / "results"


def check_golden(actual: Path, name):
    expected = GOLDEN / name
    text = actual.read_text()
    if os.environ.get("TBS_GOLDEN_UPDATE"):
        expected.write_text(text)
    assert expected.is_file(), f"missing {expected} (TBS_GOLDEN_UPDATE=1 writes it)"
    if text != expected.read_text():
        import difflib
        diff = "".join(difflib.unified_diff(expected.read_text().splitlines(True), text.splitlines(True),
                                            str(expected), str(actual)))
        pytest.fail(f"report.md differs from {expected}:\n{diff[:6000]}")


def leftovers(parent: Path, name):
    """Anything the report may have left next to its output folder `name`."""
    return [p.name for p in parent.iterdir() if p.name == name or p.name.startswith(f".{name}.")]


# ---------------------------------------------------------------- golden (offline)

def test_golden_comparison_of_two_sweeps(tmp_path):
    out = tmp_path / "cmp"
    with prometheus_replay() as prom:
        p = run_report("--results", str(GOLDEN / "results"), "--prometheus", prom.url, "--out", str(out),
                       "sweep-dev-tidb", "sweep-dev-maria", env=GOLDEN_ENV)
    assert p.returncode == 0, p.stderr
    assert not prom.misses, f"queries not in the recording: {prom.misses}"
    check_golden(out / "report.md", "expected-comparison.md")
    # the fixture's doctored step (README.md): both cross-check warnings, on stderr and in the report
    warn = [line for line in p.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warn) == 2, p.stderr
    assert "dev-maria-oltp_read_write" in warn[0] and "4 threads: QPS" in warn[0] and "over 2%" in warn[0]
    assert "4 threads: p95" in warn[1] and "bucket resolution" in warn[1]
    md = (out / "report.md").read_text()
    for w in warn:
        assert w[len("warning: "):] in md
    assert "Grafana panel snapshots were skipped" in md
    for w in ("oltp_point_select", "oltp_read_write"):
        im = decode_png(out / "charts" / f"{w}.png")
        assert im.width > 500 and count_color(im, BLUE) > 100 and count_color(im, RED) > 100
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_golden_single_run_with_grafana_snapshots(tmp_path):
    out = tmp_path / "one"
    testid = "dev-tidb-oltp_point_select"
    m = json.loads((GOLDEN / "results" / f"{testid}.json").read_text())
    with prometheus_replay() as prom, grafana_standin() as graf:
        url = graf.url.replace("http://", "http://admin@")
        pwfile = tmp_path / "grafana-admin"
        pwfile.write_text("s3cret\n")
        # a password in the argument is refused (the process list shows it), before anything is written
        bad = run_report("--results", str(GOLDEN / "results"), "--prometheus", prom.url,
                         "--grafana", url.replace("admin@", "admin:s3cret@"), "--out", str(out), testid, env=GOLDEN_ENV)
        assert bad.returncode == 2 and "a password in an argument shows in the process list" in bad.stderr, bad.stderr
        assert "s3cret" not in bad.stderr and not out.exists()
        p = run_report("--results", str(GOLDEN / "results"), "--prometheus", prom.url, "--grafana", url,
                       "--grafana-password-file", str(pwfile), "--out", str(out), testid, env=GOLDEN_ENV)
    assert p.returncode == 0, p.stderr
    assert not prom.misses, f"queries not in the recording: {prom.misses}"
    check_golden(out / "report.md", "expected-single.md")
    renders = [(urllib.parse.urlsplit(path), auth) for path, auth in graf.requests if path.startswith("/render/")]
    dash = json.loads((ROOT / "grafana/dashboards/benchmark/benchmark-run.json").read_text())
    ids = {p_["title"]: p_["id"] for p_ in dash["panels"] if p_.get("type") != "row"}
    assert len(renders) == 4
    for u, auth in renders:
        assert u.path == "/render/d-solo/tbs-benchmark-run"
        q = dict(urllib.parse.parse_qsl(u.query))
        assert q["var-testid"] == testid and int(q["panelId"]) in ids.values()
        assert int(q["from"]) == m["run_start"] - 5000 and int(q["to"]) == m["run_end"] + 5000
        assert auth == "Basic " + base64.b64encode(b"admin:s3cret").decode()  # the user of the URL, the file's password
    assert {int(dict(urllib.parse.parse_qsl(u.query))["panelId"]) for u, _ in renders} == \
        {ids[t] for t in ("QPS by thread step", "p95 and p99 latency", "Mean latency", "Errors by code")}
    snaps = sorted((out / "snapshots").glob("*.png"))
    assert len(snaps) == 4
    for s in snaps:
        decode_png(s)
        assert f"](snapshots/{s.name})" in (out / "report.md").read_text()
    assert "s3cret" not in (out / "report.md").read_text() + (out / "report.html").read_text()


def test_out_folder_that_is_not_a_report_is_refused(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "keep.txt").write_text("not a report")
    with prometheus_replay() as prom:
        p = run_report("--results", str(GOLDEN / "results"), "--prometheus", prom.url, "--out", str(out),
                       "dev-tidb-oltp_point_select", env=GOLDEN_ENV)
    assert p.returncode == 2 and "is not a report folder" in p.stderr, p.stderr
    assert [x.name for x in out.iterdir()] == ["keep.txt"]
    assert leftovers(tmp_path, "mine") == ["mine"]


@pytest.mark.full
def test_rewriting_a_report_replaces_it(tmp_path):
    out = tmp_path / "again"
    with prometheus_replay() as prom:
        for _ in range(2):
            p = run_report("--results", str(GOLDEN / "results"), "--prometheus", prom.url, "--out", str(out),
                           "dev-tidb-oltp_point_select", env=GOLDEN_ENV)
            assert p.returncode == 0, p.stderr
    assert leftovers(tmp_path, "again") == ["again"]
    assert sorted(x.name for x in out.iterdir()) == ["charts", "report.html", "report.md"]


# ---------------------------------------------------------------- on the local stack

@pytest.fixture(scope="module")
def tidb_run(stack):
    """A real 2-step oltp_point_select run on TiDB: (testid, k6's stdout)."""
    db = fresh_db("tidb", "sbtest_report_it")
    k6("run", "-e", f"mysql_db={db}", "-e", "tables=2", "-e", "table_size=5000", "-e", "threads=2", "prepare.js")
    p = k6("run", "-e", f"mysql_db={db}", "-e", "tables=2", "-e", "table_size=5000", "-e", "threads=2,4",
           "-e", "time=5", "-e", "warmup_time=2", "oltp.js")
    return run_testid(p.stdout), p.stdout


@pytest.fixture(scope="module")
def maria_sweep(stack, tidb_run, tmp_path_factory):
    """A real sweep on MariaDB (two workloads, reset + ANALYZE before each) whose final report
    compares it with the TiDB run: (sweep id, its manifest, report folder, sweep output)."""
    db = fresh_db("mariadb", "sbtest_report_sweep")
    sid = f"it{int(time.time())}"
    out = tmp_path_factory.mktemp("sweep") / "cmp"
    p = run_sweep("--workloads", "oltp_point_select,oltp_read_only", "--threads", "2,4", "--time", "3",
                  "--warmup-time", "1", "--tables", "2", "--table-size", "5000", "--mysql-db", db, "--reset",
                  "--analyze", "-e", "mysql_port=3306", "--id", sid, "--baseline", tidb_run[0], "--out", str(out))
    assert p.returncode == 0, f"sweep exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    manifest = json.loads((RESULTS / f"sweep-{sid}.json").read_text())
    return f"sweep-{sid}", manifest, out, p


@pytest.mark.full
def test_single_run_report_matches_k6_summary(tidb_run, tmp_path):
    testid, stdout = tidb_run
    out = RESULTS / f"report-{testid}"  # the default folder
    try:
        p = run_report(testid, env={"GRAFANA_URL": ""})
        assert p.returncode == 0, p.stderr
        assert not [l_ for l_ in p.stderr.splitlines() if l_.startswith("warning:")], p.stderr
        md = (out / "report.md").read_text()
        k6_table = k6_summary_table(stdout)
        assert sorted(k6_table) == [2, 4]
        table, dist = md_tables_after(md, "### Point Select performance")
        assert table[0] == ["Threads", "QPS", "TPS", "95% latency (ms)", "avg latency (ms)"]
        # the latency distribution by sysbench's method: the manifest's figures
        assert dist[0] == ["Threads", "min", "50%", "95%", "99%", "max"]
        steps = {s["threads"]: s["latency_ms"] for s in summary(testid)["steps"]}
        for r in dist[1:]:
            lat = steps[int(r[0])]
            assert [float(x) for x in r[1:]] == [round(lat[k], 2) for k in ("min", "p50", "pct_value", "p99", "max")], (r, lat)
        rows = {int(r[0]): [float(x) for x in r[1:]] for r in table[1:]}
        assert sorted(rows) == [2, 4]
        for t, (qps, tps, p95, avg) in rows.items():
            k_qps, k_tps, k_p95, k_avg = k6_table[t]
            assert abs(qps - k_qps) / k_qps <= 0.02, (t, qps, k_qps)
            assert abs(tps - k_tps) / k_tps <= 0.02, (t, tps, k_tps)
            assert max(p95, k_p95) / min(p95, k_p95) <= 1.0905 * 1.02 + 0.01 / min(p95, k_p95), (t, p95, k_p95)
            assert qps > 100
        print(f"QPS agreement {testid}: " + ", ".join(
            f"{t} threads report {rows[t][0]:.2f} k6 {k6_table[t][0]:.2f} ({(rows[t][0] / k6_table[t][0] - 1) * 100:+.3f}%)"
            for t in sorted(rows)))
        # environment, parameters and the exact commands, never the password
        m = summary(testid)
        assert f"| Version | {m['version']} |" in md
        assert "`tidb_enable_prepared_plan_cache` | " in md and "`tidb_txn_mode` | pessimistic |" in md
        assert f"| Cores | {m['load_generator']['cpu_cores']} |" in md
        assert "-e mysql_db=sbtest_report_it \\\n    -e tables=2 \\\n    -e table_size=5000 \\\n    k6/prepare.js" in md
        # the suite's step timing (conftest.py) is not the default: the command carries it
        timing = "".join(f"    -e {k}={os.environ[k]} \\\n" for k in ("connect_time", "grace_time"))
        # and the stack's TiDB status address (k6.env; the profiles' source): the target's, shown as mysql_host is
        if m["options"].get("tidb_status_addr"):
            timing += f"    -e tidb_status_addr={m['options']['tidb_status_addr']} \\\n"
        assert "-e threads=2,4 \\\n    -e time=5 \\\n    -e warmup_time=2 \\\n" + timing + "    k6/oltp.js" in md, md
        html = (out / "report.html").read_text()
        assert password() not in md and password() not in html
        assert "Grafana panel snapshots were skipped" in md
        im = decode_png(out / "charts" / "oltp_point_select.png")
        assert count_color(im, BLUE) > 100
        shot = chromium_screenshot(out / "report.html", tmp_path / "single.png")
        im = decode_png(shot)
        assert im.size == (1200, 2000) and ink_fraction(im) > 0.03
    finally:
        import shutil
        shutil.rmtree(out, ignore_errors=True)


@pytest.mark.full
def test_sweep_writes_manifest_and_runs(maria_sweep):
    sid, manifest, out, p = maria_sweep
    assert manifest["sweep"] == sid and manifest["status"] == "complete"
    assert [r["workload"] for r in manifest["runs"]] == ["oltp_point_select", "oltp_read_only"]
    assert manifest["reset"] and manifest["analyze"] and manifest["threads"] == [2, 4]
    for r in manifest["runs"]:
        m = summary(r["testid"])
        assert m["workload"] == r["workload"] and m["product"] == "mariadb"
        assert [s["threads"] for s in m["steps"]] == [2, 4] and m["options"]["time"] == 3
        assert "reset_seconds" in r and "analyze_seconds" in r
    assert "ANALYZE TABLE sbtest2" in p.stdout and "command=cleanup" in p.stdout


@pytest.mark.full
def test_comparison_report_table_and_percent_column(maria_sweep, tidb_run, tmp_path):
    sid, manifest, out, _ = maria_sweep
    md = (out / "report.md").read_text()
    assert md.startswith("# Sysbench Performance Test Report -- MariaDB ")
    tables = md_tables_after(md, "### Point Select performance")
    assert len(tables) == 3  # each side's table, then the seeds' comparison columns
    cmp_ = tables[2]
    hdr = cmp_[0]
    assert hdr[0] == "Threads" and hdr[5:7] == ["QPS improvement", "p (QPS)"]
    assert hdr[1].startswith("TiDB ") and hdr[1].endswith(" QPS") and hdr[3].startswith("MariaDB ")
    assert hdr[2].endswith("95% latency (ms)") and hdr[4].endswith("95% latency (ms)")
    changes = []
    for r in cmp_[1:]:
        b, c = float(r[1]), float(r[3])
        # one sample a side: no change is claimed (benchstat's ~), and the p column says why
        assert r[5] == "~" and r[6] == "n=1: no significance" and r[8] == "n=1: no significance"
        changes.append((c - b) / b * 100)
    assert [int(r[0]) for r in cmp_[1:]] == [2, 4]
    m = re.search(r"Compared with (TiDB \S+), (MariaDB \S+)'s Point Select QPS cannot be said to change "
                  r"\(n=1: no significance\): the single samples differ by ([+-][\d.]+)%", md)
    assert m, md
    mean = statistics.mean(changes)
    assert abs(float(m.group(3)) - mean) < 0.011 + 100 * 0.01 / min(float(r[1]) for r in cmp_[1:])
    assert "Point Select QPS is up" not in md and "Point Select QPS is down" not in md
    assert md.index("## What differs") < md.index("## Test purpose")
    assert "| target | `address` | 127.0.0.1:4000/" in md and "| option | `mysql_port` | 4000 | 3306 |" in md
    # the side tables agree with the comparison columns
    assert [r[1] for r in tables[0][1:]] == [r[1] for r in cmp_[1:]]
    assert [r[1] for r in tables[1][1:]] == [r[3] for r in cmp_[1:]]
    assert "Not compared (measured by one side only): MariaDB " in md and "only: oltp_read_only" in md
    assert "### Read Only performance" not in md
    assert "| Before each workload | — | data reset (cleanup + prepare), ANALYZE TABLE |" in md
    assert f"Run the sweep (`{sid}`)" in md and "scripts/sweep --workloads oltp_point_select,oltp_read_only" in md
    # pictures: both runs on one chart; the HTML as a reader sees it
    im = decode_png(out / "charts" / "oltp_point_select.png")
    assert count_color(im, BLUE) > 100 and count_color(im, RED) > 100
    shot = decode_png(chromium_screenshot(out / "report.html", tmp_path / "cmp.png"))
    assert shot.size == (1200, 2000) and ink_fraction(shot) > 0.03
    tall = decode_png(chromium_screenshot(out / "report.html", tmp_path / "cmp-tall.png", size="1200,12000"))
    assert count_color(tall, RED, tol=20) > 50, "the chart did not show in Chromium"
    print(f"comparison {tidb_run[0]} vs {sid}: changes {changes}, sentence: {m.group(0)}")


# ---------------------------------------------------------------- bad input

def test_unknown_testid(tmp_path):
    p = run_report("--out", str(tmp_path / "r"), "no-such-testid-42")
    assert p.returncode == 2
    assert "error: unknown run 'no-such-testid-42'" in p.stderr and "results/no-such-testid-42.json" in p.stderr
    assert list(tmp_path.iterdir()) == []
    p = run_report("no-such-testid-42")  # default folder
    assert p.returncode == 2 and not (RESULTS / "report-no-such-testid-42").exists()
    # a testid that is a path: tests/test_bad_input_all.py (report-path)


@pytest.mark.full
def test_testid_without_data_in_prometheus(stack, tmp_path):
    """A real run that did not write to Prometheus (K6_OUT empty): its manifest exists,
    Prometheus has nothing in its time range."""
    db = fresh_db("tidb", "sbtest_report_nodata")
    env = {"K6_OUT": ""}
    k6("run", "-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=1000", "prepare.js", env=env)
    r = k6("run", "-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=1000", "-e", "threads=2",
           "-e", "time=2", "oltp.js", env=env)
    testid = run_testid(r.stdout)
    assert summary(testid)["steps"][0]["queries"]["total"] > 0
    p = run_report("--out", str(tmp_path / "r"), testid)
    assert p.returncode == 3, p.stderr
    assert f"has no data for testid '{testid}' in its time range" in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []
    p = run_report(testid)
    assert p.returncode == 3 and not (RESULTS / f"report-{testid}").exists()
    assert not [x for x in RESULTS.iterdir() if x.name.startswith(f".report-{testid}")]


@pytest.mark.full
def test_two_runs_without_a_common_workload(tidb_run, maria_sweep, tmp_path):
    read_only = maria_sweep[1]["runs"][1]["testid"]
    p = run_report("--out", str(tmp_path / "r"), tidb_run[0], read_only)
    assert p.returncode == 2
    assert (f"runs '{tidb_run[0]}' (workloads: oltp_point_select) and '{read_only}' (workloads: oltp_read_only) "
            "have no workload in common") in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.full
def test_unreachable_prometheus(tidb_run, tmp_path):
    p = run_report("--prometheus", "http://127.0.0.1:9", "--out", str(tmp_path / "r"), tidb_run[0])
    assert p.returncode == 1 and "cannot reach Prometheus at http://127.0.0.1:9" in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []


def test_sweep_bad_input():
    """(unknown workloads, bad --threads and unknown options: tests/test_bad_input_all.py)"""
    before = set(RESULTS.glob("sweep-*.json"))
    p = run_sweep("--workloads", "oltp_point_select", "--threads", "2", "-e", "workload=oltp_insert")
    assert p.returncode == 2 and "use --workloads" in p.stderr
    assert set(RESULTS.glob("sweep-*.json")) == before
