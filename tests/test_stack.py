"""Issue #2: the local stack carries a workload from k6 through Prometheus, for real."""
import json
import re
import shutil
import socket
import subprocess
import time

import pytest

from conftest import (LOKI, PROM, ROOT, STATE, fresh_db, k6, metric_sum, metrics_text,
                      prom, prom_wait, rows_read, sql, summary, run_testid, userstat)

# serial (conftest.py): it runs `scripts/stack up` and asserts that nothing was started; it sets MariaDB's userstat
pytestmark = [pytest.mark.full, pytest.mark.serial]

_OPTIONS = json.loads((ROOT / "k6/contract.json").read_text())["options"]
DEFAULT_TIMING = {k: str(_OPTIONS[k]["default"]) for k in ("connect_time", "grace_time")}


def test_stack_services_ready(stack):
    """Every local service answers on 127.0.0.1 and Prometheus scrapes its targets."""
    import json
    assert metrics_text(f"{PROM}/-/ready").strip() == "Prometheus Server is Ready."
    assert metrics_text(f"{LOKI}/ready").strip() == "ready"
    status = json.loads(metrics_text("http://127.0.0.1:10080/status"))
    assert status["git_hash"] == "e4e814fdc0af" and "TiDB" in status["version"]
    assert metric_sum(metrics_text("http://127.0.0.1:9100/metrics"), "node_cpu_seconds_total", mode="idle") > 0
    # mysqld_exporter reaches MariaDB (mysql_up 0 would mean it answers but sees no server)
    assert metric_sum(metrics_text("http://127.0.0.1:9104/metrics"), "mysql_up") == 1
    up = prom_wait('up{job=~"tidb|node|mysqld|prometheus|loki"}',
                   lambda r: len(r) == 5 and all(x["value"][1] == "1" for x in r), timeout=30)
    assert {x["metric"]["job"] for x in up} == {"tidb", "node", "mysqld", "prometheus", "loki"}
    # the very file compose mounts, with the local targets beside it
    assert (STATE / "prometheus/prometheus.yml").resolve() == ROOT / "prometheus/prometheus.yml"


def test_tidb_version_is_truthful(stack):
    """The local TiDB names itself by its release line and commit (scripts/lib/versions.sh), not
    by the module proxy's pseudo-version, in tidb_version() and VERSION()."""
    from test_tidb_version import TARGET_JS_RELEASE, versions
    want = versions()
    (v,), = sql("tidb", "SELECT tidb_version()")
    assert TARGET_JS_RELEASE.search(v).group(1) == want["TIDB_RELEASE"] == "v8.5-e4e814fdc0af+go-module-proxy", v
    assert "Git Commit Hash: e4e814fdc0af\n" in v and "Git Branch: release-8.5\n" in v, v
    assert "v1.1.0" not in v
    (server,), = sql("tidb", "SELECT VERSION()")
    assert server == "8.0.11-TiDB-" + want["TIDB_RELEASE"]


def both_services():
    """The services `scripts/stack up --target both` runs (Grafana where it is installed)."""
    out = ["tidb", "mariadb", "mysqld_exporter", "process_exporter", "history_db", "prometheus", "loki",
           "node_exporter", "otelcol"]
    return out + (["grafana"] if shutil.which("grafana") or shutil.which("grafana-server") else [])


