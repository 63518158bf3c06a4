"""The compose stack (compose.yaml, compose/, .env, k6/Dockerfile), proven without a Docker
engine: every check runs the real tool on the shipped files.

Tools come from scripts/test-setup.d/40-compose.sh: bin/docker-compose (docker compose
v2.40.3 built from the Go module proxy), bin/loki, bin/tidb-server, bin/alloy-check
(compose/alloy/check: Alloy's own parser and evaluator), promtool and haproxy (Debian). A
missing tool is a failure, never a skip.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pymysql
import pytest
import yaml

from conftest import stop_process

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "bin"
SETUP = "scripts/test-setup.d/40-compose.sh"

CLUSTER_ONLY = {"pd2", "pd3", "tikv2", "tikv3", "tidb2", "tidb3", "haproxy", "prometheus-targets-cluster"}
DEFAULT_SERVICES = {"pd", "tikv", "tidb", "prometheus", "loki", "alloy", "grafana",
                    "grafana-renderer", "node-exporter",
                    "env-check",  # the settings' values, before anything starts (compose/env_check.py)
                    "secrets",  # generated passwords (compose/passwords.py)
                    "prometheus-targets",  # the default topology's scrape targets
                    # PingCAP's dashboards for Grafana (tests/test_pingcap_dashboards.py)
                    "pingcap-dashboards-src", "pingcap-dashboards"}
# Services that run once per `up` and exit 0; the others wait for them to complete.
ONE_SHOTS = {"env-check", "secrets", "prometheus-targets", "prometheus-targets-cluster",
             "pingcap-dashboards-src", "pingcap-dashboards"}
# Host paths mounted on purpose (not repository files): node_exporter's view of the host,
# Alloy's access to the Docker engine's container list and logs.
HOST_PATHS = {"/", "/var/run/docker.sock"}


def tool(name):
    """A tool the setup script provides: bin/<name> or on PATH. Fails (not skips) if absent."""
    p = BIN / name
    if p.exists():
        return str(p)
    found = shutil.which(name)
    assert found, f"{name} not found in bin/ or on PATH: run {SETUP}"
    return found


def dotenv():
    env = {}
    for line in (ROOT / ".env").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        k, _, v = line.partition("=")
        env[k.strip()] = v.strip()
    return env


def compose_env(**extra):
    """The caller's environment without anything that would override .env or the project:
    nothing needs exporting (no password is a setting: compose/secrets.yaml generates them)."""
    env = {k: v for k, v in os.environ.items() if k not in dotenv() and not k.startswith("COMPOSE_")}
    env.update(extra)
    return env


def compose(*args, env=None, check=True):
    p = subprocess.run([tool("docker-compose"), *args], cwd=ROOT, env=env or compose_env(),
                       capture_output=True, text=True, timeout=120)
    if check:
        assert p.returncode == 0, f"docker compose {' '.join(args)}: {p.returncode}\n{p.stderr}"
    return p


_models = {}


def model(*profiles):
    """The resolved compose model (`docker compose config --format json`) for some profiles."""
    key = tuple(sorted(profiles))
    if key not in _models:
        args = [a for p in key for a in ("--profile", p)]
        _models[key] = json.loads(compose(*args, "config", "--format", "json").stdout)
    return _models[key]


def everything():
    return model("cluster", "k6")


def listen_ports(svc):
    """Ports a service listens on, as the model declares them: published/exposed ports, the
    listen flags of its command and the ports its own healthcheck probes."""
    ports = {int(p["target"]) for p in svc.get("ports") or []}
    ports |= {int(str(e).split("/")[0]) for e in svc.get("expose") or []}
    for arg in svc.get("command") or []:
        m = re.match(r"-{1,2}([\w.-]+)=(.*)", arg)
        if not m:
            continue
        flag, val = m.groups()
        if flag in ("client-urls", "peer-urls", "addr", "status-addr", "server.http.listen-addr",
                    "web.listen-address"):
            ports |= {int(x) for x in re.findall(r":(\d+)", val)}
        elif flag in ("status", "P"):
            ports.add(int(val))
    hc = svc.get("healthcheck") or {}
    ports |= {int(x) for x in re.findall(r"(?:127\.0\.0\.1|localhost):(\d+)", " ".join(hc.get("test") or []))}
    return ports


def assert_reaches(m, url, why):
    """url's host is a service of model m that listens on url's port."""
    u = urlparse(url if "://" in url else "tcp://" + url)
    assert u.hostname in m["services"], f"{why}: {url}: no service {u.hostname!r}"
    assert u.port in listen_ports(m["services"][u.hostname]), \
        f"{why}: {url}: service {u.hostname} does not listen on {u.port} ({sorted(listen_ports(m['services'][u.hostname]))})"


def bind_mounts(svc):
    return [v for v in svc.get("volumes") or [] if v["type"] == "bind"]


def container_path(svc, path):
    """Maps a path inside the container to the repository file mounted there (or None)."""
    best = None
    for v in bind_mounts(svc):
        t = v["target"].rstrip("/")
        if (path == t or path.startswith(t + "/")) and (best is None or len(t) > len(best[0])):
            best = (t, v["source"])
    if best is None:
        return None
    return Path(best[1] + path[len(best[0]):])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def test_passwords_are_generated_files_never_settings():
    """No password is a setting or an environment variable: each service reads its own from
    the volume the secrets service fills (compose/passwords.py), which only that service mounts."""
    assert not [k for k in dotenv() if "PASSWORD" in k], ".env must not carry a password"
    m = model("cluster", "k6", "k6-instances")["services"]
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
                       "k6-secret": {"secrets", "k6", "k6-instance"}}, readers
    for name in ("tidb", "grafana"):
        assert m[name]["depends_on"]["secrets"]["condition"] == "service_completed_successfully"


def test_secrets_makes_keeps_and_prints_passwords(tmp_path):
    """compose/passwords.py as the service runs it: three different random passwords the first
    time, the same ones later, TiDB's init.sql with the set's statements, root's password and
    the sbtest user; `login` and `password NAME` print them, a bad command says what is valid."""
    out = tmp_path / "secrets"
    for d in ("grafana", "tidb", "k6"):
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
    run("ensure")
    assert {n: (out / f).read_text() for n, f in (("grafana", "grafana/grafana_admin_password"),
            ("root", "tidb/root_password"), ("sbtest", "k6/sbtest_password"))} == pw, "passwords changed"
    login = run("login").stdout
    assert all(v in login for v in pw.values()) and "user admin" in login
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
            for d in ("grafana", "tidb", "k6"):
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
        assert {"sbtest", "sbtest_smoke"} <= dbs, dbs
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


# ---------------------------------------------------------------------------------------
# the compose model: targets, mounts, health, ports, limits
# ---------------------------------------------------------------------------------------

def scrape_jobs(folder="compose"):
    cfg = yaml.safe_load((ROOT / "prometheus/prometheus.yml").read_text())
    jobs = {}
    for sc in cfg["scrape_configs"]:
        files = [f for sd in sc.get("file_sd_configs", []) for f in sd["files"]]
        assert files == [f"targets/{sc['job_name']}.yml"], sc
        jobs[sc["job_name"]] = ROOT / "prometheus/targets" / folder / f"{sc['job_name']}.yml"
    return jobs


def targets_of(m):
    """The target folders the prometheus-targets services of a model copy, in their order."""
    out = []
    for name in ("prometheus-targets", "prometheus-targets-cluster"):
        if name in m["services"]:
            src = [v["source"] for v in m["services"][name]["volumes"] if v["target"] == "/src"]
            out.append(Path(src[0]).relative_to(ROOT / "prometheus/targets").as_posix())
    return out


def test_only_what_exists_is_scraped():
    """The default topology scrapes only its members; the cluster profile's copy (run after the
    default one) adds every member. Prometheus reads the folder from the shared volume."""
    default, cluster = model(), model("cluster")
    assert targets_of(default) == ["compose"] and targets_of(cluster) == ["compose", "compose-cluster"]
    assert cluster["services"]["prometheus-targets-cluster"]["depends_on"]["prometheus-targets"]["condition"] \
        == "service_completed_successfully"
    prom = default["services"]["prometheus"]
    assert [v["source"] for v in prom["volumes"] if v["target"] == "/etc/prometheus/targets"] == ["prometheus-targets"]
    assert prom["depends_on"]["prometheus-targets"]["condition"] == "service_completed_successfully"
    for job, path in scrape_jobs("compose").items():
        for g in yaml.safe_load(path.read_text()) or []:
            for t in g["targets"]:
                assert t.rsplit(":", 1)[0] in default["services"], (job, t)
                assert_reaches(default, t, f"job {job}")


def test_every_scrape_target_is_a_service_and_port_of_the_model():
    jobs = scrape_jobs("compose-cluster")
    assert {p.name for p in (ROOT / "prometheus/targets/compose").glob("*.yml")} == {p.name for p in jobs.values()}
    assert {p.name for p in (ROOT / "prometheus/targets/compose-cluster").glob("*.yml")} == {p.name for p in jobs.values()}
    default, cluster = model(), model("cluster")
    scraped = {}
    for job, path in jobs.items():
        groups = yaml.safe_load(path.read_text()) or []
        for g in groups:
            for t in g["targets"]:
                host = t.rsplit(":", 1)[0]
                scraped[host] = job
                # every target exists in the cluster profile...
                assert_reaches(cluster, t, f"job {job}")
                # ... and in the default profile, unless it is a cluster-only member, labelled so
                if host in default["services"]:
                    assert_reaches(default, t, f"job {job}")
                    assert "compose_profile" not in g.get("labels", {}), (job, t)
                else:
                    assert cluster["services"][host]["profiles"] == ["cluster"], (job, t)
                    assert g["labels"]["compose_profile"] == "cluster", (job, t)
    # every PD, TiKV and TiDB of the cluster profile is scraped by its job
    for name in cluster["services"]:
        m = re.fullmatch(r"(pd|tikv|tidb)\d*", name)
        if m:
            assert scraped.get(name) == m.group(1), f"{name} is not scraped by job {m.group(1)}"
    for job, svc in {"prometheus": "prometheus", "loki": "loki", "node": "node-exporter"}.items():
        assert scraped.get(svc) == job, f"{svc} is not scraped by job {job}"
    # TiKV is scraped at the status address it advertises
    tikv = cluster["services"]["tikv"]["command"]
    assert "--advertise-status-addr=tikv:20180" in tikv
    assert yaml.safe_load(jobs["tikv"].read_text())[0]["targets"] == ["tikv:20180"]


def git_ignored(path):
    return subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=ROOT).returncode == 0


def test_every_bind_mount_exists_in_the_repository():
    for name, s in everything()["services"].items():
        for v in bind_mounts(s):
            src = v["source"]
            if src in HOST_PATHS:
                assert v.get("read_only"), f"{name}: host path {src} must be read-only"
                continue
            path = Path(src)
            assert path.is_relative_to(ROOT), f"{name}: {src} is outside the repository"
            rel = path.relative_to(ROOT)
            if str(rel) == "results":
                # k6's run summaries: git-ignored output, created on the first run
                assert name == "k6" and git_ignored(ROOT / "results/some-testid.json")
                continue
            assert path.exists(), f"{name}: {src} (mounted at {v['target']}) does not exist"
            if name != "k6":
                assert v.get("read_only"), f"{name}: {rel} should be mounted read-only"
        # every file a command names inside a mounted folder exists
        for arg in s.get("command") or []:
            val = arg.partition("=")[2] if arg.startswith("-") else arg
            if val.startswith("/"):
                for piece in val.split(","):
                    local = container_path(s, piece)
                    if local is not None and local.is_relative_to(ROOT):
                        assert local.exists(), f"{name}: {arg} -> {local} does not exist"


def test_shared_prometheus_and_loki_configs_are_mounted_as_the_contract_says():
    s = model()["services"]
    prom = s["prometheus"]
    assert container_path(prom, "/etc/prometheus/prometheus.yml") == ROOT / "prometheus/prometheus.yml"
    assert targets_of(model()) == ["compose"]  # through the prometheus-targets volume
    cmd = prom["command"]
    # the remote-write receiver (k6 pushes); native histograms need no feature flag in v3
    # (--enable-feature=native-histograms is a no-op there): tests/test_runtime.py checks the flags
    for flag in ("--config.file=/etc/prometheus/prometheus.yml", "--web.enable-remote-write-receiver"):
        assert flag in cmd, flag
    assert re.fullmatch(r"prom/prometheus:v3\.\d+\.\d+", prom["image"]), prom["image"]
    assert container_path(s["loki"], "/etc/loki/loki.yaml") == ROOT / "loki/loki.yaml"


def test_grafana_is_wired_to_its_datasources_dashboards_and_renderer():
    m = model()
    g = m["services"]["grafana"]
    env = g["environment"]
    assert_reaches(m, env["PROMETHEUS_URL"], "PROMETHEUS_URL")
    assert_reaches(m, env["LOKI_URL"], "LOKI_URL")
    assert_reaches(m, env["GF_RENDERING_SERVER_URL"], "GF_RENDERING_SERVER_URL")
    assert urlparse(env["GF_RENDERING_SERVER_URL"]).hostname == "grafana-renderer"
    assert_reaches(m, env["GF_RENDERING_CALLBACK_URL"], "GF_RENDERING_CALLBACK_URL")
    assert urlparse(env["GF_RENDERING_CALLBACK_URL"]).hostname == "grafana"
    assert m["services"]["grafana-renderer"]["image"] == dotenv()["GRAFANA_RENDERER_IMAGE"]
    mounts = {v["target"]: v for v in bind_mounts(g)}
    prov = mounts["/etc/grafana/provisioning"]
    assert prov["source"] == str(ROOT / "grafana/provisioning") and prov["read_only"]
    dash = mounts["/var/lib/grafana/dashboards"]
    assert dash["source"] == str(ROOT / "grafana/dashboards") and dash["read_only"]
    assert env["GRAFANA_DASHBOARDS"] == "/var/lib/grafana/dashboards"
    # the provisioning files use exactly the variables compose sets
    used = set()
    for f in (ROOT / "grafana/provisioning").rglob("*.yaml"):
        for line in f.read_text().splitlines():
            line = re.sub(r"(^|\s)#.*", "", line)  # comments
            used |= {a or b for a, b in re.findall(r"\$\{([A-Z_][A-Z0-9_]*)\}|\$([A-Z_][A-Z0-9_]*)", line)}
    assert used and used <= set(env), f"provisioning uses {sorted(used - set(env))}, not set for grafana"


def test_every_service_with_dependants_has_a_healthcheck():
    svcs = everything()["services"]
    dependants = {}
    for name, s in svcs.items():
        for dep, d in (s.get("depends_on") or {}).items():
            assert dep in svcs, f"{name} depends on unknown {dep}"
            if dep in ONE_SHOTS:  # one-shot services: they complete, they are never "healthy"
                assert d["condition"] == "service_completed_successfully", f"{name} -> {dep}: {d['condition']}"
                assert not svcs[dep].get("restart") or svcs[dep]["restart"] == "no", svcs[dep].get("restart")
                continue
            assert d["condition"] == "service_healthy", f"{name} -> {dep}: {d['condition']}"
            dependants.setdefault(dep, []).append(name)
    assert {"pd", "tikv", "tidb", "prometheus", "loki"} <= set(dependants)
    for dep in dependants:
        hc = svcs[dep].get("healthcheck")
        assert hc and hc.get("test") and not hc.get("disable"), f"{dep} has dependants {dependants[dep]} but no healthcheck"
        assert hc["test"][0] in ("CMD", "CMD-SHELL"), hc
    # the probes use tools each image has: PingCAP images (Rocky Linux + /bin/busybox, older
    # ones Alpine or CentOS with curl), Prometheus' busybox image (wget), Loki's own binary
    for name, s in svcs.items():
        hc = s.get("healthcheck")
        if not hc:
            continue
        test = " ".join(hc["test"][1:])
        if re.fullmatch(r"(pd|tikv|tidb)\d*", name):
            assert hc["test"][0] == "CMD-SHELL"
            assert test.startswith("/bin/busybox wget -q -O /dev/null http://127.0.0.1:") and "|| curl -fsS" in test, test
            urls = re.findall(r"http://127\.0\.0\.1:\d+\S*", test)
            assert len(set(urls)) == 1, urls
            path = {"pd": "/pd/api/v1/health", "tikv": "/status", "tidb": "/status"}[re.match(r"[a-z]+", name).group()]
            assert urlparse(urls[0]).path == path, (name, urls)
        elif name in ("prometheus", "node-exporter"):
            assert hc["test"][:2] == ["CMD", "wget"], hc
    # TiDB's status port and PD's client port are the ones probed
    assert "10080" in " ".join(svcs["tidb"]["healthcheck"]["test"])


def test_every_published_port_is_on_localhost():
    published = 0
    for m in (model(), model("cluster"), everything()):
        for name, s in m["services"].items():
            for p in s.get("ports") or []:
                published += 1
                assert p.get("host_ip") == "127.0.0.1", f"{name}: {p}"
    assert published
    ports = {(n, int(p["published"])) for n, s in everything()["services"].items() for p in s.get("ports") or []}
    assert {("tidb", 4000), ("grafana", 3000), ("prometheus", 9090), ("loki", 3100), ("haproxy", 3390)} <= ports


def test_every_service_has_a_memory_limit():
    for name, s in everything()["services"].items():
        limit = ((s.get("deploy") or {}).get("resources") or {}).get("limits", {}).get("memory")
        assert limit and int(limit) > 0, f"{name} has no memory limit"
    svcs = everything()["services"]
    # the load generator is capped below the database
    k6 = int(svcs["k6"]["deploy"]["resources"]["limits"]["memory"])
    assert k6 <= int(svcs["tikv"]["deploy"]["resources"]["limits"]["memory"])


# ---------------------------------------------------------------------------------------
# k6: the image and the service
# ---------------------------------------------------------------------------------------

K6_RW = {
    "K6_OUT": "experimental-prometheus-rw",
    "K6_PROMETHEUS_RW_SERVER_URL": "http://prometheus:9090/api/v1/write",
    "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "true",
    "K6_PROMETHEUS_RW_STALE_MARKERS": "true",
}


def k6_option_names():
    """The option names k6 accepts (k6/contract.json, which k6/lib/config.js reads; it rejects
    any other lowercase variable)."""
    return set(json.loads((ROOT / "k6/contract.json").read_text())["options"])


def test_k6_service_runs_on_demand_against_the_compose_services():
    assert "k6" not in model()["services"] and "k6" not in model("cluster")["services"]
    m = model("k6")
    k6 = m["services"]["k6"]
    assert k6["profiles"] == ["k6"]
    assert k6["build"]["context"] == str(ROOT / "k6") and k6["build"]["dockerfile"] == "Dockerfile"
    env = k6["environment"]
    for k, v in K6_RW.items():
        assert env[k] == v, k
    assert_reaches(m, env["K6_PROMETHEUS_RW_SERVER_URL"], "remote write")
    assert_reaches(m, f"{env['mysql_host']}:{env['mysql_port']}", "mysql_host/mysql_port")
    assert (env["mysql_host"], env["mysql_port"]) == ("tidb", "4000")
    options = k6_option_names()
    assert {"mysql_host", "mysql_port", "mysql_user", "mysql_password_file", "mysql_db"} <= options
    for k in env:
        if k[0].islower():
            assert k in options, f"k6 rejects the unknown option {k}"
    assert set(k6["depends_on"]) == {"tidb", "prometheus"}
    # the cluster's load balancer the docs point k6 at
    assert_reaches(model("cluster"), "haproxy:3390", "k6 in the cluster profile")


def dockerfile_stages():
    """[(from, alias, [(instruction, args), ...]), ...] of k6/Dockerfile (continuations joined)."""
    lines, cur = [], ""
    for raw in (ROOT / "k6/Dockerfile").read_text().splitlines():
        if not cur and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        cur += raw.rstrip("\\").strip() + " "
        if not raw.endswith("\\"):
            lines.append(cur.strip())
            cur = ""
    stages = []
    for line in lines:
        instr, _, rest = line.partition(" ")
        if instr == "FROM":
            m = re.fullmatch(r"(\S+)(?: AS (\S+))?", rest)
            stages.append((m.group(1), m.group(2), []))
        elif stages:
            stages[-1][2].append((instr, rest))
    return stages


def test_k6_image_runtime_stage():
    stages = dockerfile_stages()
    assert len(stages) == 2 and stages[0][1] == "build", stages
    runtime = dict()
    for instr, rest in stages[1][2]:
        runtime.setdefault(instr, []).append(rest)
    assert runtime["WORKDIR"] == ["/scripts"]
    assert "--from=build /out/k6 /usr/bin/k6" in runtime["COPY"]
    # the scripts and the contract they read (k6/lib/config.js opens ../contract.json)
    assert "*.js contract.json ./" in runtime["COPY"] and "lib ./lib" in runtime["COPY"]
    assert list((ROOT / "k6").glob("*.js")) and (ROOT / "k6/lib").is_dir()
    assert (ROOT / "k6/oltp.js").is_file()
    # k6 behind k6/docker-entrypoint.sh (a run's lines per testid where TBS_RUN_LOGS is set)
    assert "docker-entrypoint.sh /usr/local/bin/tbs-k6" in runtime["COPY"]
    assert runtime["ENTRYPOINT"] == ['["/usr/local/bin/tbs-k6"]']
    env = dict(re.findall(r"(\w+)=(\S+)", " ".join(runtime["ENV"])))
    for k, v in K6_RW.items():
        assert env[k] == v, k
    assert env["mysql_host"] == "tidb" and env["mysql_port"] == "4000"
    assert set(k for k in env if k[0].islower()) <= k6_option_names()


def test_k6_image_build_stage_builds_our_k6_from_the_repo(tmp_path):
    """Runs the Dockerfile's build stage on the repo: its COPYs into a scratch build context
    of k6/, then its RUN commands, the `go build` writing to a temp file; the binary must be
    our k6 (xk6-sql and the k6/x/sql/driver/mysql module), built exactly as scripts/build does."""
    base, alias, steps = dockerfile_stages()[0]
    assert base == "${GO_IMAGE}" and alias == "build"
    ctx = ROOT / "k6"
    workdir = None
    builds = []
    for instr, rest in steps:
        if instr == "WORKDIR":
            workdir = tmp_path / rest.lstrip("/")
            workdir.mkdir(parents=True, exist_ok=True)
        elif instr == "COPY":
            *srcs, dest = rest.split()
            target = workdir / dest if not dest.startswith("/") else tmp_path / dest.lstrip("/")
            for src in srcs:
                for s in sorted(ctx.glob(src)):
                    if s.is_dir():
                        shutil.copytree(s, target if dest not in ("./", ".") else target / s.name, dirs_exist_ok=True)
                    else:
                        target.mkdir(parents=True, exist_ok=True)
                        shutil.copy(s, target / s.name)
        elif instr == "RUN":
            tokens = rest.split()
            env = dict(os.environ)
            while tokens and re.fullmatch(r"[A-Z_]+=\S*", tokens[0]):
                k, _, v = tokens.pop(0).partition("=")
                env[k] = v
            if tokens[:2] == ["go", "build"]:
                builds.append((tokens, env))
                out = tokens[tokens.index("-o") + 1]
                assert out == "/out/k6", out
                tokens[tokens.index("-o") + 1] = str(tmp_path / "out" / "k6")
            p = subprocess.run(tokens, cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
            assert p.returncode == 0, f"RUN {rest}: {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    assert len(builds) == 1, builds
    tokens, env = builds[0]
    assert env.get("CGO_ENABLED") == "0"
    # the same command as the local build (scripts/build k6), but for the output path
    local = re.search(r'cd "\$ROOT/k6" && (CGO_ENABLED=0 go build [^)]*)\)', (ROOT / "scripts/build").read_text())
    assert local, "scripts/build has no k6 build command"
    def norm(toks):
        return [t for i, t in enumerate(toks) if i == 0 or toks[i - 1] != "-o"]
    assert norm(["CGO_ENABLED=0", *tokens]) == norm(local.group(1).replace('"$ROOT/bin/k6"', "OUT").split())
    p = subprocess.run([str(tmp_path / "out" / "k6"), "version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "github.com/grafana/xk6-sql" in p.stdout, p.stdout
    assert "k6/x/sql/driver/mysql" in p.stdout, p.stdout
    assert re.search(r"k6 v1\.8\.1\b", p.stdout), p.stdout


# ---------------------------------------------------------------------------------------
# Alloy
# ---------------------------------------------------------------------------------------

def alloy_samples(m):
    """What discovery.docker lists for the project's containers: one per service (label set
    as Prometheus' Docker discovery builds it), plus a `docker compose run` k6 container."""
    samples = []
    for i, name in enumerate(sorted(m["services"])):
        for cname in (f"/{m['name']}-{name}-1",) + ((f"/{m['name']}-k6-run-0123456789ab",) if name == "k6" else ()):
            samples.append({
                "__meta_docker_container_id": f"{i:02d}{cname}",
                "__meta_docker_container_name": cname,
                "__meta_docker_container_label_com_docker_compose_project": m["name"],
                "__meta_docker_container_label_com_docker_compose_service": name,
                "__meta_docker_network_ip": f"172.18.0.{i + 2}",
                "__address__": f"172.18.0.{i + 2}:80",
            })
    # discovery lists a container once per network port: the duplicate must not double logs
    samples.append(dict(samples[0], __address__="172.18.0.2:81"))
    return samples


