"""k6's built-in web dashboard as the live view without Grafana (issue 13).

scripts/k6 with K6_WEB_DASHBOARD=true serves the dashboard of the k6 we build (xk6-dashboard)
on 127.0.0.1, configured by grafana/k6-web-dashboard/config.json to show our metrics, and saves
its HTML export as <results_dir>/<testid>-web-dashboard.html. The live test runs a real 2-step
oltp_read_write run on the local MariaDB, cuts one connection per step (so reconnects happen),
looks at the page in headless Chromium (DevTools protocol, tests/cdp.py) while the second step
runs, and keeps the screenshot (tests print its path)."""
import json
import os
import re
import subprocess
import threading
import time
import urllib.request

from cdp import Chromium, free_port
from conftest import ROOT, connect, fresh_db, k6, prom_wait
from test_report_helpers import decode_png

import pytest

# quiet (conftest.py): its screenshots must land inside a step's seconds
pytestmark = [pytest.mark.full, pytest.mark.quiet]

CONFIG = ROOT / "grafana/k6-web-dashboard/config.json"
# the metrics a run writes (docs/CONTRACT.md), as k6 names them, and k6's own vus
CONTRACT_METRICS = {"oltp_queries", "oltp_transactions", "oltp_latency", "oltp_errors", "oltp_reconnects", "vus"}
DB = "sbtest_webdash"
STEP_S, WARMUP_S = 16, 2


def panels(cfg):
    for tab in cfg["tabs"]:
        for sec in tab["sections"]:
            yield from sec["panels"]


def test_config_shows_our_metrics_per_step():
    cfg = json.loads(CONFIG.read_text())
    ps = {p["title"]: p for p in panels(cfg)}
    ids = [p["id"] for p in panels(cfg)]
    assert len(ids) == len(set(ids))
    want = {"QPS": "oltp_queries[?!tags && rate]", "TPS": "oltp_transactions[?!tags && rate]",
            "QPS read": "oltp_queries[?tags.kind == 'read' && rate]",
            "QPS write": "oltp_queries[?tags.kind == 'write' && rate]",
            "QPS other": "oltp_queries[?tags.kind == 'other' && rate]",
            "p95 latency": "oltp_latency[?!tags && p95]", "Errors": "oltp_errors[?!tags && rate]",
            "Reconnects": "oltp_reconnects[?!tags && rate]",
            "Latency per thread step": "[?tags.threads && trend]",
            "Counts per thread step": "[?tags.threads && counter]"}
    for title, query in want.items():
        assert [s["query"] for s in ps[title]["series"]] == [query], title
    assert ps["Latency per thread step"]["kind"] == ps["Counts per thread step"]["kind"] == "summary"
    # xk6-dashboard v0.8.1's charts blank the whole page when a line is added to a chart already
    # shown (seen live: a TypeError in the UI at the second step, or when a page opened before
    # the first samples gets them), so the live view is stat panels (value + trend line) and tables
    assert {p["kind"] for p in panels(cfg)} == {"stat", "summary"}
    for p in panels(cfg):
        assert p["kind"] in ("stat", "chart", "summary") and p["summary"], p["title"]
        for s in p["series"]:
            name = re.match(r"^(\w*)\[", s["query"]).group(1)
            assert name == "" or name in CONTRACT_METRICS, f"{p['title']}: {s['query']}"


