"""Issue 11, security: no secret in any results file, report, Prometheus label, Loki line,
process argument list or k6 log; secret files are mode 600; every listener of the local stack
(and of k6) is on 127.0.0.1; compose publishes on 127.0.0.1 only and refuses to start Grafana
without an admin password (tests/test_compose.py checks both on `docker compose config`);
TLS to the database with mysql_ssl, against a MariaDB that requires it."""
import json
import os
import re
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from secrets import token_urlsafe

import pytest

from conftest import LOKI, PROM, ROOT, STATE, k6, run_testid
from tbstools.drive import k6_child

# serial (conftest.py): it watches every process' arguments and scans all of results/, the logs and Loki
pytestmark = [pytest.mark.full, pytest.mark.serial]


def secrets():
    """Every generated secret of the stack: sbtest's and TiDB root's passwords, the exporter's."""
    out = {}
    for f in (STATE / "secrets").iterdir():
        if f.is_file() and "." not in f.name:
            out[f.name] = f.read_text().strip()
    assert out.get("sbtest") and len(out["sbtest"]) >= 12
    return out


def assert_no_secret(text, where):
    for name, value in secrets().items():
        assert value not in text, f"the {name} secret appears in {where}"


def test_secret_files_are_private(stack):
    d = STATE / "secrets"
    assert d.stat().st_mode & 0o777 == 0o700, oct(d.stat().st_mode)
    files = [f for f in d.iterdir() if f.is_file()]
    assert files
    for f in files + [STATE / "k6.env"]:
        assert f.stat().st_mode & 0o777 == 0o600, (f, oct(f.stat().st_mode))
    tls = STATE / "tls"
    if tls.exists():  # MariaDB's certificate: the keys are private, the certificates public
        for key in tls.glob("*key*.pem"):
            assert key.stat().st_mode & 0o077 == 0, key
    # a secret made loose by hand is made private again by `up`
    f = d / "sbtest"
    os.chmod(f, 0o644)
    subprocess.run([str(ROOT / "scripts/stack"), "up", "--target", "both", "--no-install"], check=True,
                   capture_output=True)
    assert f.stat().st_mode & 0o777 == 0o600


