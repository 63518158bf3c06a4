"""Issue 11, bad input everywhere: k6 options, DSNs, prepare/cleanup, scripts/k6, scripts/stack,
scripts/report, scripts/sweep and the compose environment. Every case ends with a non-zero
exit and one line that names the bad value and what is valid, prints no password, creates or
drops no table (the database the cases point at keeps exactly its one table and its rows), and
leaves no file behind (each case writes into an empty folder of its own). k6's option checks
stop before the first query (no testid is printed); a refused port fails at once."""
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, fresh_db, k6, password, sql
from tidbbench.k6env import read_k6_env

pytestmark = pytest.mark.full

DB = "sbtest_badin"
ROWS = 100
WORKLOADS = "oltp_point_select, oltp_read_only, oltp_read_write"


@pytest.fixture(scope="module")
def db(stack):
    fresh_db("tidb", DB)
    k6("run", "-e", f"mysql_db={DB}", "-e", "tables=1", "-e", f"table_size={ROWS}", "prepare.js")
    yield DB
    sql("tidb", f"DROP DATABASE {DB}")


# (id, tool, arguments, [substrings that one output line must all hold])
K6_RUN = [
    ("workload", ["-e", "workload=oltp_foo"], ["invalid option workload=oltp_foo: unknown workload (valid: " + WORKLOADS]),
    ("threads-zero", ["-e", "threads=0"], ["threads=0", "thread count >= 1"]),
    ("threads-twice", ["-e", "threads=4,4"], ["threads=4,4", "may appear once"]),
    ("threads-junk", ["-e", "threads=150,,x"],
     ["invalid option threads=150,,x: must be a thread count >= 1, or a comma-separated list"]),
    ("time-negative", ["-e", "time=-1"], ["time=-1", "whole number >= 1"]),
    ("time-text", ["-e", "time=abc"], ["time=abc", "whole number >= 1"]),
    ("warmup", ["-e", "warmup_time=x"], ["warmup_time=x", "whole number >= 0"]),
    ("tables", ["-e", "tables=0"], ["invalid option tables=0: must be a whole number >= 1"]),
    ("table-size", ["-e", "table_size=-5"], ["invalid option table_size=-5: must be a whole number >= 0"]),
    ("unknown-option", ["-e", "tabels=3"], ["unknown option 'tabels' (did you mean 'tables'?)"]),
    ("rand-type", ["-e", "rand_type=foo"],
     ["rand_type=foo", "unknown distribution (valid: uniform, gaussian, special, pareto, zipfian)"]),
    ("rand-spec-pct", ["-e", "rand_spec_pct=101"], ["rand_spec_pct=101", "from 0 to 100"]),
    ("pareto-h", ["-e", "rand_pareto_h=1.5"], ["rand_pareto_h=1.5", "between 0 and 1"]),
    ("ignore-errors", ["-e", "mysql_ignore_errors=12a"], ["mysql_ignore_errors=12a", "all or a comma-separated list"]),
    ("preset", ["-e", "preset=mysql"], ["preset=mysql", "valid: tidb"]),
    ("testid", ["-e", "testid=../x"], ["testid=../x", "letters, digits"]),
    ("report-interval", ["-e", "report_interval=-1"], ["report_interval=-1", "whole number >= 0"]),
    ("mysql-ssl", ["-e", "mysql_ssl=maybe"], ["mysql_ssl=maybe", "valid: off, on"]),
    ("point-selects", ["-e", "point_selects=-1"], ["point_selects=-1", "whole number >= 0"]),
    ("skip-trx", ["-e", "skip_trx=perhaps"], ["skip_trx=perhaps", "on/off"]),
    ("range-size", ["-e", "range_size=0"], ["range_size=0", "whole number >= 1"]),
    ("threads-per-vu-zero", ["-e", "threads_per_vu=0"], ["invalid option threads_per_vu=0: must be auto or a whole number >= 1"]),
    ("threads-per-vu-js-path", ["-e", "threads_per_vu=4", "-e", "native_loop=off"],
     ["invalid option threads_per_vu=4: only the native loop runs several threads per VU", "use threads_per_vu=1 or auto"]),
    ("threads-per-vu-rate", ["-e", "threads_per_vu=2", "-e", "rate=50"], ["threads_per_vu=2", "with rate=50 is not"]),
    ("port-range", ["-e", "mysql_port=70000"], ["mysql_port=70000", "port from 1 to 65535"]),
    ("port-text", ["-e", "mysql_port=abc"], ["mysql_port=abc", "whole number >= 1"]),
    # DSNs: the server is asked, the answer names host, port, user and database (never the password)
    ("port-refused", ["-e", "mysql_port=4999"], ["cannot connect to MySQL at 127.0.0.1:4999 as user 'sbtest'"]),
    ("host-unknown", ["-e", "mysql_host=no-such-host.invalid"], ["cannot connect to MySQL at no-such-host.invalid:4000", "no such host"]),
    ("user-unknown", ["-e", "mysql_user=nobody"], ["127.0.0.1:4000 as user 'nobody'", "Access denied"]),
    ("password-wrong", ["-e", "mysql_password=not-the-secret-xyz"], ["127.0.0.1:4000 as user 'sbtest'", "Access denied"]),
    ("db-unknown", ["-e", "mysql_db=sbtest_nonexistent"], ["database 'sbtest_nonexistent'", "Unknown database"]),
    ("tables-missing", ["-e", "tables=3"], [f"table sbtest2 does not exist in database '{DB}'", "run prepare first"]),
]
# the cases the server answers (DSNs, tables); the others stop before any query
K6_RUN_ASKS_THE_SERVER = {"port-refused", "host-unknown", "user-unknown", "password-wrong", "db-unknown", "tables-missing"}
K6_PREPARE = [
    ("command", ["-e", "command=drop"], ["command=drop", "valid: prepare, cleanup, prewarm"]),
    ("prepare-mode", ["-e", "prepare_mode=fast"], ["prepare_mode=fast", "valid: auto, server, client"]),
    ("prepare-tables", ["-e", "tables=0"], ["tables=0", "whole number >= 1"]),
    ("prepare-batch", ["-e", "prepare_batch=0"], ["prepare_batch=0", "whole number >= 1"]),
    ("prepare-size", ["-e", "table_size=x"], ["table_size=x", "whole number >= 0"]),
    ("cleanup-tables", ["-e", "command=cleanup", "-e", "tables=abc"], ["tables=abc", "whole number >= 1"]),
]
STACK = [
    ("stack-target", ["up", "--target", "oracle"], ["unknown target 'oracle' (valid: tidb, mariadb, both)"]),
    ("stack-option", ["up", "--bogus"], ["unknown option '--bogus'", "valid: --target"]),
    ("stack-command", ["frobnicate"], ["unknown command 'frobnicate'", "valid: up, down, status"]),
    ("stack-target-missing", ["up", "--target"], ["--target needs a value", "tidb, mariadb or both"]),
]
REPORT = [
    ("report-unknown", ["no-such-testid-42"], ["unknown run 'no-such-testid-42'", "no run manifest"]),
    ("report-path", ["../etc/passwd"], ["unknown run '../etc/passwd'", "letters, digits"]),
    ("report-grafana-password", ["--grafana", "http://admin:s3cret@127.0.0.1:3000", "x"],
     ["--grafana http://admin:***@127.0.0.1:3000: a password in an argument shows in the process list",
      "--grafana-password-file FILE"]),
    ("report-grafana-password-file", ["--grafana", "http://admin@127.0.0.1:3000", "--grafana-password-file",
                                      "/nonexistent/grafana-admin", "x"],
     ["cannot read the Grafana password file /nonexistent/grafana-admin"]),
]
SWEEP = [
    ("sweep-workload", ["--workloads", "oltp_nope", "--threads", "2"], ["unknown workload 'oltp_nope'", "valid: " + WORKLOADS]),
    ("sweep-threads", ["--workloads", "oltp_point_select", "--threads", "2,x"], ["invalid --threads 2,x", "thread counts >= 1"]),
    ("sweep-option", ["--workloads", "oltp_point_select", "--threads", "2", "-e", "tabels=3"], ["unknown option 'tabels'", "valid: "]),
    ("sweep-time", ["--workloads", "oltp_point_select", "--threads", "2", "--time", "-1"], ["invalid --time -1", "must be >= 1"]),
    ("sweep-k6-value", ["--workloads", "oltp_point_select", "--threads", "2", "-e", "mysql_port=99999"], ["mysql_port=99999", "port from 1 to 65535"]),
    ("sweep-k6-value-with-password", ["--workloads", "oltp_point_select", "--threads", "2", "-e", "rand_type=foo",
                                      "-e", "mysql_password=PASSWORD"], ["rand_type=foo", "valid: uniform"]),
    ("sweep-grafana-password", ["--workloads", "oltp_point_select", "--threads", "2",
                                "--grafana", "http://admin:PASSWORD@127.0.0.1:3000"],
     ["a password in an argument shows in the process list", "--grafana-password-file FILE"]),
]
COMPOSE = [
    ("compose-no-tidb-version", {"TIDB_VERSION": ""}, ["TIDB_VERSION", "set TIDB_VERSION in .env"]),
    ("compose-no-prometheus-image", {"PROMETHEUS_IMAGE": ""}, ["PROMETHEUS_IMAGE", "set PROMETHEUS_IMAGE in .env"]),
    ("compose-memory", {"TIKV_MEMORY": "lots"}, ["invalid size: 'lots'", "memory"]),
]
# Set but wrong: docker compose cannot tell; the env-check service (compose/check.yaml runs
# compose/env_check.py before any other container) stops `docker compose up`. Without a Docker
# engine here, the script runs directly on the same variables (.env plus the bad value).
ENV_CHECK = [
    ("env-check-tidb-latest", {"TIDB_VERSION": "latest"}, ["TIDB_VERSION='latest'", "valid: vMAJOR.MINOR.PATCH"]),
    ("env-check-tidb-nightly", {"TIDB_VERSION": "nightly"}, ["TIDB_VERSION='nightly'", "valid: vMAJOR.MINOR.PATCH"]),
    ("env-check-tidb-no-v", {"TIDB_VERSION": "8.5.6"}, ["TIDB_VERSION='8.5.6'", "valid: vMAJOR.MINOR.PATCH"]),
    ("env-check-cluster-config", {"CLUSTER_CONFIG": "fancy"}, ["CLUSTER_CONFIG='fancy'", "valid: default, seed"]),
    ("env-check-image-latest", {"PROMETHEUS_IMAGE": "prom/prometheus:latest"},
     ["PROMETHEUS_IMAGE='prom/prometheus:latest'", "never latest"]),
    ("env-check-image-untagged", {"LOKI_IMAGE": "grafana/loki"}, ["LOKI_IMAGE='grafana/loki'", "never latest or no tag"]),
    ("env-check-retention", {"PROMETHEUS_RETENTION": "forever"}, ["PROMETHEUS_RETENTION='forever'", "valid: numbers with units"]),
]