def test_scripts_k6_wires_the_dashboard_to_localhost(tmp_path):
    """What scripts/k6 gives k6 when K6_WEB_DASHBOARD=true (a stand-in k6 prints its environment)."""
    fake = tmp_path / "k6"
    fake.write_text("#!/bin/sh\n[ \"$1\" = version ] && { echo 'k6 v0 (stand-in)'; exit 0; }\nenv | grep -E '^(K6_WEB_DASHBOARD|XK6_DASHBOARD)' | sort\n")
    fake.chmod(0o755)
    env = {**os.environ, "K6_BIN": str(fake), "K6_WEB_DASHBOARD": "true", "TBS_LOG_DIR": ""}
    env.pop("K6_WEB_DASHBOARD_HOST", None)
    p = subprocess.run([str(ROOT / "scripts/k6"), "run", "-e", f"results_dir={tmp_path}", "oltp.js"],
                       capture_output=True, text=True, env=env, cwd=ROOT / "k6", timeout=60)
    assert p.returncode == 0, p.stderr
    got = dict(line.split("=", 1) for line in p.stdout.splitlines())
    assert got["K6_WEB_DASHBOARD_HOST"] == "127.0.0.1"
    assert got["XK6_DASHBOARD_CONFIG"] == str(CONFIG)
    assert got["K6_WEB_DASHBOARD_TAGS"] == "kind,threads" and got["K6_WEB_DASHBOARD_PERIOD"] == "2s"
    # and says what the dashboard costs (docs/dashboards.md)
    assert "web dashboard keeps every latency sample of the run and sorts them all every 2s" in p.stderr, p.stderr
    # the export's name (<results_dir>/<testid>-web-dashboard.html) is the launcher core's
    # (k6/ext/launch, TestWebExport); the live test below opens the file a real run saved
    # without K6_WEB_DASHBOARD nothing is set
    env.pop("K6_WEB_DASHBOARD")
    p = subprocess.run([str(ROOT / "scripts/k6"), "run", "-e", f"results_dir={tmp_path}", "oltp.js"],
                       capture_output=True, text=True, env=env, cwd=ROOT / "k6", timeout=60)
    assert p.returncode == 0 and "K6_WEB_DASHBOARD_EXPORT" not in p.stdout, p.stdout
    assert "web dashboard" not in p.stderr, p.stderr


def wait_port(port, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
                return
        except OSError:
            assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.3)
    raise AssertionError(f"the web dashboard did not listen on 127.0.0.1:{port}")


def kill_one_connection():
    """Cuts one of the run's connections (the sbtest user may kill its own): k6 reconnects."""
    with connect("mariadb") as c, c.cursor() as cur:
        cur.execute("SELECT id FROM information_schema.processlist WHERE user = 'sbtest' AND db = %s "
                    "AND id <> CONNECTION_ID() ORDER BY id LIMIT 1", (DB,))
        row = cur.fetchone()
        if row:
            cur.execute(f"KILL CONNECTION {int(row[0])}")
        return bool(row)


