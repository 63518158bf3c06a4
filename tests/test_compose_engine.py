"""The user's path, run for real on a Docker engine: `docker compose up -d`, then
`docker compose run --rm k6 run prepare.js` and a 2-step `oltp.js`, the smoke check, and
`docker compose down -v`, from a clean copy of the repository in a shell where nothing is
exported, as a new user would type them.

Setup (scripts/test-setup.d/45-compose-engine.sh): Debian's docker.io (Engine 20.10, the oldest
we support) started without iptables and NAT, the stand-in images of
tests/compose-engine/build-standins under .env's pinned names, and the k6 image built from
k6/Dockerfile. The clean copy gets tests/compose-engine/compose.override.yaml as its
compose.override.yaml (compose merges it by itself): it moves the published ports out of the
local stack's way, runs the TiDB stand-in on unistore, and leaves out what cannot run here
(PD, TiKV, Grafana, its renderer, Alloy). The test prints both lists.

The commands are the documented ones, read from the markdown (tests/doccmds.py): README.md's
compose block (docs/compose.md's Quickstart is the same list), run as written: `up -d`, the
prepare and the 2-step oltp.js, `secrets login`, `scripts/compose-smoke`; docs/compose.md's
`scripts/compose-k6` line; docs/tpcc.md's compose block (a TPC-C prepare of 1 warehouse and a
5-second run, through the same k6 service); only the final `down -v` adds `--profile k6 --remove-orphans`: the
override leaves out Alloy, so here only the k6 service (profile k6) names the k6-logs volume.
"""
import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pymysql
import pytest

from doccmds import compose_commands

pytestmark = pytest.mark.full

ROOT = Path(__file__).resolve().parent.parent
OVERRIDE = ROOT / "tests/compose-engine/compose.override.yaml"
PROJECT = "tidb-bench"  # compose.yaml's name
NOT_HERE = ["pd", "tikv", "grafana", "grafana-renderer", "alloy"]


def documented():
    """README.md's compose commands, by step: {'up': [...], 'prepare': [...], 'run': [...],
    'login': [...], 'smoke': [...], 'down': [...]}, each the words after `docker compose` (the
    smoke check: its own words); checks docs/compose.md's Quickstart lists the same."""
    readme = compose_commands(ROOT / "README.md")
    quick = compose_commands(ROOT / "docs/compose.md", "### Quickstart")
    assert quick == readme[:len(quick)], f"docs/compose.md's Quickstart {quick} is not README.md's {readme}"
    steps = {}
    for words in readme:
        args = words[2:] if words[:2] == ["docker", "compose"] else words
        key = ("up" if args[:1] == ["up"] else "prepare" if "prepare.js" in args else "run" if "oltp.js" in args
               else "login" if args[-1:] == ["login"] else "smoke" if args == ["scripts/compose-smoke"]
               else "down" if "down" in args else None)
        assert key and key not in steps, f"README.md's compose block: unexpected {' '.join(words)}"
        steps[key] = args
    assert list(steps) == ["up", "prepare", "run", "login", "smoke", "down"], steps
    return steps


def documented_compose_k6():
    (words,) = [w for w in compose_commands(ROOT / "docs/compose.md", "### k6 on the host against compose")
                if w[0] == "scripts/compose-k6"]
    return words


def documented_tpcc():
    """docs/tpcc.md's compose block: {'prepare': [...], 'run': [...]}, the words after `docker compose`."""
    steps = {}
    for words in compose_commands(ROOT / "docs/tpcc.md", "## Compose"):
        assert words[:2] == ["docker", "compose"] and "tpcc.js" in words, f"docs/tpcc.md's compose block: {words}"
        key = "prepare" if "tpcc_command=prepare" in words else "run"
        assert key not in steps, f"docs/tpcc.md's compose block: a second {key}: {words}"
        steps[key] = words[2:]
    assert list(steps) == ["prepare", "run"], steps
    return steps


DOC = documented()
TPCC = documented_tpcc()


def docker_bin():
    return "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else shutil.which("docker")


def clean_env():
    """A new user's shell: nothing exported but PATH and HOME (the compose CLI plugin lives there)."""
    return {"PATH": "/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": os.environ.get("HOME", "/root")}