def run_alloy_check(config, m, tmp_path):
    alloy = m["services"]["alloy"]
    samples = tmp_path / "targets.json"
    samples.write_text(json.dumps(alloy_samples(m)))
    env = dict(os.environ, **alloy["environment"])
    # a k6 run's log file as k6/docker-entrypoint.sh names it, and a file that is not a run's
    files = "/var/log/tbs-k6/runs/20261125-101010-ab12.log,/var/log/tbs-k6/other.txt"
    return subprocess.run([tool("alloy-check"), "-targets", str(samples), "-files", files, str(config)],
                          env=env, capture_output=True, text=True, timeout=60)


def test_alloy_config_ships_cluster_and_k6_logs_with_a_service_label(tmp_path):
    m = everything()
    alloy = m["services"]["alloy"]
    cmd = alloy["command"]
    assert cmd[0] == "run" and cmd[-1] == "/etc/alloy/config.alloy"
    config = container_path(alloy, cmd[-1])
    assert config == ROOT / "compose/alloy/config.alloy"
    assert any(v["source"] == "/var/run/docker.sock" and v["target"] == "/var/run/docker.sock"
               for v in bind_mounts(alloy))
    assert alloy["environment"]["COMPOSE_PROJECT_NAME"] == m["name"] == "tidb-bench"
    p = run_alloy_check(config, m, tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    docker = out["discovery.docker.containers"]
    assert docker["host"] == "unix:///var/run/docker.sock"
    assert docker["filter"] == [{"name": "label", "values": [f"com.docker.compose.project={m['name']}"]}]
    for url in (e["url"] for e in out["loki.write.loki"]["endpoint"]):
        assert url.endswith("/loki/api/v1/push")
        assert_reaches(m, url, "loki.write")
    # k6 runs' own lines: the file the entrypoint writes per testid, shipped with the testid
    assert any(v["source"] == "k6-logs" and v["target"] == "/var/log/tbs-k6" and v.get("read_only")
               for v in alloy["volumes"])
    k6 = m["services"]["k6"]
    logs = k6["environment"]["TBS_RUN_LOGS"]
    assert any(v["source"] == "k6-logs" and logs.startswith(v["target"] + "/") for v in k6["volumes"])
    files = [s for s in out["streams"] if "filename" in s]
    assert files == [{"filename": "/var/log/tbs-k6/runs/20261125-101010-ab12.log", "service": "k6-run",
                      "mode": "compose", "testid": "20261125-101010-ab12"}], files
    assert logs == "/var/log/tbs-k6/runs"
    streams = [s for s in out["streams"] if "filename" not in s]
    by_instance = {}
    for s in streams:
        assert s["mode"] == "compose" and s["stream"] == "stdout", s
        by_instance.setdefault(s["instance"], []).append(s)
    shipped = {n for n in m["services"] if re.fullmatch(r"(pd|tikv|tidb|haproxy|k6)\d*", n)}
    assert set(by_instance) == shipped, sorted(by_instance)
    for name in shipped:
        component = re.fullmatch(r"(pd|tikv|tidb|haproxy|k6)\d*", name).group(1)
        expected = 2 if name == "k6" else 1  # the service's container and a `run` container
        assert len(by_instance[name]) == expected, by_instance[name]
        assert all(s["service"] == component for s in by_instance[name]), by_instance[name]
    assert {s["service"] for s in streams} == {"pd", "tikv", "tidb", "haproxy", "k6"}


def test_alloy_check_rejects_broken_configs(tmp_path):
    """The checker is not vacuous: misspelt attributes, dangling references, unknown relabel
    actions and syntax errors fail."""
    m = everything()
    good = (ROOT / "compose/alloy/config.alloy").read_text()
    broken = {
        "attribute": good.replace('refresh_interval = "5s"', 'refresh_intervall = "5s"', 1),
        "reference": good.replace("discovery.relabel.benchmark.output", "discovery.relabel.benchmrk.output"),
        "action": good.replace('action        = "keep"', 'action        = "kep"'),
        "syntax": good.replace("loki.write \"loki\" {", "loki.write \"loki\" {{"),
        "function": good.replace("sys.env(", "sys.envv("),
        "component": good.replace("loki.write \"loki\"", "loki.writer \"loki\""),
    }
    for what, text in broken.items():
        assert text != good, what
        f = tmp_path / f"{what}.alloy"
        f.write_text(text)
        p = run_alloy_check(f, m, tmp_path)
        assert p.returncode != 0, f"alloy-check accepted a broken config ({what})"


# ---------------------------------------------------------------------------------------
# docs
# ---------------------------------------------------------------------------------------

def test_docs_describe_the_stack_as_built():
    """docs/compose.md against the resolved model: the ports it gives are exactly the published
    ones; its `docker compose` commands name only profiles and services that exist; the
    settings it names are .env's."""
    doc = (ROOT / "docs/compose.md").read_text()
    models = {"": model(), "cluster": model("cluster"), "all": model("cluster", "k6", "k6-instances")}
    published = {int(p["published"]) for m in models.values() for s in m["services"].values()
                 for p in s.get("ports") or []}
    assert set(int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", doc)) == published
    services = set(models["all"]["services"])
    profiles = {p for s in models["all"]["services"].values() for p in s.get("profiles") or []}
    commands = re.findall(r"^\s*(?:[A-Z_]+=\S+ )*docker compose ([^#\n]*)", doc, re.M)
    assert len(commands) >= 10
    for c in commands:
        words = c.split()
        for i, w in enumerate(words):
            if w == "--profile":
                assert words[i + 1] in profiles, f"docs/compose.md: unknown profile in `docker compose {c}`"
        if words and words[0] in ("--profile",):
            words = [w for i, w in enumerate(words) if w != "--profile" and (i == 0 or words[i - 1] != "--profile")]
        if words and words[0] in ("rm", "build", "up", "run"):
            names = [w for w in words[1:] if not w.startswith("-")]
            if words[0] == "run":
                names = names[:1]
            for n in names:
                assert n in services, f"docs/compose.md: `docker compose {c}` names no service {n}"
    # the settings: .env's, or interpolated by the compose files (${VAR...})
    known = set(dotenv()) | set(re.findall(r"^# ([A-Z][A-Z0-9_]*)=", (ROOT / ".env").read_text(), re.M))
    for f in [ROOT / "compose.yaml", *sorted((ROOT / "compose").glob("*.yaml"))]:
        known |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", f.read_text()))
    for var in set(re.findall(r"\b([A-Z][A-Z0-9_]*_(?:VERSION|IMAGE|MEMORY|CONFIG|PASSWORD|USER|INSTANCES))\b", doc)):
        assert var in known, f"docs/compose.md names {var}, which neither .env nor the compose files set"