def test_live_run_shows_our_panels_with_data_and_saves_the_export(stack, tmp_path):
    fresh_db("mariadb", DB)
    common = ["-e", "mysql_port=3306", "-e", f"mysql_db={DB}", "-e", "tables=1", "-e", "table_size=2000"]
    k6("run", "-q", *common, "prepare.js", env={"K6_OUT": ""})
    port = free_port()
    testid = f"webdash-{int(time.time())}"
    env = {**os.environ, "K6_WEB_DASHBOARD": "true", "K6_WEB_DASHBOARD_PORT": str(port)}
    proc = subprocess.Popen([str(ROOT / "scripts/k6"), "run", "-q", *common, "-e", "workload=oltp_read_write",
                             "-e", "threads=2,4", "-e", f"time={STEP_S}", "-e", f"warmup_time={WARMUP_S}",
                             "-e", f"testid={testid}", "-e", f"results_dir={tmp_path}",
                             # sysbench's default list + 2013: a cut connection is an ignored error and a reconnect
                             "-e", "mysql_ignore_errors=1213,1020,1205,2013", "oltp.js"],
                            cwd=ROOT / "k6", env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    chrome = None
    try:
        wait_port(port, proc)
        reader.start()
        listen = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True).stdout.split()
        assert listen[3] == f"127.0.0.1:{port}", listen  # local address: loopback only
        chrome = Chromium()
        # one lost connection in each step's measured window (its start marker is in Prometheus),
        # then look at the page well into the second step. The page is opened once samples flow:
        # xk6-dashboard v0.8.1 blanks a page whose charts were drawn before their first samples.
        for threads in (2, 4):
            prom_wait(f'max_over_time(k6_oltp_marker{{testid="{testid}", event="measure_start", threads="{threads}"}}[5m])',
                      bool, timeout=STEP_S * 3)
            if threads == 2:
                chrome.navigate(f"http://127.0.0.1:{port}/", expect="QPS read")
            time.sleep(4)
            assert kill_one_connection(), f"no connection of the run to cut at {threads} threads"
        time.sleep(6)
        text = chrome.text()
        shots = ROOT / "results" if (ROOT / "results").is_dir() else tmp_path
        shot = chrome.screenshot(str(shots / f"{testid}-live.png"))
        assert chrome.click_text("Per thread step")
        time.sleep(1)
        steps_text = chrome.text()
        steps_shot = chrome.screenshot(str(shots / f"{testid}-live-steps.png"))
        print(f"live web dashboard screenshots: {shot} {steps_shot}")
        assert proc.poll() is None, "the run ended before the screenshot"
    finally:
        if chrome:
            chrome.close()
    assert proc.wait(timeout=180) == 0, "".join(out)[-3000:]
    reader.join(timeout=10)
    summary = json.loads((tmp_path / f"{testid}.json").read_text())
    # the page: our tab and panels, each with data (series legends; the per-step tables)
    for title in ("QPS", "QPS read", "QPS write", "QPS other", "TPS", "VUs", "p95 latency", "p99 latency",
                  "Errors", "Reconnects"):
        assert f"\n{title}\n" in f"\n{text}\n", f"no panel {title!r} (a stat shows once it has data):\n{text}"
    assert "no data" not in text, text
    for row in ("oltp_latency{threads:2}", "oltp_latency{threads:4}", "oltp_transactions{threads:2}",
                "oltp_transactions{threads:4}", "oltp_reconnects{threads:2}", "oltp_reconnects{threads:4}",
                "oltp_errors{threads:2}", "oltp_errors{threads:4}"):
        assert row in steps_text, f"{row} not in the per-step tables:\n{steps_text}"
    assert "Loading" not in text
    assert [s["reconnects"] for s in summary["steps"]] >= [1, 1], summary["steps"]
    # the screenshots are the page with its figures (dark text and trend lines on the light page)
    import numpy as np
    for png, least in ((shot, 3000), (steps_shot, 8000)):
        im = decode_png(png)
        assert im.size == (1400, 2200)
        dark = (np.asarray(im.convert("L")) < 160).sum()
        assert dark > least, (png, dark)
    # the HTML export, beside the run's manifest, opens and shows the same panels
    export = tmp_path / f"{testid}-web-dashboard.html"
    assert export.is_file() and export.stat().st_size > 50_000, list(tmp_path.iterdir())
    assert not list(tmp_path.glob(".web-dashboard-*")), list(tmp_path.iterdir())
    chrome = Chromium()
    try:
        chrome.navigate(export.as_uri(), expect="oltp_latency{threads:4}")
        etext = chrome.text()
    finally:
        chrome.close()
    for row in ("Per thread step", "oltp_latency{threads:2}", "oltp_reconnects{threads:4}", "oltp_errors{threads:4}"):
        assert row in etext, f"{row} not in the export:\n{etext[:3000]}"
    # ... and the run's report carries it
    from test_report_helpers import run_report
    p = run_report("--results", str(tmp_path), "--out", str(tmp_path / "report"), testid, env={"GRAFANA_URL": ""})
    assert p.returncode == 0, p.stderr
    copied = tmp_path / "report" / "web-dashboard" / export.name
    assert copied.read_bytes() == export.read_bytes()
    assert f"](web-dashboard/{export.name})" in (tmp_path / "report" / "report.md").read_text()
