"""The compose stack (compose.yaml, compose/, .env, k6/Dockerfile), proven without a Docker
engine (tests/test_compose_engine.py runs it on one): every check runs the real tool on the
shipped files. This file: `docker compose config`, the images, the shipped configuration
files checked by their own tools. test_compose_model.py: targets, mounts, health, ports and
limits of the model; test_compose_k6.py: the k6 image and service, Alloy, the docs.

The tools come from scripts/test-setup.d/40-compose.sh (tests/composetools.py). A missing tool
is a failure, never a skip.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request

import pymysql
import pytest
import yaml

from conftest import stop_process


from composetools import (CLUSTER_ONLY, DEFAULT_SERVICES, ROOT, assert_reaches, compose,
                          compose_env, container_path, dotenv, everything, free_port, model, tool)

pytestmark = pytest.mark.fast


# ---------------------------------------------------------------------------------------
# docker compose config
# ---------------------------------------------------------------------------------------

def test_config_passes_for_default_and_cluster_profiles():
    for args in ([], ["--profile", "cluster"], ["--profile", "k6"], ["--profile", "cluster", "--profile", "k6"]):
        p = compose(*args, "config")
        assert "services:" in p.stdout, p.stdout[:500]
    assert set(model()["services"]) == DEFAULT_SERVICES
    assert set(model("cluster")["services"]) == DEFAULT_SERVICES | CLUSTER_ONLY
    assert set(model("k6")["services"]) == DEFAULT_SERVICES | {"k6"}
    # the root file only includes the files under compose/
    root = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert set(root) == {"name", "include"}
    assert all((ROOT / f).is_file() and f.startswith("compose/") for f in root["include"])


def test_cluster_profile_topology():
    m = model("cluster")
    svcs = m["services"]
    for kind in ("pd", "tikv", "tidb"):
        members = [s for s in svcs if re.fullmatch(kind + r"\d*", s)]
        assert len(members) == 3, (kind, members)
    for s in CLUSTER_ONLY:
        assert svcs[s]["profiles"] == ["cluster"], s
    for s in DEFAULT_SERVICES:
        assert not svcs[s].get("profiles"), s
    # pd2 and pd3 join the cluster pd founded; tidb2/tidb3 know every PD
    assert "--initial-cluster=pd=http://pd:2380" in svcs["pd"]["command"]
    assert "--join=http://pd:2379" in svcs["pd2"]["command"]
    assert "--join=http://pd:2379,http://pd2:2379" in svcs["pd3"]["command"]
    for s in ("tikv2", "tikv3"):
        assert "--pd=pd:2379,pd2:2379,pd3:2379" in svcs[s]["command"]
    for s in ("tidb2", "tidb3"):
        assert "--path=pd:2379,pd2:2379,pd3:2379" in svcs[s]["command"]
    images = {svcs[s]["image"] for s in svcs if re.fullmatch(r"(pd|tikv|tidb)\d*", s)}
    v = dotenv()["TIDB_VERSION"]
    assert images == {f"pingcap/pd:{v}", f"pingcap/tikv:{v}", f"pingcap/tidb:{v}"}


def test_components_advertise_addresses_other_containers_reach():
    svcs = model("cluster")["services"]
    for name, s in svcs.items():
        cmd = s.get("command") or []
        if re.fullmatch(r"tikv\d*", name):
            assert f"--advertise-addr={name}:20160" in cmd, name
            assert f"--advertise-status-addr={name}:20180" in cmd, name
            assert "--status-addr=0.0.0.0:20180" in cmd and "--addr=0.0.0.0:20160" in cmd, name
        elif re.fullmatch(r"pd\d*", name):
            assert f"--advertise-client-urls=http://{name}:2379" in cmd, name
            assert f"--advertise-peer-urls=http://{name}:2380" in cmd, name
            assert f"--name={name}" in cmd, name
        elif re.fullmatch(r"tidb\d*", name):
            assert f"--advertise-address={name}" in cmd, name
            for arg in cmd:
                if arg.startswith("--path="):
                    for ep in arg.split("=", 1)[1].split(","):
                        assert_reaches(model("cluster"), ep, f"{name} --path")


# the folders compose/secrets.yaml mounts for compose/passwords.py (one volume per reader)
SECRET_DIRS = ("grafana", "tidb", "k6", "history-db", "history-writer")


def test_passwords_are_generated_files_never_settings():
    """No password is a setting or an environment variable: each service reads its own from
    the volume the secrets service fills (compose/passwords.py), which only that service mounts."""
    assert not [k for k in dotenv() if "PASSWORD" in k], ".env must not carry a password"
    m = model("cluster", "k6", "k6-instances", "nightly")["services"]
    for name, svc in m.items():
        for k, v in (svc.get("environment") or {}).items():
            assert "PASSWORD" not in k or k.endswith("__FILE") or k.endswith("_FILE") or k == "mysql_password_file", (name, k)
    g = m["grafana"]
    assert g["environment"]["GF_SECURITY_ADMIN_PASSWORD__FILE"] == "/run/secrets/tbs/grafana_admin_password"
    assert g["environment"]["GF_AUTH_ANONYMOUS_ENABLED"] == "true"
    assert g["environment"]["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    assert m["k6"]["environment"]["mysql_user"] == "sbtest"
    assert m["k6"]["environment"]["mysql_password_file"] == "/run/secrets/tbs/sbtest_password"
    assert "mysql_password" not in m["k6"]["environment"]
    readers = {}
    for name, svc in m.items():
        for v in svc.get("volumes", []):
            if v["type"] == "volume" and v["source"].endswith("-secret"):
                readers.setdefault(v["source"], set()).add(name)
    assert readers == {"grafana-secret": {"secrets", "grafana"}, "tidb-secret": {"secrets", "tidb"},
                       "k6-secret": {"secrets", "k6", "k6-instance", "history-nightly"},
                       "history-db-secret": {"secrets", "history-db"},
                       "history-writer-secret": {"secrets", "history-nightly"}}, readers
    # Grafana's History data source: the reader's password from its file, the address set
    assert g["environment"]["GF_TBS_HISTORY_DB_PASSWORD__FILE"] == "/run/secrets/tbs/history_reader_password"
    assert g["environment"]["HISTORY_DB_URL"] == "history-db:5432"
    for name in ("tidb", "grafana", "history-db"):
        assert m[name]["depends_on"]["secrets"]["condition"] == "service_completed_successfully"


def test_secrets_makes_keeps_and_prints_passwords(tmp_path):
    """compose/passwords.py as the service runs it: three different random passwords the first
    time, the same ones later, TiDB's init.sql with the set's statements, root's password and
    the sbtest user; `login` and `password NAME` print them, a bad command says what is valid."""
    out = tmp_path / "secrets"
    for d in SECRET_DIRS:
        (out / d).mkdir(parents=True)
    env = {**os.environ, "TBS_SECRETS_DIR": str(out), "TBS_CONFIG_DIR": str(ROOT / "compose/config"),
           "CLUSTER_CONFIG": "seed"}

    def run(*args, check=True):
        p = subprocess.run([sys.executable, str(ROOT / "compose/passwords.py"), *args], env=env,
                           capture_output=True, text=True, timeout=30)
        assert not check or p.returncode == 0, p.stderr
        return p
    first = run("ensure").stdout
    pw = {n: (out / f).read_text() for n, f in (("grafana", "grafana/grafana_admin_password"),
                                                ("root", "tidb/root_password"), ("sbtest", "k6/sbtest_password"))}
    assert len(set(pw.values())) == 3 and all(re.fullmatch(r"[A-Za-z0-9_-]{32}", v) for v in pw.values()), pw
    assert not [v for v in pw.values() if v in first], "ensure printed a password"
    init = (out / "tidb/init.sql").read_text()
    assert (ROOT / "compose/config/seed/init.sql").read_text().strip() in init
    assert f"ALTER USER 'root'@'%' IDENTIFIED BY '{pw['root']}';" in init
    assert f"CREATE USER IF NOT EXISTS 'sbtest'@'%' IDENTIFIED BY '{pw['sbtest']}';" in init
    assert oct((out / "tidb/init.sql").stat().st_mode & 0o777) == "0o400"
    assert (out / "grafana/grafana_admin_password").stat().st_uid == 472
    # the history store's: superuser, writer (+ its connection string), Grafana's reader
    hpw = {n: (out / f).read_text() for n, f in (("admin", "history-db/admin_password"),
                                                 ("writer", "history-writer/writer_password"),
                                                 ("reader", "grafana/history_reader_password"))}
    assert len(set(hpw.values()) | set(pw.values())) == 6 and not [v for v in hpw.values() if v in first]
    assert (out / "history-db/admin_password").stat().st_uid == 999  # the PostgreSQL image's postgres
    assert (out / "grafana/history_reader_password").stat().st_uid == 472
    assert (out / "history-db/passwords.sql").read_text() == \
        f"\\set writer_password '{hpw['writer']}'\n\\set reader_password '{hpw['reader']}'\n"
    assert oct((out / "history-db/passwords.sql").stat().st_mode & 0o777) == "0o400"
    assert (out / "history-writer/conninfo").read_text() == (
        f"host=history-db port=5432 dbname=tbs_history user=tbs_history_writer password={hpw['writer']}\n")
    run("ensure")
    assert {n: (out / f).read_text() for n, f in (("grafana", "grafana/grafana_admin_password"),
            ("root", "tidb/root_password"), ("sbtest", "k6/sbtest_password"))} == pw, "passwords changed"
    login = run("login").stdout
    assert all(v in login for v in pw.values()) and "user admin" in login
    assert hpw["writer"] in login and hpw["reader"] in login and hpw["admin"] not in login
    assert run("password", "sbtest").stdout.strip() == pw["sbtest"]
    bad = run("password", "nope", check=False)
    assert bad.returncode != 0 and "'nope'" in bad.stderr and "grafana, tidb-root, sbtest" in bad.stderr
    bad = run("rotate", check=False)
    assert bad.returncode != 0 and "ensure | login | password NAME" in bad.stderr


# ---------------------------------------------------------------------------------------
# images
# ---------------------------------------------------------------------------------------

def test_every_service_waits_for_the_env_check():
    """env-check (compose/env_check.py) validates the settings' values; nothing starts before it
    completed successfully: every other service depends on it, directly or through the services
    it depends on."""
    services = everything()["services"]
    check = services["env-check"]
    assert check["command"][:2] == ["python3", "/opt/tbs/env_check.py"], check["command"]

    def waits(name, seen=()):
        deps = services[name].get("depends_on") or {}
        if deps.get("env-check", {}).get("condition") == "service_completed_successfully":
            return True
        return any(waits(d, seen + (name,)) for d in deps if d not in seen)
    late = sorted(n for n in services if n != "env-check" and not waits(n))
    assert late == [], f"services that can start before env-check: {late}"


def test_env_check_gets_every_setting_but_memory():
    """Every variable of .env reaches env-check, except the *_MEMORY sizes (docker compose
    rejects a bad size itself)."""
    env = everything()["services"]["env-check"]["environment"]
    want = {k for k in dotenv() if not k.endswith("_MEMORY")}
    assert want - set(env) == set(), want - set(env)
    assert env["TIDB_VERSION"] == dotenv()["TIDB_VERSION"]


def test_images_are_pinned_in_dotenv_and_never_latest():
    env = dotenv()
    assert re.fullmatch(r"v8\.5\.\d+", env["TIDB_VERSION"]), env["TIDB_VERSION"]
    pinned = {v for k, v in env.items() if k.endswith("_IMAGE")}
    for name, s in everything()["services"].items():
        image = s["image"]
        repo, sep, tag = image.rpartition(":")
        assert sep and tag and "/" not in tag, f"{name}: image {image} has no tag"
        assert tag != "latest", f"{name}: {image}"
        if name.startswith(("pd", "tikv", "tidb")) or repo == "pingcap/tidb-monitor-initializer":
            assert tag == env["TIDB_VERSION"], name
        else:
            assert image in pinned, f"{name}: {image} does not come from .env"
    for value in env.values():
        assert not value.endswith(":latest"), value
    for f in [ROOT / "compose.yaml", *sorted((ROOT / "compose").glob("*.yaml")), ROOT / ".env", ROOT / "k6/Dockerfile"]:
        assert not re.search(r":latest\b", f.read_text()), f"{f} mentions a :latest image"
    # every image in the compose files is a variable from .env
    for f in sorted((ROOT / "compose").glob("*.yaml")):
        for line in f.read_text().splitlines():
            m = re.match(r"\s*image:\s*(\S+)", line)
            if m:
                assert "${" in m.group(1), f"{f.name}: {line.strip()} is not pinned through .env"


def test_dockerfile_base_images_follow_dotenv():
    env = dotenv()
    text = (ROOT / "k6/Dockerfile").read_text()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    assert args["GO_IMAGE"] == env["GO_IMAGE"] and args["K6_BASE_IMAGE"] == env["K6_BASE_IMAGE"]
    k6 = model("k6")["services"]["k6"]
    assert k6["build"]["args"] == {"GO_IMAGE": env["GO_IMAGE"], "K6_BASE_IMAGE": env["K6_BASE_IMAGE"]}
    assert re.findall(r"^FROM (\S+)", text, re.M) == ["${GO_IMAGE}", "${K6_BASE_IMAGE}"]


# ---------------------------------------------------------------------------------------
# the shipped configuration files, checked by their own tools
# ---------------------------------------------------------------------------------------

def test_promtool_checks_prometheus_config_with_compose_targets(tmp_path):
    shutil.copy(ROOT / "prometheus/prometheus.yml", tmp_path / "prometheus.yml")
    shutil.copytree(ROOT / "prometheus/targets/compose", tmp_path / "targets")
    p = subprocess.run([tool("promtool"), "check", "config", str(tmp_path / "prometheus.yml")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout + p.stderr


def test_haproxy_checks_its_config():
    cfg = ROOT / "compose/haproxy/haproxy.cfg"
    p = subprocess.run([tool("haproxy"), "-c", "-f", str(cfg)], capture_output=True, text=True, timeout=60)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "Configuration file is valid" in out
    # the only warnings allowed: the TiDB containers' names do not resolve outside compose
    for line in out.splitlines():
        if "[WARNING]" in line:
            assert "could not resolve address" in line, line
    text = cfg.read_text()
    listen = text.split("listen tidb-cluster", 1)[1].split("\nlisten ", 1)[0]
    assert re.search(r"^\s*balance leastconn\s*$", listen, re.M)
    assert re.search(r"^\s*mode tcp\s*$", listen, re.M)
    bind_port = int(re.search(r"^\s*bind :(\d+)", listen, re.M).group(1))
    servers = re.findall(r"^\s*server (\S+) (\S+)", listen, re.M)
    m = model("cluster")
    tidbs = {s for s in m["services"] if re.fullmatch(r"tidb\d*", s)}
    assert {addr.split(":")[0] for _, addr in servers} == tidbs
    for _, addr in servers:
        assert_reaches(m, addr, "haproxy server")
    h = m["services"]["haproxy"]
    assert bind_port in {int(p["target"]) for p in h["ports"]}
    assert container_path(h, "/usr/local/etc/haproxy/haproxy.cfg") == cfg
    assert set(h["depends_on"]) == tidbs


def test_loki_verifies_the_shared_config_as_compose_runs_it():
    loki = model()["services"]["loki"]
    assert loki["command"] == ["-config.file=/etc/loki/loki.yaml", "-config.expand-env=true"]
    assert loki["environment"] == {"LOKI_DATA": "/loki", "LOKI_LISTEN": "0.0.0.0"}
    cfg = container_path(loki, "/etc/loki/loki.yaml")
    assert cfg == ROOT / "loki/loki.yaml"
    env = dict(os.environ, **loki["environment"])
    p = subprocess.run([tool("loki"), "-verify-config", f"-config.file={cfg}", "-config.expand-env=true"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    # the healthcheck's probe exists in this Loki version (and fails when Loki is not up)
    assert loki["healthcheck"]["test"] == ["CMD", "/usr/bin/loki", "-health"]
    p = subprocess.run([tool("loki"), "-health", f"-health.url=http://127.0.0.1:{free_port()}/ready"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "Health check failed" in p.stdout + p.stderr, p.stdout + p.stderr


def test_tidb_configs_pass_tidb_servers_strict_check():
    tidb_server = tool("tidb-server")
    sets = sorted(d.name for d in (ROOT / "compose/config").iterdir() if d.is_dir())
    assert sets == ["default", "seed"]
    assert dotenv()["CLUSTER_CONFIG"] in sets
    for s in sets:
        for f in ("pd.toml", "tikv.toml", "tidb.toml", "init.sql"):
            assert (ROOT / "compose/config" / s / f).is_file(), (s, f)
        for f in ("pd.toml", "tikv.toml", "tidb.toml"):
            tomllib.loads((ROOT / "compose/config" / s / f).read_text())
        p = subprocess.run([tidb_server, "--config-check", "--config-strict",
                            "--config", str(ROOT / "compose/config" / s / "tidb.toml")],
                           capture_output=True, text=True, timeout=60)
        out = p.stdout + p.stderr
        assert p.returncode == 0 and "config check successful" in out, out
        assert "no longer supported" not in out and "deprecated" not in out.lower(), out


def test_seed_config_carries_the_seed_reports_parameters():
    seed = ROOT / "compose/config/seed"
    tikv = tomllib.loads((seed / "tikv.toml").read_text())
    assert tikv["raftstore"] == {"store-pool-size": 3, "apply-pool-size": 3}
    assert tikv["readpool"]["storage"]["normal-concurrency"] == 10
    assert tikv["readpool"]["unified"] == {"min-thread-count": 5, "max-thread-count": 20}
    assert tikv["server"]["grpc-concurrency"] == 6
    assert tikv["storage"]["scheduler-worker-pool-size"] == 5
    tidb = tomllib.loads((seed / "tidb.toml").read_text())
    assert tidb["tikv-client"]["max-batch-wait-time"] == 2000000
    sql = (seed / "init.sql").read_text()
    for stmt in ("SET GLOBAL tidb_enable_prepared_plan_cache = ON",
                 "SET GLOBAL tidb_session_plan_cache_size = 1000",
                 "SET GLOBAL tidb_hashagg_final_concurrency = 1",
                 "SET GLOBAL tidb_enable_1pc = ON"):
        assert stmt in sql, stmt
    for s in ("default", "seed"):
        assert "CREATE DATABASE IF NOT EXISTS sbtest" in (ROOT / "compose/config" / s / "init.sql").read_text()


@pytest.mark.full
@pytest.mark.parametrize("config_set", ["default", "seed"])
def test_tidb_starts_with_the_compose_flags_and_runs_init_sql(tmp_path, config_set):
    """tidb-server (our module build) runs with the compose service's own flags (storage and
    ports swapped for a scratch unistore) and executes the set's init.sql without an error."""
    env = compose_env(CLUSTER_CONFIG=config_set)
    svc = json.loads(compose("config", "--format", "json", env=env).stdout)["services"]["tidb"]
    port, status = free_port(), free_port()
    args = []
    for arg in svc["command"]:
        flag, _, val = arg.partition("=")
        if flag == "--store":
            arg = "--store=unistore"
        elif flag == "--path":
            arg = f"--path={tmp_path / 'data'}"
        elif flag == "-P":
            arg = f"-P={port}"
        elif flag == "--status":
            arg = f"--status={status}"
        elif flag == "--config":
            local = container_path(svc, val)
            assert local is not None and local.is_file(), (arg, local)
            assert local.parent == ROOT / "compose/config" / config_set
            arg = f"{flag}={local}"
        elif flag == "--initialize-sql-file":
            # the secrets service's init.sql in its tidb-secret volume: made here as it makes it
            vol = [v for v in svc["volumes"] if v["type"] == "volume" and val.startswith(v["target"] + "/")]
            assert [v["source"] for v in vol] == ["tidb-secret"], svc["volumes"]
            out = tmp_path / "secrets"
            for d in SECRET_DIRS:
                (out / d).mkdir(parents=True)
            subprocess.run([sys.executable, str(ROOT / "compose/passwords.py"), "ensure"], check=True,
                           capture_output=True, env={**os.environ, "TBS_SECRETS_DIR": str(out),
                                                     "TBS_CONFIG_DIR": str(ROOT / "compose/config"),
                                                     "CLUSTER_CONFIG": config_set})
            arg = f"{flag}={out / 'tidb' / val.rsplit('/', 1)[1]}"
        args.append(arg)
    assert any(a.startswith("--initialize-sql-file=") for a in args)
    log = tmp_path / "tidb.log"
    # -L=warn: the seed set logs at error level, init.sql's failures are warnings
    proc = subprocess.Popen([tool("tidb-server"), *args, "-L=warn", f"--log-file={log}",
                             "--host=127.0.0.1", "--status-host=127.0.0.1",
                             f"--socket={tmp_path / 'tidb.sock'}", f"--temp-dir={tmp_path / 'tmp'}"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while True:
            assert proc.poll() is None, f"tidb-server exited {proc.returncode}:\n{log.read_text()[-3000:] if log.exists() else ''}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{status}/status", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            assert time.time() < deadline, "tidb-server did not come up"
            time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{status}/schema", timeout=10) as r:
            dbs = {d["db_name"]["O"] for d in json.load(r)}
        assert {"sbtest", "sbtest_smoke", "sbtest_tpcc"} <= dbs, dbs  # (sbtest_tpcc: k6/tpcc.js's, docs/compose.md)
        text = log.read_text()
        assert "InitializeSQLFile error" not in text, [ln for ln in text.splitlines() if "InitializeSQLFile" in ln]
        # root has the generated password now, sbtest logs in with its own
        root_pw = (tmp_path / "secrets/tidb/root_password").read_text()
        sb_pw = (tmp_path / "secrets/k6/sbtest_password").read_text()
        with pytest.raises(pymysql.err.OperationalError):
            pymysql.connect(host="127.0.0.1", port=port, user="root", password="", connect_timeout=5)
        pymysql.connect(host="127.0.0.1", port=port, user="root", password=root_pw, connect_timeout=5).close()
        with pymysql.connect(host="127.0.0.1", port=port, user="sbtest", password=sb_pw, database="sbtest") as db:
            with db.cursor() as cur:
                cur.execute("CREATE TABLE sbtest_probe (id INT PRIMARY KEY)")
    finally:
        stop_process(proc)