@pytest.fixture(scope="module")
def run_seen(prepared):
    """A real run with remote write and logs on, whose process arguments are watched while it
    runs (every process on the machine, every 100 ms)."""
    seen = []
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            for p in Path("/proc").iterdir():
                if p.name.isdigit():
                    try:
                        seen.append((p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
                    except OSError:
                        pass
            time.sleep(0.1)
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        r = k6("run", "-e", "threads=2", "-e", "time=4", "-e", "tables=1", "-e", "table_size=1000",
               "-e", "report_interval=1", "-e", "mysql_db=sbtest_secrets", "oltp.js", check=False)
    finally:
        stop.set()
        t.join()
    return r, seen


@pytest.fixture(scope="module", autouse=False)
def prepared(stack):
    from conftest import fresh_db
    fresh_db("tidb", "sbtest_secrets")
    k6("run", "-e", "tables=1", "-e", "table_size=1000", "-e", "mysql_db=sbtest_secrets", "prepare.js")


def test_no_secret_in_process_arguments_k6_output_results_or_report(run_seen, tmp_path):
    r, seen = run_seen
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert any("oltp.js" in c for c in seen), "the watcher saw no k6 process"
    for cmd in set(seen):
        assert_no_secret(cmd, f"a process argument list: {cmd[:200]}")
    assert_no_secret(r.stdout + r.stderr, "k6's output")
    testid = run_testid(r.stdout + r.stderr)
    manifest = (ROOT / "results" / f"{testid}.json").read_text()
    assert_no_secret(manifest, f"results/{testid}.json")
    assert "mysql_password" not in json.loads(manifest)["options"]
    out = tmp_path / "report"
    p = subprocess.run([str(ROOT / "scripts/report"), "--out", str(out), testid], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    for f in out.rglob("*"):
        if f.is_file() and f.suffix in (".md", ".html", ".json"):
            assert_no_secret(f.read_text(errors="replace"), str(f))


def test_no_secret_in_any_results_file_or_log(run_seen):
    """Every results file (manifests, reports) and every log of the stack, k6's per-run logs
    included. The run above's own files must be among those read, each holding its testid: an
    empty or moved results folder, or a log the launcher no longer writes, fails here."""
    testid = run_testid(run_seen[0].stdout + run_seen[0].stderr)
    read = {}
    for f in (ROOT / "results").rglob("*"):
        if f.is_file() and f.suffix in (".json", ".md", ".html", ".log"):
            read[f] = f.read_text(errors="replace")
            assert_no_secret(read[f], str(f))
    for f in (STATE / "logs").rglob("*.log"):
        read[f] = f.read_bytes().decode(errors="replace")
        assert_no_secret(read[f], str(f))
    own = [ROOT / "results" / f"{testid}.json", STATE / "logs" / "k6.log", STATE / "logs" / "k6-runs" / f"{testid}.log"]
    missing = [str(f) for f in own if f not in read]
    assert not missing, f"the run's own files were not read (of {len(read)} files): {missing}"
    assert all(testid in read[f] for f in own), [str(f) for f in own if testid not in read[f]]


def test_no_secret_in_prometheus_labels(run_seen):
    with urllib.request.urlopen(f"{PROM}/api/v1/labels", timeout=30) as r:
        names = json.load(r)["data"]
    assert "testid" in names
    for name in names:
        with urllib.request.urlopen(f"{PROM}/api/v1/label/{urllib.parse.quote(name)}/values", timeout=60) as r:
            values = json.load(r)["data"]
        assert_no_secret("\n".join(values), f"Prometheus label {name}")


def test_no_secret_in_loki(run_seen):
    start = str(int((time.time() - 7 * 86400) * 1e9))
    with urllib.request.urlopen(f"{LOKI}/loki/api/v1/labels?start={start}", timeout=30) as r:
        assert "service" in json.load(r)["data"]
    # the k6 lines of the run above did arrive (the search below would find a secret in them)
    testid = run_testid(run_seen[0].stdout + run_seen[0].stderr)
    deadline = time.time() + 60
    found = []
    while time.time() < deadline and not found:
        q = urllib.parse.urlencode({"query": f'{{service="k6"}} |= "{testid}"', "start": start, "limit": "10"})
        with urllib.request.urlopen(f"{LOKI}/loki/api/v1/query_range?{q}", timeout=30) as r:
            found = json.load(r)["data"]["result"]
        time.sleep(1)
    assert found, f"no k6 line of {testid} reached Loki"
    for name, value in secrets().items():
        q = urllib.parse.urlencode({"query": f'{{service=~".+"}} |= `{value}`', "start": start, "limit": "5"})
        with urllib.request.urlopen(f"{LOKI}/loki/api/v1/query_range?{q}", timeout=60) as r:
            hits = json.load(r)["data"]["result"]
        assert hits == [], f"the {name} secret is in Loki: {hits[:1]}"


def listeners():
    """{pid: [local address:port]} of every listening TCP socket."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        cols = line.split()
        local = cols[3]
        for pid in re.findall(r"pid=(\d+)", line):
            res.setdefault(int(pid), []).append(local)
    return res


def test_every_listener_of_the_stack_and_k6_is_on_localhost(prepared, tmp_path):
    pids = {}
    for f in (STATE / "run").glob("*.pid"):
        try:
            pids[int(f.read_text().strip())] = f.stem
        except ValueError:
            pass
    # k6 itself (its REST API, the web dashboard when on) while a run goes
    env = dict(os.environ)
    proc = subprocess.Popen([str(ROOT / "scripts/k6"), "run", "-e", "threads=1", "-e", "time=3", "-e", "tables=1",
                             "-e", "table_size=1000", "-e", "mysql_db=sbtest_secrets", "oltp.js"],
                            cwd=ROOT / "k6", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    k6_pid = k6_child(proc.pid)
    time.sleep(2)
    found = listeners()
    proc.wait(timeout=60)
    assert k6_pid, "k6 did not start"
    pids[k6_pid] = "k6"
    checked = 0
    for pid, name in pids.items():
        for addr in found.get(pid, []):
            host = addr.rsplit(":", 1)[0]
            assert host in ("127.0.0.1", "[::1]"), f"{name} (pid {pid}) listens on {addr}"
            checked += 1
    assert checked >= 8, (checked, found)


def test_tls_to_mariadb_with_mysql_ssl(stack, tmp_path):
    """The stack's MariaDB offers TLS with scripts/stack's self-made certificate (.stack/tls, made
    at `up`); with a user of the test's own that must use TLS, mysql_ssl=on and verify (against
    our CA) connect, mysql_ssl=off is refused by the server, and a run over TLS works (the
    server refuses that user any connection without TLS)."""
    tls = STATE / "tls"
    assert (tls / "ca.pem").exists(), "scripts/stack up --target both makes .stack/tls"
    root = ["mariadb", f"--socket={STATE / 'run/mariadb.sock'}", "-uroot", "-N", "-B"]
    user = db = "sbtest_tls"
    pw = token_urlsafe(18)

    def as_root(stmts):  # on stdin: the password never in an argument list
        subprocess.run(root, input=stmts, check=True, capture_output=True, text=True)
    as_root(f"""CREATE DATABASE IF NOT EXISTS {db}; DROP USER IF EXISTS '{user}'@'%';
        CREATE USER '{user}'@'%' IDENTIFIED BY '{pw}' REQUIRE SSL; GRANT ALL PRIVILEGES ON `{db}`.* TO '{user}'@'%';""")
    env = dict(os.environ, mysql_host="127.0.0.1", mysql_port="3306", mysql_user=user, mysql_password=pw,
               mysql_db=db, results_dir=str(tmp_path), K6_OUT="")
    try:
        def prep(*extra):
            return subprocess.run([str(ROOT / "scripts/k6"), "run", "-e", "tables=1", "-e", "table_size=100",
                                   "-e", "recreate=true", *extra, "prepare.js"], cwd=ROOT / "k6",
                                  env=env, capture_output=True, text=True, timeout=120)
        off = prep("-e", "mysql_ssl=off")
        assert off.returncode != 0 and "Access denied" in off.stdout + off.stderr, off.stdout[-1500:]
        on = prep("-e", "mysql_ssl=on")
        assert on.returncode == 0, on.stdout[-2000:] + on.stderr[-2000:]
        verify = prep("-e", "mysql_ssl=verify", "-e", f"mysql_ssl_ca={tls / 'ca.pem'}")
        assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]
        # a run over TLS: its own figures (the user cannot connect without TLS)
        r = subprocess.run([str(ROOT / "scripts/k6"), "run", "-e", "threads=2", "-e", "time=2", "-e", "tables=1",
                            "-e", "table_size=100", "-e", "mysql_ssl=on", "oltp.js"], cwd=ROOT / "k6", env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        s = json.loads((tmp_path / f"{run_testid(r.stdout + r.stderr)}.json").read_text())
        assert s["options"]["mysql_ssl"] == "on"
        (st,) = s["steps"]
        assert st["queries"]["total"] > 0 and st["errors"] == 0, st
    finally:
        as_root(f"DROP USER IF EXISTS '{user}'@'%'; DROP DATABASE IF EXISTS {db};")