def check(p, expect, out_dir=None):
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-2000:]
    lines = [line for line in out.splitlines() if all(e in line for e in expect)]
    assert lines, f"no line holds {expect}:\n{out[-3000:]}"
    assert password() not in out
    if out_dir is not None:
        left = [x for x in Path(out_dir).rglob("*")]
        assert left == [], f"left behind: {left}"


def unchanged(target_db):
    tables = {r[0] for r in sql("tidb", "SHOW TABLES", target_db)}
    assert tables == {"sbtest1"}, tables
    assert sql("tidb", "SELECT COUNT(*) FROM sbtest1", target_db)[0][0] == ROWS


@pytest.mark.parametrize("case,args,expect", K6_RUN, ids=[c[0] for c in K6_RUN])
def test_k6_run_bad_input(db, tmp_path, case, args, expect):
    t0 = time.time()
    p = k6("run", "-e", f"mysql_db={db}", "-e", "tables=1", "-e", f"table_size={ROWS}", *args, "oltp.js",
           env={"results_dir": str(tmp_path)}, check=False, timeout=60)
    secs = time.time() - t0
    check(p, expect, tmp_path)
    assert "not-the-secret-xyz" not in p.stdout + p.stderr
    if case not in K6_RUN_ASKS_THE_SERVER:
        assert not re.search(r"testid=\S+ workload=", p.stdout + p.stderr)  # setup (the first query) never ran
    if case == "port-refused":
        assert secs < 10, f"a refused port took {secs:.1f} s to fail"
    unchanged(db)


