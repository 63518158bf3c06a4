"""Shared helpers for the integration tests: the local stack's real servers (started by
scripts/test through `scripts/stack up --target both`), our k6, Prometheus and SQL access."""
import fcntl
import json
import os
import re
import subprocess
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pymysql
import pytest

ROOT = Path(__file__).resolve().parent.parent

# The Go compiler's flags every go command of ours uses (scripts/lib/common.sh's TBS_GOFLAGS, in
# GOFLAGS: scripts/test exports it), also for a pytest run outside scripts/test, so the tests' go
# builds, go test and go vet reuse the packages scripts/build compiled
_TBS_GOFLAGS = re.search(r"^TBS_GOFLAGS=(\S+)$", (ROOT / "scripts/lib/common.sh").read_text(), re.M).group(1)
if _TBS_GOFLAGS not in os.environ.get("GOFLAGS", "").split():
    os.environ["GOFLAGS"] = (os.environ.get("GOFLAGS", "") + " " + _TBS_GOFLAGS).strip()
STATE = Path(os.environ.get("TBS_STATE", ROOT / ".stack"))
PROM = "http://127.0.0.1:9090"
LOKI = "http://127.0.0.1:3100"
TARGETS = {"tidb": 4000, "mariadb": 3306}

# The suite's k6 runs give each thread step 1 s to connect and 1 s of graceful stop (options
# connect_time and grace_time, which k6 also reads from the environment; a user's defaults are
# 3 s up to 125 threads and 3 s): about 4 s less for each of the suite's ~170 steps. test_steps_timing runs the
# defaults.
os.environ.setdefault("connect_time", "1")
os.environ.setdefault("grace_time", "1")


# -- test tiers (CONTRIBUTING.md): every test is `fast` or `full`, by its file's pytestmark (a test of
# a fast file that needs more carries @pytest.mark.full itself).
#   fast: no server, no build beyond Go's cache: `scripts/test --fast` (pytest -m "fast and not full"),
#         in at most 60 s on a warm machine (tools scripts/test installed once, such as
#         bin/docker-compose, promtool and the linters, are used; never started, never built)
#   full: the local stack, our k6 binary, a fresh clone's venv, long runs: `scripts/test` runs
#         both tiers
TIERS = ("fast", "full")
FAST = os.environ.get("TBS_TIER") == "fast"  # set by scripts/test --fast


def pytest_configure(config):
    config.addinivalue_line("markers", "fast: needs no server and no build beyond Go's cache (scripts/test --fast)")
    config.addinivalue_line("markers", "full: needs the local stack, a built binary or a long run (scripts/test)")
    config.addinivalue_line("markers", "serial: runs with no other test beside it (scripts/test's first pytest; "
                                       "CONTRIBUTING.md): it changes or restarts what every test shares")
    config.addinivalue_line("markers", "quiet: runs alone on a quiet machine, after every build and every other "
                                       "test (scripts/test's last pytest; CONTRIBUTING.md): it times, paces or "
                                       "weighs something that any other load would move")


# -- side by side (CONTRIBUTING.md, "Tests side by side"): scripts/test runs the tests marked
# serial alone (its last setup lanes beside them), then the tests marked neither serial nor quiet
# in three pytest-xdist workers (--dist loadfile: a file's tests on one worker, so its module
# fixtures run once), then the quiet ones alone. What the side-by-side tests share is made safe
# for several: `scripts/stack up` takes a lock, k6.env and the sysbench option file are replaced whole,
# and the session runs below are made once per suite, under a lock, for every pytest process.
SUITE = os.environ.get("TBS_SUITE_ID", "")  # set by scripts/test: one id for its pytest processes


