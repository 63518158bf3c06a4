"""Issue 10: one runtime definition (runtime/stack.json) for both modes. The per-mode files are
generated from it (tidbbench/gen/runtime.py); the two modes' Prometheus configs (jobs, target
labels, flags), k6's remote-write settings and the log labels are equivalent, in the files and in
the running local stack and the resolved compose model."""
import copy
import json
import subprocess
import sys
import urllib.parse
import urllib.request

import yaml

from conftest import LOKI, ROOT, STATE
from tidbbench.gen import runtime as gen_runtime
from test_compose import model

import pytest

pytestmark = pytest.mark.fast

DEFN = json.loads((ROOT / "runtime/stack.json").read_text())
MODES = DEFN["modes"]
# labels only one mode can have: which compose profile a target needs
MODE_ONLY_LABELS = {"compose": {"compose_profile"}, "local": set()}


def gen(*args):
    return subprocess.run([sys.executable, "-m", "tidbbench.gen.runtime", *args], capture_output=True,
                          text=True, timeout=60)


def test_generated_files_are_the_definitions():
    p = gen("--check")
    assert p.returncode == 0, p.stderr


def test_a_changed_definition_is_drift():
    changed = copy.deepcopy(DEFN)
    changed["prometheus"]["jobs"]["tidb"]["local"]["groups"][0]["targets"] = ["127.0.0.1:10081"]
    changed["logs"]["compose"]["mysqld"] = "MySQL"
    before, after = gen_runtime.outputs(DEFN), gen_runtime.outputs(changed)
    diff = {p.relative_to(ROOT).as_posix() for p in before if before[p] != after[p]}
    assert diff == {"prometheus/targets/local/tidb.yml", "compose/alloy/config.alloy"}
    assert "(pd|tikv|tidb|haproxy|k6|mysqld)[0-9]*" in after[ROOT / "compose/alloy/config.alloy"]


def test_a_new_scrape_job_is_one_entry_of_the_definition():
    """Adding a scraped service: one job in runtime/stack.json gives every mode's scrape job
    (prometheus/prometheus.yml, each mode's targets file, Kubernetes' jobs when it has a
    `kubernetes` entry); nothing else is edited by hand."""
    changed = copy.deepcopy(DEFN)
    changed["prometheus"]["jobs"]["haproxy"] = {
        "labels": {"component": "haproxy"},
        "local": {"comment": "none here", "groups": []},
        "compose": {"comment": "HAProxy's stats", "groups": [{"targets": ["haproxy:8404"]}]},
        "kubernetes": {"comment": "HAProxy pods", "pod_app_name": "haproxy", "port": 8404}}
    before, after = gen_runtime.outputs(DEFN), gen_runtime.outputs(changed)
    diff = {p.relative_to(ROOT).as_posix() for p in after if before.get(p) != after[p]}
    assert diff == {"prometheus/prometheus.yml", "prometheus/targets/local/haproxy.yml",
                    "prometheus/targets/compose/haproxy.yml", "prometheus/targets/compose-cluster/haproxy.yml",
                    "k8s/prometheus/tidb-operator-scrape.yml"}, diff
    jobs = {j["job_name"]: j for j in yaml.safe_load(after[ROOT / "prometheus/prometheus.yml"])["scrape_configs"]}
    assert jobs["haproxy"]["file_sd_configs"] == [{"files": ["targets/haproxy.yml"]}]
    k8s = {j["job_name"]: j for j in yaml.safe_load(after[ROOT / "k8s/prometheus/tidb-operator-scrape.yml"])}
    assert k8s["haproxy"]["relabel_configs"][0]["regex"] == "haproxy"
    # the Kubernetes jobs are the definition's jobs with a `kubernetes` entry
    now = yaml.safe_load((ROOT / "k8s/prometheus/tidb-operator-scrape.yml").read_text())
    assert [j["job_name"] for j in now] == [j for j, s in DEFN["prometheus"]["jobs"].items() if "kubernetes" in s]


def targets(mode):
    """job -> [target group] as Prometheus reads prometheus/targets/<mode>/."""
    return {f.stem: yaml.safe_load(f.read_text()) for f in sorted((ROOT / f"prometheus/targets/{mode}").glob("*.yml"))}