def reported_ports(stdout, stderr, services, ports):
    """What a second `up` says: every service already running (none started), each in the status
    table as up with the pid `up` named and its runtime/stack.json port(s) on 127.0.0.1 (TiDB:
    its SQL and status ports). Returns {service: [port, ...]} as reported."""
    assert not re.findall(r"starting (\w+)", stderr), stderr
    pids = dict(re.findall(r"(\w+) already running \(pid (\d+)\)", stderr))
    rows = {line.split()[0]: line.split() for line in stdout.splitlines() if line.split()}
    out = {}
    for svc in services:
        assert svc in pids, f"{svc}: no 'already running' line in:\n{stderr}"
        assert svc in rows, f"{svc}: not in the status table:\n{stdout}"
        _, state, pid, *where = rows[svc]
        assert state == "up" and pid == pids[svc], rows[svc]
        out[svc] = [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", " ".join(where))]
        want = [ports[svc]] + ([ports["tidb_status"]] if svc == "tidb" else [])
        assert out[svc] == want, f"{svc} reported on {out[svc]}, runtime/stack.json says {want}: {rows[svc]}"
    return out


def test_stack_up_is_idempotent_and_reports_ports(stack):
    """A second `up` starts nothing and prints every service with the ports of runtime/stack.json,
    each of which answers a TCP connection."""
    ports = json.loads((ROOT / "runtime/stack.json").read_text())["ports"]["local"]
    p = subprocess.run([str(ROOT / "scripts/stack"), "up", "--target", "both"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    reported = reported_ports(p.stdout, p.stderr, both_services(), ports)
    for svc, svc_ports in reported.items():
        for port in svc_ports:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass  # the reported port is the service's: it listens there
    # a bad --target: tests/test_bad_input_all.py (stack-target)


@pytest.mark.parametrize("target", ["tidb", "mariadb"])
def test_point_select_end_to_end(stack, target):
    """prepare, a 5 s oltp_point_select run; Prometheus holds this run's series, its query
    count matches k6's own within 2%, and the server's own counters for the run's database moved
    as much."""
    db = fresh_db(target, f"sbtest_e2e_{target}_{int(time.time())}")
    port = {"tidb": "4000", "mariadb": "3306"}[target]
    common = ["-e", f"mysql_db={db}", "-e", f"mysql_port={port}", "-e", "tables=2", "-e", "table_size=2000"]
    k6("run", *common, "prepare.js")
    assert sql(target, "SELECT COUNT(*) FROM sbtest1", db)[0][0] == 2000
    assert sql(target, "SELECT COUNT(*) FROM sbtest2", db)[0][0] == 2000

    if target == "tidb":
        # a user's step timing (the suite's other runs are shorter: conftest.py)
        t0 = time.time()
        run = k6("run", *common, "-e", "threads=4", "-e", "time=5", "oltp.js", env=DEFAULT_TIMING)
        wall = time.time() - t0
    else:
        with userstat():  # MariaDB's per-table counters, for this run's own tables
            before = sum(rows_read(db, f"sbtest{t}") for t in (1, 2))
            run = k6("run", *common, "-e", "threads=4", "-e", "time=5", "oltp.js")
            after = sum(rows_read(db, f"sbtest{t}") for t in (1, 2))
    testid = run_testid(run.stdout + run.stderr)
    s = summary(testid)
    (step,) = s["steps"]
    assert step["threads"] == 4 and step["queries"]["total"] > 0
    assert step["queries"]["read"] == step["queries"]["total"] == step["transactions"]
    if target == "tidb":
        # the defaults: 2 s to connect, 5 s measured, 3 s of graceful stop before the run ends
        w = step["window"]
        assert w["step_end"] - w["measure_end"] == 3000 and w["measure_end"] - w["measure_start"] == 5000, w
        assert wall >= 2 + 5 + 3, wall

    total = step["queries"]["total"]
    # The server's own counters, isolated to this run's database (never server-wide figures,
    # which every other client of the shared server moves), count exactly the point selects k6
    # counted, plus the graceful tail of in-flight events: on TiDB its per-schema statement
    # summary (statements_summary_history holds the current window too), on MariaDB the rows
    # read from the run's tables (one per point select).
    if target == "tidb":
        (n,), = sql(target, "SELECT SUM(exec_count) FROM information_schema.statements_summary_history "
                    f"WHERE schema_name = '{db}' AND digest_text LIKE 'select `c` from `sbtest%` where `id` = ?'")
    else:
        n = after - before
    assert total <= int(n) <= total * 1.02 + 50, (n, total)

    q = f'sum(max_over_time(k6_oltp_queries_total{{testid="{testid}",warmup="false"}}[10m]))'
    res = prom_wait(q, lambda r: r and abs(float(r[0]["value"][1]) - total) <= 0.02 * total)
    assert abs(float(res[0]["value"][1]) - total) <= 0.02 * total
    # k6 marks its series stale when the run ends, so look back for the labels
    labels = prom(f'last_over_time(k6_oltp_queries_total{{testid="{testid}"}}[10m])')[0]["metric"]
    assert labels["workload"] == "oltp_point_select" and labels["threads"] == "4"
    assert labels["kind"] == "read" and labels["version"] == s["version"]
    # latency arrives as a native histogram
    p95 = prom(f'histogram_quantile(0.95, sum(last_over_time(k6_oltp_latency_seconds{{testid="{testid}"}}[10m])))')
    assert p95 and float(p95[0]["value"][1]) > 0
    if target == "tidb":
        # Prometheus itself scrapes TiDB's status port: the same counter is there
        assert prom('sum(tidb_executor_statement_total{job="tidb",type="Select"})')
    k6("run", "-e", "command=cleanup", *common, "prepare.js")
    assert sql(target, "SHOW TABLES LIKE 'sbtest%'", db) == ()
    sql(target, f"DROP DATABASE {db}")


def test_logs_reach_loki(stack):
    """The log shipper (otelcol) ships the stack's log files: TiDB's log lines are in Loki by service."""
    import json
    import urllib.parse
    import urllib.request
    deadline = time.time() + 60
    while time.time() < deadline:
        q = urllib.parse.urlencode({"query": '{service="tidb"}', "limit": "5",
                                    "start": str(int((time.time() - 3600) * 1e9))})
        with urllib.request.urlopen(f"{LOKI}/loki/api/v1/query_range?{q}", timeout=10) as r:
            body = json.load(r)
        if body["data"]["result"]:
            assert body["data"]["result"][0]["stream"]["service"] == "tidb"
            return
        time.sleep(1)
    raise AssertionError("no log line with service=tidb reached Loki in 60 s")