class Compose:
    def __init__(self, workdir):
        self.dir = workdir
        self.log = []

    def run(self, *args, timeout=300, check=True):
        cmd = [docker_bin(), "compose", *args]
        t = time.monotonic()
        p = subprocess.run(cmd, cwd=self.dir, env=clean_env(), capture_output=True, text=True, timeout=timeout)
        if args[0] not in ("ps", "port"):
            self.log.append(f"{' '.join(args[:4])}: {time.monotonic() - t:.0f} s, exit {p.returncode}")
        if check and p.returncode != 0:
            raise AssertionError(f"docker compose {' '.join(args)} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        return p

    def containers(self):
        out = self.run("ps", "-a", "--format", "json").stdout.strip()
        if not out:
            return []
        # compose prints one JSON object per line (older releases: one array)
        return json.loads(out) if out.startswith("[") else [json.loads(line) for line in out.splitlines()]

    def port(self, service, port):
        host, _, p = self.run("port", service, str(port)).stdout.strip().rpartition(":")
        return ("127.0.0.1" if host in ("0.0.0.0", "") else host), int(p)


def project_leftovers():
    d = docker_bin()
    label = f"label=com.docker.compose.project={PROJECT}"
    left = {}
    for kind, cmd in (("container", ["ps", "-aq"]), ("volume", ["volume", "ls", "-q"]), ("network", ["network", "ls", "-q"])):
        out = subprocess.run([d, *cmd, "--filter", label], capture_output=True, text=True, check=True).stdout.split()
        if out:
            left[kind] = out
    return left


def remove_leftovers_of_earlier_tests(d):
    """A test run that was stopped (a session's end, Ctrl-C) may leave its project behind, and the
    engine restarts it. Only a project this test made (in a pytest folder) is removed."""
    label = f"label=com.docker.compose.project={PROJECT}"
    ids = subprocess.run([d, "ps", "-aq", "--filter", label], capture_output=True, text=True, check=True).stdout.split()
    dirs = set(subprocess.run([d, "inspect", "-f", '{{index .Config.Labels "com.docker.compose.project.working_dir"}}',
                               *ids], capture_output=True, text=True).stdout.split()) if ids else set()
    if not ids or not all("/pytest-of-" in x for x in dirs):
        return  # nothing, or someone's own stack (its volumes too): the caller stops with a clear message
    subprocess.run([d, "rm", "-f", *ids], capture_output=True, check=True)
    for kind in ("volume", "network"):
        left = subprocess.run([d, kind, "ls", "-q", "--filter", label], capture_output=True, text=True).stdout.split()
        if left:
            subprocess.run([d, kind, "rm", *left], capture_output=True)


def wait_ready(c, timeout=240):
    """Every service running and healthy (where it has a healthcheck), every one-shot exited 0."""
    deadline = time.monotonic() + timeout
    while True:
        states = {x["Service"]: (x["State"], x.get("Health", ""), x.get("ExitCode", 0)) for x in c.containers()}
        failed = {s: v for s, v in states.items() if (v[0] == "exited" and v[2] != 0) or v[1] == "unhealthy"}
        assert not failed, f"services failed: {failed}\n{c.run('logs', '--tail', '30', *failed, check=False).stdout[-4000:]}"
        pending = {s: v for s, v in states.items() if not ((v[0] == "running" and v[1] in ("", "healthy")) or v[0] == "exited")}
        if states and not pending:
            return states
        if time.monotonic() > deadline:
            raise AssertionError(f"not ready after {timeout} s: {pending}")
        time.sleep(2)


def prom_query(addr, q):
    url = f"http://{addr[0]}:{addr[1]}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())["data"]["result"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    d = docker_bin()
    assert d and subprocess.run([d, "info"], capture_output=True).returncode == 0, \
        "no Docker engine answers: scripts/test-setup.d/45-compose-engine.sh starts one"
    remove_leftovers_of_earlier_tests(d)
    assert not project_leftovers(), \
        f"a {PROJECT} compose project of yours runs on this engine ({project_leftovers()}): stop it first (docker compose down)"
    work = tmp_path_factory.mktemp("compose-user") / "tidb-bench-stack"
    # a clean copy: the files git tracks (and new ones it does not ignore), nothing built or run
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.split(b"\0")
    for f in filter(None, files):
        src = ROOT / f.decode()
        if src.is_file():
            (work / f.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, work / f.decode())
    shutil.copy(OVERRIDE, work / "compose.override.yaml")
    standins = subprocess.run([str(ROOT / "tests/compose-engine/build-standins"), "--list"],
                              capture_output=True, text=True, check=True).stdout.split()
    ver = subprocess.run([d, "version", "-f", "{{.Server.Version}}"], capture_output=True, text=True).stdout.strip()
    print(f"\nengine test: Docker Engine {ver}; stand-in images (built here, no registry): {', '.join(standins)}"
          f"\nengine test: services that cannot run here (no image to be had): {', '.join(NOT_HERE)}")
    c = Compose(work)
    t0 = time.monotonic()
    try:
        c.run(*DOC["up"], timeout=300)
        states = wait_ready(c)
        c.log.append(f"up until every service ready: {time.monotonic() - t0:.0f} s")
        yield c, states
    finally:
        c.run("--profile", "k6", "down", "-v", "--remove-orphans", timeout=180, check=False)
        print("\nengine test: " + "; ".join(c.log))


def test_up_starts_every_service_and_one_shots_exit_0(stack):
    c, states = stack
    want_running = {"tidb", "prometheus", "loki", "node-exporter", "history-db"}
    want_done = {"env-check", "secrets", "prometheus-targets", "pingcap-dashboards-src", "pingcap-dashboards"}
    assert {s for s, v in states.items() if v[0] == "running"} == want_running, states
    assert {s for s, v in states.items() if v[0] == "exited" and v[2] == 0} == want_done, states
    assert not set(NOT_HERE) & set(states)


def test_the_documented_compose_commands_are_these():
    """What this test runs is README.md's compose block, which docs/compose.md's Quickstart repeats
    (read from the markdown, no engine needed)."""
    assert DOC["up"] == ["up", "-d"] and DOC["login"] == ["run", "--rm", "--no-deps", "secrets", "login"]
    assert DOC["prepare"][:5] == ["run", "--rm", "k6", "run", "prepare.js"]
    assert DOC["run"][:5] == ["run", "--rm", "k6", "run", "oltp.js"] and "threads=2,4" in DOC["run"]
    assert DOC["down"] == ["down", "-v"]
    assert documented_compose_k6()[:3] == ["scripts/compose-k6", "run", "k6/oltp.js"]
    assert TPCC["prepare"][:5] == TPCC["run"][:5] == ["run", "--rm", "k6", "run", "tpcc.js"]


@pytest.fixture(scope="module")
def ran(stack):
    """What the user types next, as README.md says: prepare, then a run of two thread steps."""
    c, _ = stack
    c.run(*DOC["prepare"], timeout=300)
    p = c.run(*DOC["run"], timeout=300)
    out = p.stdout + p.stderr
    m = re.search(r"testid=(\S+) workload=", out)
    assert m, f"the run printed no testid:\n{out[-3000:]}"
    return c, out, m.group(1)


def test_k6_prepare_and_a_two_step_run_land_in_compose_prometheus(ran):
    c, out, testid = ran
    prom = c.port("prometheus", 9090)
    steps = []
    for _ in range(10):  # the last push interval
        steps = prom_query(prom, f'max by (threads) (max_over_time(k6_oltp_marker{{testid="{testid}", event="step_start"}}[10m]))')
        if len(steps) == 2:
            break
        time.sleep(2)
    assert sorted(int(s["metric"]["threads"]) for s in steps) == [2, 4], steps
    queries = prom_query(prom, f'sum(max_over_time(k6_oltp_queries_total{{testid="{testid}"}}[10m]))')
    assert queries and float(queries[0]["value"][1]) > 0, queries
    # the run's own lines, kept per testid by the image's entrypoint for Alloy (which cannot run
    # here) to ship with the label testid
    log = c.run("run", "--rm", "--no-deps", "--entrypoint", "cat", "k6", f"/var/log/tbs-k6/runs/{testid}.log").stdout
    assert f"testid={testid}" in log and log.count("\n") > 5, log[-2000:]
    summary = json.loads((c.dir / "results" / f"{testid}.json").read_text())
    assert summary["options"]["mysql_user"] == "sbtest" and "mysql_password" not in summary["options"]


def test_only_existing_targets_are_scraped_and_tidb_node_loki_are_up(stack):
    c, _ = stack
    prom = c.port("prometheus", 9090)
    for _ in range(15):
        up = {(r["metric"]["job"], r["metric"]["instance"]): r["value"][1] for r in prom_query(prom, "up")}
        if all(up.get(k) == "1" for k in (("tidb", "tidb:10080"), ("loki", "loki:3100"))) and \
                any(j == "node" and v == "1" for (j, _), v in up.items()):
            break
        time.sleep(2)
    assert up.get(("tidb", "tidb:10080")) == "1", up
    assert up.get(("loki", "loki:3100")) == "1", up
    assert [v for (j, _), v in up.items() if j == "node"] == ["1"], up
    # the default topology: one member of each, no cluster-profile member (pd2, tikv3, tidb2, ...)
    assert not [i for (_, i) in up if re.match(r"(pd|tikv|tidb)[23]:", i)], up
    assert {i for (j, i) in up if j in ("pd", "tikv", "tidb")} == {"pd:2379", "tikv:20180", "tidb:10080"}, up


def test_pingcaps_dashboards_are_written_for_grafana(stack):
    c, _ = stack
    out = c.run("run", "--rm", "--no-deps", "--entrypoint", "ls", "pingcap-dashboards", "/out").stdout.split()
    want = {"overview.json", "performance_overview.json", "tidb.json", "tidb_runtime.json", "tidb_summary.json"}
    assert want <= set(out), out
    d = json.loads(c.run("run", "--rm", "--no-deps", "--entrypoint", "cat", "pingcap-dashboards",
                         "/out/overview.json").stdout)
    assert d["uid"] == "pingcap-overview"
    assert "${DS_" not in json.dumps(d), "a datasource placeholder is left"


def test_passwords_are_generated_and_never_shown(ran):
    c, _, _ = ran
    login = c.run(*DOC["login"]).stdout
    pw = dict(re.findall(r"user (\w+)\s+password (\S+)", login))
    assert set(pw) == {"admin", "root", "sbtest", "tbs_history_writer", "tbs_history_reader"}, login
    assert len(set(pw.values())) == 5, login
    assert all(len(v) >= 24 for v in pw.values())
    host, port = c.port("tidb", 4000)
    with pytest.raises(pymysql.err.OperationalError):  # root has a password now
        pymysql.connect(host=host, port=port, user="root", password="", connect_timeout=5)
    pymysql.connect(host=host, port=port, user="root", password=pw["root"], connect_timeout=5).close()
    with pymysql.connect(host=host, port=port, user="sbtest", password=pw["sbtest"], database="sbtest") as db:
        with db.cursor() as cur:
            cur.execute("SHOW TABLES")
            assert {"sbtest1", "sbtest2"} <= {r[0] for r in cur.fetchall()}
    # nowhere to be read: docker inspect of every container, compose's logs and config, the
    # tracked files of the copy, the run's results
    d = docker_bin()
    ids = subprocess.run([d, "ps", "-aq", "--filter", f"label=com.docker.compose.project={PROJECT}"],
                         capture_output=True, text=True, check=True).stdout.split()
    seen = {
        "docker inspect": subprocess.run([d, "inspect", *ids], capture_output=True, text=True, check=True).stdout,
        "compose logs": c.run("logs").stdout,
        "compose config": c.run("config").stdout,
        "ps": subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout,
        "results": "".join(f.read_text() for f in (c.dir / "results").glob("*.json")),
        "tracked files": "".join(f.read_text(errors="replace") for f in c.dir.rglob("*")
                                 if f.is_file() and "results" not in f.parts),
    }
    for where, text in seen.items():
        for who, secret in pw.items():
            assert secret not in text, f"{who}'s password appears in {where}"


def test_the_history_store_takes_a_push_and_its_reader_only_reads(stack, tmp_path):
    """history-db (compose/history.yaml, its own entrypoint on the PostgreSQL stand-in): the
    writer pushes an index through the published port with the generated password, a second
    push changes nothing, the reader reads and may not write; the superuser's password is
    nowhere but its volume."""
    import psycopg

    import storetools as ht
    from tidbbench.history import pg as historypg
    c, _ = stack
    login = c.run("run", "--rm", "--no-deps", "secrets", "login").stdout
    pw = dict(re.findall(r"user (\w+)\s+password (\S+)", login))
    host, port = c.port("history-db", 5432)
    conninfo = tmp_path / "writer.conninfo"
    conninfo.write_text(f"host={host} port={port} dbname=tbs_history user=tbs_history_writer "
                        f"password={pw['tbs_history_writer']}\n")
    conninfo.chmod(0o600)
    runs = [ht.run_row(i) for i in range(3)]
    idx = ht.make_index(tmp_path / "history.sqlite", runs, [ht.point_row(r, "oltp_point_select", 2, 900.0 + i, 3.0)
                                                           for i, r in enumerate(runs)])
    assert historypg.push(idx, conninfo) == 6
    assert historypg.push(idx, conninfo) == 6
    with psycopg.connect(host=host, port=port, dbname="tbs_history", user="tbs_history_reader",
                         password=pw["tbs_history_reader"], connect_timeout=5) as db:
        assert db.execute("SELECT count(*), min(qps) FROM points").fetchone() == (3, 900.0)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            db.execute("DELETE FROM points")
    with pytest.raises(psycopg.OperationalError):  # no login without the password
        psycopg.connect(host=host, port=port, dbname="tbs_history", user="postgres", password="",
                        connect_timeout=5).close()


def test_tpcc_prepare_and_run_through_the_k6_service(ran):
    """docs/tpcc.md's compose commands: k6/tpcc.js in the k6 image, prepare (1 warehouse) then a
    short run, into the database compose made for it; tpmC reaches compose's Prometheus and the
    manifest results/."""
    c, _, _ = ran
    p = c.run(*TPCC["prepare"], timeout=300)
    assert "go-tpc's prepare check passed" in p.stdout + p.stderr, (p.stdout + p.stderr)[-3000:]
    p = c.run(*TPCC["run"], timeout=300)
    m = re.search(r"testid=(\S+) workload=tpcc", p.stdout + p.stderr)
    assert m, f"the TPC-C run printed no testid:\n{(p.stdout + p.stderr)[-3000:]}"
    testid = m.group(1)
    summary = json.loads((c.dir / "results" / f"{testid}.json").read_text())
    assert summary["workload"] == "tpcc" and summary["target"]["db"] == "sbtest_tpcc"
    assert summary["steps"] and all(s["tpmC"] > 0 for s in summary["steps"]), summary["steps"]
    prom = c.port("prometheus", 9090)
    got = []
    for _ in range(10):  # the last push interval
        got = prom_query(prom, f'sum(max_over_time(k6_tpcc_transactions_total{{testid="{testid}", txn="new_order", warmup="false"}}[10m]))')
        if got:
            break
        time.sleep(2)
    assert got and float(got[0]["value"][1]) == sum(s["txns"]["new_order"]["count"] for s in summary["steps"]), got


def test_our_k6_on_the_host_runs_against_compose(ran):
    """scripts/compose-k6: our k6 built on the host (bin/k6), the compose TiDB as sbtest with the
    generated password by file, samples to compose's Prometheus."""
    c, _, _ = ran
    env = dict(clean_env(), K6_BIN=str(ROOT / "bin/k6"))
    words = documented_compose_k6()  # docs/compose.md's command, as written
    p = subprocess.run([str(c.dir / words[0]), *words[1:]], cwd=c.dir, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    m = re.search(r"testid=(\S+) workload=", p.stdout + p.stderr)
    assert m, f"the run printed no testid:\n{p.stdout[-3000:]}"
    testid = m.group(1)
    prom = c.port("prometheus", 9090)
    got = []
    for _ in range(10):
        got = prom_query(prom, f'sum(max_over_time(k6_oltp_queries_total{{testid="{testid}"}}[10m]))')
        if got:
            break
        time.sleep(2)
    assert got and float(got[0]["value"][1]) > 0, got
    assert not list(Path("/tmp").glob("tbs-sbtest.*")), "the password file was left behind"


def test_the_users_smoke_check_passes(ran):
    c, _, _ = ran
    p = subprocess.run([str(c.dir / DOC["smoke"][0])], cwd=c.dir, env=clean_env(),
                       capture_output=True, text=True, timeout=300)
    print(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    for check in ("services", "run", "series"):
        assert any(line.startswith(f"ok    {check}") for line in lines), lines
    assert not [line for line in lines if line.startswith("FAIL")]
    # what cannot run here is said, not counted
    assert any(line.startswith("skip  logs") and "alloy" in line for line in lines), lines
    assert any(line.startswith("skip  grafana") for line in lines), lines


def test_down_v_leaves_nothing_of_the_project(ran):
    c, _, _ = ran
    # README.md's `down -v`, with the k6 profile named: the override leaves out Alloy, the other
    # user of the k6-logs volume (see the module's docstring)
    c.run("--profile", "k6", *DOC["down"], "--remove-orphans", timeout=180)
    assert project_leftovers() == {}