def scrape_jobs():
    cfg = yaml.safe_load((ROOT / "prometheus/prometheus.yml").read_text())
    return {sc["job_name"]: sc for sc in cfg["scrape_configs"]}


def test_both_modes_scrape_the_same_jobs_with_the_same_labels():
    jobs = scrape_jobs()
    for sc in jobs.values():  # every job reads its own targets file, the same in both modes
        assert sc["file_sd_configs"] == [{"files": [f"targets/{sc['job_name']}.yml"]}]
    per_mode = {m: targets(m) for m in MODES}
    for m in MODES:
        assert set(per_mode[m]) == set(jobs), (m, set(per_mode[m]) ^ set(jobs))
    for job in jobs:
        keys, values = {}, {}
        for m in MODES:
            groups = per_mode[m][job]
            for g in groups:
                assert g["targets"] and g["labels"]["stack"] == m
            keys[m] = {frozenset(set(g["labels"]) - MODE_ONLY_LABELS[m]) for g in groups}
            values[m] = {(k, v) for g in groups for k, v in g["labels"].items()
                         if k not in ("stack", "host") and k not in MODE_ONLY_LABELS[m]}
        present = [m for m in MODES if per_mode[m][job]]
        # where both modes have targets, the same label names and the same values (component, role)
        if len(present) == 2:
            assert keys["local"] == keys["compose"], (job, keys)
            assert values["local"] == values["compose"], (job, values)
    # what each mode has, by design: no TiKV/PD locally (unistore), no MariaDB in compose
    assert not per_mode["local"]["tikv"] and not per_mode["local"]["pd"]
    assert not per_mode["compose"]["mysqld"] and not per_mode["compose"]["process"]


def test_compose_prometheus_runs_with_the_definitions_flags():
    cmd = model()["services"]["prometheus"]["command"]
    own = [a for a in cmd if a.startswith(("--web.enable", "--enable-feature"))]
    assert own == DEFN["prometheus"]["flags"]