@contextmanager
def locked(name):
    """An exclusive lock of this machine's stack state, held while inside (fcntl: released when
    the process dies)."""
    STATE.mkdir(parents=True, exist_ok=True)
    with open(STATE / f"{name}.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def once_per_suite(name, tmp_path_factory, make):
    """make(folder) -> a JSON value, made once for the whole suite (every pytest process of one
    scripts/test, by TBS_SUITE_ID) in .stack/test-runs/<suite>/<name>, the others waiting on its
    lock and reading what it made; without TBS_SUITE_ID, once in this process' tmp folder."""
    if not SUITE:
        return make(tmp_path_factory.mktemp(name))
    folder = STATE / "test-runs" / SUITE / name
    with locked(f"test-run-{name}"):
        made = folder / "made.json"
        if made.is_file():
            return json.loads(made.read_text())
        folder.mkdir(parents=True, exist_ok=True)
        value = make(folder)
        made.write_text(json.dumps(value))
        return value


def pytest_collection_modifyitems(config, items):
    untiered = sorted({i.nodeid.split("::")[0] for i in items if not any(i.get_closest_marker(t) for t in TIERS)})
    if untiered:
        raise pytest.UsageError("test files without a tier (pytestmark = pytest.mark.fast or "
                                f"pytest.mark.full; CONTRIBUTING.md): {', '.join(untiered)}")


FILE_SECONDS = {}  # tests/test_x.py -> seconds of its tests' setup, call and teardown


def pytest_runtest_logreport(report):
    f = report.nodeid.split("::")[0]
    FILE_SECONDS[f] = FILE_SECONDS.get(f, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    """Where the suite's time goes, by file (pytest's --durations gives single tests): the files
    taking the most, with their share. A session fixture's time counts in the first file using it."""
    if not FILE_SECONDS:
        return
    total = sum(FILE_SECONDS.values())
    top = sorted(FILE_SECONDS.items(), key=lambda kv: -kv[1])[:15]
    terminalreporter.write_sep("=", f"slowest files ({total:.0f} s in tests)")
    for f, secs in top:
        terminalreporter.write_line(f"{secs:8.1f}s {secs / total * 100:5.1f}%  {f}")


def needs_the_stack(what):
    """In the fast tier, a test that reaches for a server fails here, naming it, instead of
    starting the stack (scripts/test --fast runs with no server)."""
    if FAST:
        pytest.fail(f"{what} needs the local stack: this test belongs to the full tier (pytest.mark.full)",
                    pytrace=False)


def password():
    return (STATE / "secrets" / "sbtest").read_text().strip()


def sysbench_password_option():
    """sysbench's password as its --config-file option: a private file (0600) beside the secret,
    so the password is never in a process' arguments (tools/bench does the same)."""
    path = STATE / "secrets" / "sysbench.conf"
    text = f"mysql-password={password()}\n"
    if not path.exists() or path.read_text() != text:
        # written beside it, then moved: a sysbench of another test process reads all of it
        tmp = path.with_name(f"{path.name}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return f"--config-file={path}"


@pytest.fixture(scope="session")
def stack():
    """The local stack with both targets; `up` is idempotent, so this also works alone."""
    needs_the_stack("the stack fixture")
    subprocess.run([str(ROOT / "scripts/stack"), "up", "--target", "both"], check=True,
                   stdout=subprocess.DEVNULL)
    return STATE


def connect(target, db="sbtest"):
    needs_the_stack("connect()")
    return pymysql.connect(host="127.0.0.1", port=TARGETS[target], user="sbtest",
                           password=password(), database=db, autocommit=True)


def sql(target, query, db="sbtest"):
    with connect(target, db) as c, c.cursor() as cur:
        cur.execute(query)
        return cur.fetchall()


def fresh_db(target, name):
    """An empty database of the test's own (the sbtest user owns every sbtest* database)."""
    with connect(target) as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")
        cur.execute(f"CREATE DATABASE {name}")
    return name


RW_TIME_S, RW_WARMUP_S = 12, 3  # read_write_runs: per step 3 s of warm-up, then 12 s measured


@pytest.fixture(scope="session")
def read_write_runs(stack, tmp_path_factory):
    """Two real 2-step (2 and 4 threads) oltp_read_write runs, shared by the tests that read
    what a run leaves behind in Prometheus and Loki (test_dashboards_live, test_resources): one
    on TiDB, one on MariaDB as a rate run (sysbench's --rate, 100 events/s: the response-time
    panels need one). Their own database and results folder. Returns (results_dir, {target:
    the run's manifest}); made once per suite (once_per_suite)."""
    folder, out = once_per_suite("read-write-runs", tmp_path_factory, _read_write_runs)
    return Path(folder), out


def _read_write_runs(res):
    out = {}
    for target, port in TARGETS.items():
        db = fresh_db(target, "sbtest_rwruns")
        common = ["-e", f"mysql_port={port}", "-e", f"mysql_db={db}", "-e", "tables=2", "-e", "table_size=5000"]
        k6("run", "-q", *common, "prepare.js", env={"K6_OUT": ""})
        testid = f"rw-{target}-{int(time.time())}"
        rate = ["-e", "rate=100"] if target == "mariadb" else []
        k6("run", "-q", *common, *rate, "-e", "workload=oltp_read_write", "-e", "threads=2,4",
           "-e", f"time={RW_TIME_S}", "-e", f"warmup_time={RW_WARMUP_S}", "-e", f"testid={testid}",
           "-e", f"results_dir={res}", "oltp.js")
        out[target] = json.loads((res / f"{testid}.json").read_text())
        assert [s["threads"] for s in out[target]["steps"]] == [2, 4]
    return str(res), out


TPCC_TIME_S, TPCC_WARMUP_S = 10, 2  # tpcc_run: per step 2 s of warm-up, then 10 s measured


@pytest.fixture(scope="session")
def tpcc_run(stack, tmp_path_factory):
    """A real 2-step (1 and 2 threads) TPC-C run of k6/tpcc.js on the local TiDB, 1 warehouse
    prepared in a database of its own, with remote write to the stack's Prometheus: what the TPC-C
    dashboard and history tests read (test_dashboards_tpcc_live, test_history_tpcc). Returns
    (results_dir, the run's manifest); made once per suite (once_per_suite), its database then left
    to the next suite's fresh_db (another test process may still read it)."""
    folder, m = once_per_suite("tpcc-run", tmp_path_factory, _tpcc_run)
    yield Path(folder), m
    if not SUITE:
        sql("tidb", f"DROP DATABASE IF EXISTS {TPCC_RUN_DB}")


TPCC_RUN_DB = "sbtest_tpcc_run"


def _tpcc_run(res):
    db = fresh_db("tidb", TPCC_RUN_DB)
    common = ["-e", f"mysql_port={TARGETS['tidb']}", "-e", f"mysql_db={db}", "-e", "warehouses=1"]
    k6("run", "-q", *common, "-e", "tpcc_command=prepare", "-e", "threads=2", "tpcc.js", env={"K6_OUT": ""})
    testid = f"tpcc-tidb-{int(time.time())}"
    k6("run", "-q", *common, "-e", "threads=1,2", "-e", f"time={TPCC_TIME_S}", "-e", f"warmup_time={TPCC_WARMUP_S}",
       "-e", f"testid={testid}", "-e", f"results_dir={res}", "tpcc.js")
    m = json.loads((res / f"{testid}.json").read_text())
    assert [s["threads"] for s in m["steps"]] == [1, 2] and all(s["tpmC"] > 0 for s in m["steps"]), m["steps"]
    return str(res), m


def k6(*args, env=None, timeout=600, check=True):
    """Runs scripts/k6 (our k6 with the stack's settings) from the repo's k6/ folder."""
    needs_the_stack("k6()")
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([str(ROOT / "scripts/k6"), *args], cwd=ROOT / "k6", env=e,
                       capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"k6 {' '.join(args)} exited {p.returncode}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return p


def stop_process(proc, timeout=30):
    """Terminates a server a test started, killing it when it does not stop in time."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_testid(output):
    m = re.search(r"testid=(\S+)", output)
    assert m, f"no testid printed:\n{output[-2000:]}"
    return m.group(1)


def summary(testid):
    return json.loads((ROOT / "results" / f"{testid}.json").read_text())


def prom(query, at=None):
    needs_the_stack("prom()")
    params = {"query": query}
    if at is not None:
        params["time"] = str(at)
    url = f"{PROM}/api/v1/query?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def prom_wait(query, pred, timeout=30):
    """Polls an instant query until pred(result) holds (remote write and scrapes lag)."""
    deadline = time.time() + timeout
    res = None
    while time.time() < deadline:
        res = prom(query)
        if pred(res):
            return res
        time.sleep(0.5)
    raise AssertionError(f"{query}: condition not met within {timeout}s; last result {res}")


def metrics_text(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def metric_sum(text, name, **labels):
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def mariadb_root(query):
    """A statement as the local MariaDB's root (through the stack's socket)."""
    needs_the_stack("mariadb_root()")
    p = subprocess.run(["mariadb", f"--socket={STATE / 'run/mariadb.sock'}", "-uroot", "-N", "-B", "-e", query],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [line.split("\t") for line in p.stdout.splitlines()]


def tidb_root(query):
    """A statement as the local TiDB's root (the stack's generated password, never an argument):
    its rows, as tuples."""
    needs_the_stack("tidb_root()")
    pw = (STATE / "secrets" / "tidb-root").read_text().strip()
    with pymysql.connect(host="127.0.0.1", port=TARGETS["tidb"], user="root", password=pw, autocommit=True) as c, \
            c.cursor() as cur:
        cur.execute(query)
        return cur.fetchall()


@contextmanager
def userstat():
    """MariaDB's per-table statistics (information_schema.TABLE_STATISTICS) kept while inside;
    the server's setting as it was afterwards."""
    (old,), = mariadb_root("SELECT @@GLOBAL.userstat")
    mariadb_root("SET GLOBAL userstat = 1")
    try:
        yield
    finally:
        mariadb_root(f"SET GLOBAL userstat = {int(old)}")


def rows_read(db, table="sbtest1"):
    """Rows MariaDB has read from one table (TABLE_STATISTICS.ROWS_READ, while userstat is on):
    a run's own counter when nothing else uses that table's database (unlike the server-wide
    Rows_read, which every client of the shared server moves)."""
    r = mariadb_root("SELECT ROWS_READ FROM information_schema.TABLE_STATISTICS "
                     f"WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{table}'")
    return int(r[0][0]) if r else 0