@pytest.mark.parametrize("case,args,expect", K6_PREPARE, ids=[c[0] for c in K6_PREPARE])
def test_k6_prepare_bad_input(db, tmp_path, case, args, expect):
    p = k6("run", "-e", f"mysql_db={db}", *args, "prepare.js", env={"results_dir": str(tmp_path)}, check=False, timeout=60)
    check(p, expect, tmp_path)
    unchanged(db)


def test_prepare_refuses_existing_tables_and_changes_nothing(stack, tmp_path):
    """Refused prepare leaves a table whose rows were changed as it was (so not re-made with
    the same rows); recreate=true makes it anew."""
    db = fresh_db("tidb", "sbtest_bad_exists")
    common = ["-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=100"]
    k6("run", *common, "prepare.js")
    sql("tidb", "DELETE FROM sbtest1 WHERE id <= 10", db)
    p = k6("run", *common, "prepare.js", env={"results_dir": str(tmp_path)}, check=False, timeout=60)
    check(p, ["table sbtest1 already exists", "nothing was changed"], tmp_path)
    assert sql("tidb", "SELECT COUNT(*) FROM sbtest1", db)[0][0] == 90
    k6("run", *common, "-e", "recreate=true", "prepare.js")
    assert sql("tidb", "SELECT COUNT(*) FROM sbtest1", db)[0][0] == 100
    sql("tidb", f"DROP DATABASE {db}")