def proc_cmdline(pidfile):
    pid = int((STATE / "run" / pidfile).read_text())
    return (ROOT / f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


@pytest.mark.full
def test_local_prometheus_runs_with_the_definitions_flags(stack):
    cmd = proc_cmdline("prometheus.pid")
    assert "prometheus" in cmd[0]
    own = [a for a in cmd if a.startswith(("--web.enable", "--enable-feature"))]
    assert own == DEFN["prometheus"]["flags"]


def k6_env(mode):
    p = gen("--k6-env", mode)
    assert p.returncode == 0, p.stderr
    return dict(line.split("=", 1) for line in p.stdout.splitlines())


@pytest.mark.full
def test_k6_remote_write_is_the_same_in_both_modes_with_the_contracts_push_interval(stack):
    push = json.loads((ROOT / "k6/contract.json").read_text())["timing"]["push_interval_s"]
    local, compose = k6_env("local"), k6_env("compose")
    assert local["K6_PROMETHEUS_RW_PUSH_INTERVAL"] == compose["K6_PROMETHEUS_RW_PUSH_INTERVAL"] == f"{push}s"
    assert {k: v for k, v in local.items() if k != "K6_PROMETHEUS_RW_SERVER_URL"} == \
        {k: v for k, v in compose.items() if k != "K6_PROMETHEUS_RW_SERVER_URL"}
    # what the local stack wrote for scripts/k6, and what compose's k6 services get
    written = dict(line.split("=", 1) for line in (STATE / "k6.env").read_text().splitlines()
                   if line and not line.startswith("#"))
    assert {k: written.get(k) for k in local} == local
    m = model("k6", "k6-instances")["services"]
    for svc in ("k6", "k6-instance"):
        env = m[svc]["environment"]
        assert {k: env.get(k) for k in compose} == compose, svc


def otelcol_config():
    return yaml.safe_load((ROOT / "otelcol/local.yaml").read_text())


def test_log_labels_are_the_same_in_both_modes():
    labels = set(DEFN["logs"]["labels"])
    runs, file_label = DEFN["logs"]["runs"], DEFN["logs"]["file_label"]
    # local: the collector's file receivers set the labels as resource attributes, one receiver
    # (one file) per service, and each line's file path as the file label
    oc = otelcol_config()
    recv = oc["receivers"]
    services = {k: v for k, v in recv.items() if k != "file_log/" + runs["service"]}
    assert [r["resource"]["service"] for r in services.values()] == list(DEFN["logs"]["local"])
    move = {"type": "move", "from": 'attributes["log.file.path"]', "to": f'resource["{file_label}"]'}
    for name, r in services.items():
        svc = r["resource"]["service"]
        assert name == f"file_log/{svc}" and set(r["resource"]) == labels and r["resource"]["mode"] == "local"
        assert r["include"] == ["${env:STACK_LOGS}/" + svc + ".log"] and r["include_file_path"] is True
        assert r["operators"] == [move], name
    assert oc["service"]["pipelines"]["logs"]["receivers"] == list(recv)
    # Loki indexes exactly those resource attributes as labels (besides its OpenTelemetry defaults)
    loki = yaml.safe_load((ROOT / "loki/loki.yaml").read_text())
    [index] = loki["limits_config"]["otlp_config"]["resource_attributes"]["attributes_config"]
    assert index == {"action": "index_label", "attributes": [*DEFN["logs"]["labels"], runs["label"], file_label]}
    assert oc["exporters"]["otlp_http/loki"] == {
        "logs_endpoint": f"http://127.0.0.1:{DEFN['ports']['local']['loki']}/otlp/v1/logs"}
    # compose: Alloy sets service by rule and mode as a fixed label
    alloy = (ROOT / "compose/alloy/config.alloy").read_text()
    assert 'target_label  = "service"' in alloy and 'labels           = {mode = "compose"}' in alloy
    services = "|".join(DEFN["logs"]["compose"])
    assert alloy.count(f'regex         = "({services})[0-9]*"') == 2
    # the services both modes run log under the same service name
    assert {"tidb", "k6"} <= set(DEFN["logs"]["local"]) & set(DEFN["logs"]["compose"])
    # a k6 run's own lines: one file per testid, the same service and label in both modes
    run = recv["file_log/" + runs["service"]]
    assert run["resource"] == {"service": runs["service"], "mode": "local"}
    assert run["include"] == ["${env:STACK_LOGS}/" + runs["local"] + "/*.log"]
    assert run["operators"] == [move, {"type": "regex_parser", "parse_from": f'resource["{file_label}"]',
                                       "regex": f"/(?P<{runs['label']}>[^/]+)\\.log$", "parse_to": "resource"}]
    assert f'path_targets = [{{"__path__" = "{runs["compose"]}/*.log", "service" = "{runs["service"]}", ' \
           '"mode" = "compose"}]' in alloy
    assert model("k6")["services"]["k6"]["environment"]["TBS_RUN_LOGS"] == runs["compose"]


@pytest.mark.full
def test_the_collector_accepts_its_generated_config(tmp_path):
    """bin/otelcol (scripts/build otelcol) loads otelcol/local.yaml with every component it names,
    and refuses a key its receiver does not have (so the check can fail)."""
    binary = ROOT / "bin/otelcol"
    assert binary.exists(), "no bin/otelcol: run scripts/build otelcol"
    env = {"PATH": "/usr/bin:/bin", "STACK_LOGS": str(tmp_path / "logs"), "OTELCOL_DATA": str(tmp_path / "data")}

    def validate(config):
        return subprocess.run([str(binary), "validate", f"--config={config}"], capture_output=True, text=True,
                              timeout=60, env=env)
    p = validate(ROOT / "otelcol/local.yaml")
    assert p.returncode == 0, p.stdout + p.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "otelcol/local.yaml").read_text().replace("include_file_path:", "include_file_paths:", 1))
    p = validate(bad)
    assert p.returncode != 0 and "include_file_paths" in p.stdout + p.stderr, p.stdout + p.stderr


@pytest.mark.full
def test_local_logs_arrive_with_the_definitions_labels(stack):
    with urllib.request.urlopen(f"{LOKI}/loki/api/v1/labels", timeout=10) as r:
        names = set(json.load(r)["data"])
    assert set(DEFN["logs"]["labels"]) <= names
    import time
    q = urllib.parse.urlencode({"match[]": '{mode="local"}', "start": str(int((time.time() - 86400) * 1e9))})
    with urllib.request.urlopen(f"{LOKI}/loki/api/v1/series?{q}", timeout=10) as r:
        series = json.load(r)["data"]
    seen = {s["service"] for s in series}
    # TiDB logs all the time; every stream is a service the definition lists
    assert "tidb" in seen and seen <= set(DEFN["logs"]["local"]) | {DEFN["logs"]["runs"]["service"]}, seen