@pytest.mark.parametrize("how", ["scripts/k6", "stock k6 run"])
@pytest.mark.parametrize("what", ["file", "read-only"])
def test_k6_results_dir_bad(db, tmp_path, what, how):
    """scripts/k6 (the launcher) refuses a results folder it cannot write before k6 starts; a
    stock `k6 run oltp.js` (bin/k6 with the stack's settings, no launcher) stops in setup(),
    before its first query, instead of losing the run's summary at its end."""
    if what == "file":
        target = tmp_path / "afile"
        target.write_text("")
    else:
        target = tmp_path / "ro"
        target.mkdir()
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(target)], capture_output=True, text=True)
        if m.returncode != 0:
            pytest.skip(f"cannot mount a read-only tmpfs here: {m.stderr.strip()}")
    try:
        if how == "scripts/k6":
            p = k6("run", "-e", f"mysql_db={db}", "-e", f"results_dir={target}", "oltp.js", check=False, timeout=60)
            check(p, [f"results_dir {target} is", "-e results_dir=DIR"])
            assert p.returncode == 2 and "testid=" not in p.stdout + p.stderr
        else:
            env = dict(os.environ)
            env.update(read_k6_env(ROOT / ".stack/k6.env"))
            env.update(K6_OUT="", results_dir=str(target))
            p = subprocess.run([str(ROOT / "bin/k6"), "run", "--quiet", "--no-usage-report", "-e", f"mysql_db={db}",
                                "-e", "threads=2", "-e", "time=600", "oltp.js"],
                               cwd=ROOT / "k6", env=env, capture_output=True, text=True, timeout=60)
            check(p, [f"results_dir {target} is", "-e results_dir=DIR", "nothing was run"])
            assert not re.search(r"testid=\S+ workload=", p.stdout + p.stderr)  # setup stopped before its first query
    finally:
        if what != "file":
            subprocess.run(["umount", str(target)], capture_output=True)
    unchanged(db)


@pytest.mark.parametrize("case,args,expect", STACK, ids=[c[0] for c in STACK])
def test_stack_bad_input(case, args, expect):
    p = subprocess.run([str(ROOT / "scripts/stack"), *args], capture_output=True, text=True, timeout=60)
    check(p, expect)


@pytest.mark.parametrize("case,args,expect", REPORT, ids=[c[0] for c in REPORT])
def test_report_bad_input(tmp_path, case, args, expect):
    results = tmp_path / "results"
    results.mkdir()
    p = subprocess.run([str(ROOT / "scripts/report"), "--results", str(results), "--out", str(tmp_path / "out"), *args],
                       capture_output=True, text=True, timeout=120)
    check(p, expect, results)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case,args,expect", SWEEP, ids=[c[0] for c in SWEEP])
def test_sweep_bad_input(db, tmp_path, case, args, expect):
    args = [a.replace("PASSWORD", password()) for a in args]
    p = subprocess.run([str(ROOT / "scripts/sweep"), "--results", str(tmp_path), "--mysql-db", db, "--no-report", *args],
                       capture_output=True, text=True, timeout=120)
    check(p, expect, tmp_path)
    assert p.returncode == 2, p.returncode
    unchanged(db)


def compose_bin():
    p = ROOT / "bin/docker-compose"
    found = str(p) if p.exists() else shutil.which("docker-compose")
    if not found:
        pytest.skip("docker-compose is not installed (scripts/test-setup.d/40-compose.sh installs it)")
    return found


@pytest.mark.parametrize("case,env,expect", COMPOSE, ids=[c[0] for c in COMPOSE])
def test_compose_environment_bad_input(case, env, expect):
    e = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
    e["GRAFANA_ADMIN_PASSWORD"] = "a-test-password-not-printed"
    e.update(env)
    p = subprocess.run([compose_bin(), "config", "-q"], cwd=ROOT, env=e, capture_output=True, text=True, timeout=120)
    check(p, expect)
    assert "a-test-password-not-printed" not in p.stdout + p.stderr


def env_check(env):
    from test_compose import dotenv
    e = {k: v for k, v in os.environ.items() if not k.endswith("_IMAGE")}
    e.update(dotenv())
    e.update(env)
    return subprocess.run([sys.executable, str(ROOT / "compose/env_check.py"), "--config-dir", str(ROOT / "compose/config")],
                          env=e, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("case,env,expect", ENV_CHECK, ids=[c[0] for c in ENV_CHECK])
def test_compose_env_check_bad_input(case, env, expect):
    p = env_check(env)
    check(p, expect)
    assert [line for line in p.stderr.splitlines() if line.startswith("env-check: ") and "valid" in line] == \
        [line for line in p.stderr.splitlines() if expect[0] in line], "one line, for the bad value only"


def test_compose_env_check_passes_the_shipped_settings():
    p = env_check({})
    assert p.returncode == 0 and "env-check: settings ok" in p.stdout, p.stdout + p.stderr