@pytest.mark.full
def test_a_runs_k6_lines_arrive_with_its_testid(stack):
    """scripts/k6 writes a run's lines to logs/k6-runs/<testid>.log too; the collector ships them
    as service k6-run with the label testid, which the Logs dashboard's run panel selects on."""
    import time
    from conftest import fresh_db, k6
    testid = "logs-" + time.strftime("%H%M%S") + "-" + str(time.time_ns() % 100000)
    small = ["-e", "tables=1", "-e", "table_size=100", "-e", "mysql_db=" + fresh_db("tidb", "sbtest_logs")]
    k6("run", *small, "prepare.js")
    k6("run", *small, "-e", "threads=1", "-e", "time=1", "-e", f"testid={testid}", "oltp.js")
    runs = DEFN["logs"]["runs"]
    q = urllib.parse.urlencode({"query": f'{{service="{runs["service"]}", {runs["label"]}="{testid}"}}',
                                "start": str(int((time.time() - 600) * 1e9)), "limit": "1000"})
    lines = []
    for _ in range(30):  # the collector's poll (200 ms) and push
        with urllib.request.urlopen(f"{LOKI}/loki/api/v1/query_range?{q}", timeout=10) as r:
            lines = [v[1] for st in json.load(r)["data"]["result"] for v in st["values"]]
        if any(f"testid={testid}" in line for line in lines):
            break
        time.sleep(1)
    assert any(f"testid={testid}" in line for line in lines), lines[:5]
    path = STATE / "logs" / runs["local"] / f"{testid}.log"
    assert path.is_file()
    # the stream's index labels are the ones the log shipper gives it (as promtail did): the
    # definition's, the testid, the file's path, and service_name, which Loki derives from service
    q = urllib.parse.urlencode({"match[]": f'{{{runs["label"]}="{testid}"}}',
                                "start": str(int((time.time() - 600) * 1e9))})
    with urllib.request.urlopen(f"{LOKI}/loki/api/v1/series?{q}", timeout=10) as r:
        series = json.load(r)["data"]
    assert series == [{"service": runs["service"], "mode": "local", runs["label"]: testid,
                       DEFN["logs"]["file_label"]: str(path), "service_name": runs["service"]}], series


def test_grafana_gets_the_same_settings_in_both_modes():
    shared = DEFN["grafana"]["env"]
    env = model()["services"]["grafana"]["environment"]
    assert {k: env.get(k) for k in shared} == shared
    p = gen("--grafana-env")
    assert p.returncode == 0 and dict(line.split("=", 1) for line in p.stdout.splitlines()) == shared
    # scripts/stack exports exactly these before its own (addresses, paths, the admin password)
    stack = (ROOT / "scripts/stack").read_text()
    start = stack[stack.index("start_grafana() {"):]
    start = start[:start.index("\n}\n")]
    assert "tbs_py tidbbench.gen.runtime --grafana-env" in start
    assert not [k for k in shared if k in start], "scripts/stack sets a shared Grafana setting itself"


def test_ports_are_one_set_for_both_modes():
    local = DEFN["ports"]["local"]
    # every local scrape target is a service port of the definition
    for job, groups in targets("local").items():
        for g in groups:
            for t in g["targets"]:
                host, port = t.rsplit(":", 1)
                assert host == "127.0.0.1" and int(port) in local.values(), (job, t)
    # compose publishes the services both modes have on the same ports
    m = model("cluster", "k6")["services"]
    both = 0
    for name, svc in m.items():
        key = name.replace("-", "_")
        for p in svc.get("ports") or []:
            if key in local:
                both += 1
                assert int(p["published"]) in (local[key], local.get(key + "_status")), (name, p)
    assert both >= 4  # tidb, prometheus, loki, grafana


@pytest.mark.full
def test_the_local_services_listen_on_the_definitions_ports(stack):
    import socket
    for svc in ("tidb", "tidb_status", "mariadb", "prometheus", "loki", "node_exporter", "otelcol",
                "mysqld_exporter", "process_exporter", "history_db"):
        with socket.create_connection(("127.0.0.1", DEFN["ports"]["local"][svc]), timeout=5):
            pass
