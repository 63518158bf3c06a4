"""Kubernetes (issue 12): k8s/render-testrun's TestRuns, the static manifests of k8s/ and the
Prometheus scrape jobs for a TiDB Operator cluster, checked offline with real validators
(scripts/test-setup.d/70-k8s.sh pins them in .stack/venv-k8s):

- check-jsonschema against the openAPIV3Schema of k6-operator's TestRun CRD
  (../shared/fixtures beside the checkout, or $TBS_FIXTURES: k6-operator/k6.io_testruns.yaml), made strict (unknown fields
  rejected), with broken TestRuns as negative controls;
- kubernetes-validate --strict (Kubernetes 1.37's schemas) on the PVC, the reader pod, the RBAC
  objects, and on the runner pod k6-operator builds from a TestRun (its env, resources, volumes);
- promtool check config on the scrape jobs, whose names are the jobs our dashboards select.
"""
import copy
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, STATE

pytestmark = pytest.mark.fast

VENV = STATE / "venv-k8s" / "bin"
CRD_PATHS = [Path(os.environ.get("TBS_FIXTURES") or ROOT.parent / "shared/fixtures") / "k6-operator/k6.io_testruns.yaml"]
RENDER = ROOT / "k8s/render-testrun"
IMAGE = "registry.example.com/tidb-bench-k6:v1"


def tool(name):
    p = VENV / name
    if not p.exists():
        pytest.skip(f"{p} is missing: run scripts/test-setup.d/70-k8s.sh")
    return str(p)


def crd_file():
    for p in CRD_PATHS:
        if p.is_file():
            return p
    pytest.skip(f"k6-operator's TestRun CRD is not at {', '.join(map(str, CRD_PATHS))}")


def strict(schema):
    """The CRD's structural schema as a JSON schema that rejects unknown fields (the API server
    would prune them silently: a typo would be lost)."""
    s = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node \
                    and not node.get("x-kubernetes-preserve-unknown-fields"):
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(s)
    return s


@pytest.fixture(scope="module")
def testrun_schema(tmp_path_factory):
    crd = yaml.safe_load(crd_file().read_text())
    assert crd["spec"]["names"]["kind"] == "TestRun" and crd["spec"]["group"] == "k6.io"
    [v] = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = strict(v["schema"]["openAPIV3Schema"])
    schema["properties"]["apiVersion"] = {"const": "k6.io/v1alpha1"}
    schema["properties"]["kind"] = {"const": "TestRun"}
    schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata", "spec"})
    path = tmp_path_factory.mktemp("schema") / "testrun.json"
    path.write_text(json.dumps(schema))
    return path


def render(*args, env=None):
    e = dict(os.environ, TBS_NOW_MS="1795400000000")
    e.update(env or {})
    return subprocess.run([str(RENDER), *args], capture_output=True, text=True, timeout=60, env=e)


def docs_of(text):
    return [d for d in yaml.safe_load_all(text) if d]


def check_jsonschema(schema, doc, tmp_path, name="doc.yaml"):
    f = tmp_path / name
    f.write_text(yaml.safe_dump(doc))
    return subprocess.run([tool("check-jsonschema"), "--schemafile", str(schema), str(f)],
                          capture_output=True, text=True, timeout=120)


def kubernetes_validate(docs, tmp_path, name="k8s.yaml"):
    f = tmp_path / name
    f.write_text(yaml.safe_dump_all(docs))
    return subprocess.run([tool("kubernetes-validate"), "--strict", str(f)], capture_output=True, text=True,
                          timeout=120)


VARIANTS = [
    ["--parallelism", "1", "--testid", "one", "--", "-e", "threads=8"],
    ["--parallelism", "4", "--testid", "20261123-214500-ab12", "--separate", "--mysql-host",
     "basic-tidb.tidb-cluster.svc", "--cpu", "3500m", "--memory", "3Gi",
     "--tikv-status-addr", "basic-tikv-0.basic-tikv-peer:20180,basic-tikv-1.basic-tikv-peer:20180",
     "--pd-addr", "basic-pd-0.basic-pd-peer:2379", "--",
     "-e", "workload=oltp_read_write", "-e", "threads=150,300", "-e", "time=300", "-e", "warmup_time=60",
     "-e", "preset=tidb"],
]


@pytest.mark.parametrize("args", VARIANTS, ids=["parallelism-1", "parallelism-4"])
def test_rendered_testrun_passes_the_crd_schema(args, testrun_schema, tmp_path):
    p = render("--image", IMAGE, *args)
    assert p.returncode == 0, p.stderr
    [tr] = docs_of(p.stdout)
    r = check_jsonschema(testrun_schema, tr, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    spec = tr["spec"]
    n = int(args[1])
    assert spec["parallelism"] == n and spec["script"] == {"localFile": "/scripts/oltp.js"}
    testid = args[3]
    argv = spec["arguments"].split()
    assert argv[:4] == ["-e", f"testid={testid}", "-e", "start_at=1795400180000"]
    # no secret and no instance tag of ours: k6-operator adds --tag instance_id=<1..N> itself
    assert "mysql_password" not in spec["arguments"] and "instance_id" not in spec["arguments"]
    env = {e["name"]: e for e in spec["runner"]["env"]}
    assert env["mysql_password"]["valueFrom"]["secretKeyRef"] == {"name": "tbs-mysql", "key": "mysql_password"}
    assert env["K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM"]["value"] == "true"
    assert spec["runner"]["metadata"]["labels"]["tidb-bench-stack/testid"] == testid
    # the step profiles' addresses reach the runners as options, only where given
    given = {o.lstrip("-").replace("-", "_"): v for o, v in zip(args, args[1:]) if o in ("--tikv-status-addr", "--pd-addr")}
    assert {k: env[k]["value"] for k in ("tidb_status_addr", "tikv_status_addr", "pd_addr") if k in env} == given
    # what the image runs: k6/Dockerfile's workdir has oltp.js; results/ is the mounted volume
    assert "WORKDIR /scripts" in (ROOT / "k6/Dockerfile").read_text() and (ROOT / "k6/oltp.js").is_file()


# TPC-C (docs/tpcc.md): k6/tpcc.js on one runner, its prepare and its run each a TestRun
TPCC_VARIANTS = [
    ["--testid", "tpcc-prepare-4w", "--mysql-db", "tpcc", "--", "-e", "tpcc_command=prepare", "-e", "warehouses=4",
     "-e", "threads=4"],
    ["--testid", "tpcc-run-4w", "--mysql-host", "basic-tidb.tidb-cluster.svc", "--mysql-db", "tpcc", "--",
     "-e", "warehouses=4", "-e", "threads=4,8", "-e", "time=300", "-e", "warmup_time=60"],
]


@pytest.mark.parametrize("args", TPCC_VARIANTS, ids=["tpcc-prepare", "tpcc-run"])
def test_a_tpcc_testrun_passes_the_crd_schema(args, testrun_schema, tmp_path):
    p = render("--image", IMAGE, "--script", "tpcc.js", "--parallelism", "1", *args)
    assert p.returncode == 0, p.stderr
    [tr] = docs_of(p.stdout)
    r = check_jsonschema(testrun_schema, tr, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    spec = tr["spec"]
    assert spec["parallelism"] == 1 and spec["script"] == {"localFile": "/scripts/tpcc.js"}
    argv = spec["arguments"].split()
    # no shared start (one runner): the testid, then the TPC-C options as given
    assert argv[:2] == ["-e", f"testid={args[1]}"] and "start_at" not in spec["arguments"]
    assert argv[2:] == [x for x in args[args.index("--") + 1:] if x != "--"]
    assert "mysql_password" not in spec["arguments"]
    env = {e["name"]: e for e in spec["runner"]["env"]}
    assert env["mysql_password"]["valueFrom"]["secretKeyRef"]["key"] == "mysql_password"
    assert env["mysql_db"]["value"] == "tpcc"
    assert "results/tpcc-" in p.stdout and "merge" not in p.stdout  # one runner writes <testid>.json itself
    # the image has the script where the TestRun names it (k6/Dockerfile copies k6/*.js to /scripts)
    assert (ROOT / "k6/tpcc.js").is_file() and "COPY *.js contract.json ./" in (ROOT / "k6/Dockerfile").read_text()
    r = kubernetes_validate([runner_pod(tr, 1)], tmp_path)
    assert r.returncode == 0 and "passed for resource pod/" in r.stdout, r.stdout + r.stderr


def test_a_tpcc_testrun_gets_a_testid_of_the_launcher_and_refuses_a_split(tmp_path):
    p = render("--image", IMAGE, "--script", "tpcc.js", "--parallelism", "1", "--", "-e", "warehouses=2")
    assert p.returncode == 0, p.stderr
    [tr] = docs_of(p.stdout)
    testid = tr["spec"]["arguments"].split()[1].removeprefix("testid=")
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", testid), testid  # launch.NewTestID's shape
    for args, msg in [(["--parallelism", "2"], "k6/tpcc.js runs in one k6 process"),
                      (["--parallelism", "1", "--start-in", "60"], "leave out --start-in"),
                      (["--parallelism", "1", "--script", "prepare.js"], "invalid choice")]:
        p = render("--image", IMAGE, *(["--script", "tpcc.js"] if "--script" not in args else []), *args,
                   "--", "-e", "warehouses=2")
        assert p.returncode == 2 and msg in p.stderr and not p.stdout, (args, p.stderr)


def test_the_crd_schema_rejects_broken_testruns(testrun_schema, tmp_path):
    """Negative controls: the validation can fail."""
    [tr] = docs_of(render("--image", IMAGE, "--parallelism", "2", "--testid", "x", "--", "-e", "threads=4").stdout)
    assert check_jsonschema(testrun_schema, tr, tmp_path).returncode == 0
    broken = []
    b = copy.deepcopy(tr)
    b["spec"]["parallelism"] = "two"
    broken.append(b)
    b = copy.deepcopy(tr)
    b["spec"]["runner"]["imagePullPolicy"] = 5
    broken.append(b)
    b = copy.deepcopy(tr)
    b["spec"]["runner"]["enviroment"] = []  # a typo
    broken.append(b)
    b = copy.deepcopy(tr)
    del b["spec"]["script"]
    broken.append(b)
    for i, b in enumerate(broken):
        r = check_jsonschema(testrun_schema, b, tmp_path, f"broken{i}.yaml")
        assert r.returncode != 0, (i, r.stdout)


def runner_pod(tr, index):
    """The runner pod k6-operator makes of a TestRun (pkg/resources/jobs/runner.go): our runner
    fields in a container running `k6 run ... --tag instance_id=<index>`."""
    spec = tr["spec"]
    r = spec["runner"]
    cmd = ["k6", "run", *spec["arguments"].split(), spec["script"]["localFile"], "--address=0.0.0.0:6565",
           "--paused", "--tag", f"instance_id={index}", "--tag", f"testrun_name={tr['metadata']['name']}"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{tr['metadata']['name']}-{index}", "labels": r["metadata"]["labels"]},
            "spec": {"restartPolicy": "Never", "volumes": r["volumes"],
                     "containers": [{"name": "k6", "image": r["image"], "imagePullPolicy": r["imagePullPolicy"],
                                     "command": cmd, "env": r["env"], "resources": r["resources"],
                                     "volumeMounts": r["volumeMounts"], "ports": [{"containerPort": 6565}]}]}}


def test_runner_pods_pass_kubernetes_schemas(tmp_path):
    [tr] = docs_of(render("--image", IMAGE, *VARIANTS[1]).stdout)
    pods = [runner_pod(tr, i) for i in (1, 2, 3, 4)]
    r = kubernetes_validate(pods, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("passed for resource pod/") == 4, r.stdout
    # negative control: a bad env source fails
    bad = copy.deepcopy(pods[0])
    bad["spec"]["containers"][0]["env"][-2]["valueFrom"]["resourceFieldRef"]["resourse"] = "limits.memory"
    r = kubernetes_validate([bad], tmp_path, "bad.yaml")
    assert r.returncode != 0 and "resourse" in r.stdout + r.stderr
    # the host facts are JSON once Kubernetes has expanded $(VAR) from the earlier variables
    env = tr["spec"]["runner"]["env"]
    names = [e["name"] for e in env]
    facts = next(e["value"] for e in env if e["name"] == "TBS_HOST_FACTS")
    for ref in re.findall(r"\$\((\w+)\)", facts):
        assert names.index(ref) < names.index("TBS_HOST_FACTS"), ref
    expanded = facts.replace("$(TBS_CPU_LIMIT)", "4").replace("$(TBS_MEMORY_LIMIT_GIB)", "3") \
        .replace("$(TBS_NODE)", "node-a").replace("$(TBS_POD)", "tbs-x-1-abcde")
    assert json.loads(expanded)["cpu_cores"] == 4 and json.loads(expanded)["hostname"] == "node-a/tbs-x-1-abcde"


def test_static_manifests_pass_kubernetes_validate(tmp_path):
    files = sorted((ROOT / "k8s").rglob("*.yaml"))
    assert {f.relative_to(ROOT).as_posix() for f in files} >= {"k8s/k6/results.yaml", "k8s/prometheus/rbac.yaml"}
    for f in files:
        r = subprocess.run([tool("kubernetes-validate"), "--strict", str(f)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, (f, r.stdout, r.stderr)
        assert "Couldn't find schema" not in r.stdout + r.stderr, f
        n = len(docs_of(f.read_text()))
        assert (r.stdout + r.stderr).count(" passed for resource ") == n, r.stdout
    # negative control
    docs = docs_of((ROOT / "k8s/k6/results.yaml").read_text())
    docs[0]["spec"]["accessModes"] = "ReadWriteMany"
    assert kubernetes_validate(docs, tmp_path).returncode != 0


def test_reader_pod_image_is_the_pinned_k6_base_image():
    env = dict(re.findall(r"^(\w+)=(\S+)$", (ROOT / ".env").read_text(), re.M))
    pod = [d for d in docs_of((ROOT / "k8s/k6/results.yaml").read_text()) if d["kind"] == "Pod"][0]
    assert pod["spec"]["containers"][0]["image"] == env["K6_BASE_IMAGE"]
    claim = pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
    [tr] = docs_of(render("--image", IMAGE, "--parallelism", "2", "--", "-e", "threads=2").stdout)
    assert tr["spec"]["runner"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim


def promtool():
    for p in (ROOT / "bin/promtool", Path("/usr/bin/promtool")):
        if p.exists():
            return str(p)
    pytest.skip("promtool is missing: scripts/build prometheus (scripts/test-setup.d/40-compose.sh)")


def test_scrape_jobs_pass_promtool_and_are_the_dashboards_jobs(tmp_path):
    jobs = yaml.safe_load((ROOT / "k8s/prometheus/tidb-operator-scrape.yml").read_text())
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(yaml.safe_dump({"scrape_configs": jobs}))
    r = subprocess.run([promtool(), "check", "config", str(cfg)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    names = [j["job_name"] for j in jobs]
    # the selector config (tidbbench/selectors.py's SEL): the jobs our dashboards read
    gen = (ROOT / "tidbbench/selectors.py").read_text()
    sel = gen[gen.index("SEL = {"):gen.index("}", gen.index("SEL = {"))]
    dash_jobs = set(re.findall(r'job="(\w+)"', sel))
    # (mysqld and process are the local stack's exporters: not part of a TiDB Operator cluster)
    assert sorted(names) == ["node", "pd", "tidb", "tikv"] and set(names) <= dash_jobs
    for j in jobs[:3]:
        keep = [c for c in j["relabel_configs"]
                if c.get("source_labels") == ["__meta_kubernetes_pod_label_app_kubernetes_io_component"]]
        assert keep and keep[0]["regex"] == j["job_name"] and keep[0]["action"] == "keep"
    # negative control
    cfg.write_text(yaml.safe_dump({"scrape_configs": [dict(jobs[0], relabel_configs=[{"action": "kep"}])]}))
    r = subprocess.run([promtool(), "check", "config", str(cfg)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0


def test_render_refuses_bad_input():
    cases = [
        (["--image", IMAGE, "--parallelism", "0", "--", "-e", "threads=4"], "--parallelism 0"),
        (["--image", "registry.example.com/tidb-bench-k6:latest", "--parallelism", "2", "--", "-e", "threads=4"],
         "never latest"),
        (["--image", "tidb-bench-k6", "--parallelism", "2", "--", "-e", "threads=4"], "pinned tag"),
        (["--image", IMAGE, "--parallelism", "4", "--", "-e", "threads=2,8"], "smallest thread step"),
        (["--image", IMAGE, "--parallelism", "2", "--", "-e", "mysql_password=x", "-e", "threads=4"],
         "never an argument"),
        (["--image", IMAGE, "--parallelism", "2", "--", "-e", "threads=4", "--vus", "3"], "-e name=value"),
        (["--image", IMAGE, "--parallelism", "2", "--testid", "bad_", "--", "-e", "threads=4"], "--testid bad_"),
        (["--image", IMAGE, "--parallelism", "2", "--tikv-status-addr", "tikv-0:20180,tikv-1", "--", "-e", "threads=4"],
         "--tikv-status-addr tikv-0:20180,tikv-1: host:port, or a comma list"),
        (["--image", IMAGE, "--parallelism", "2", "--pd-addr", "http://u:pw@pd:2379", "--", "-e", "threads=4"],
         "--pd-addr (a value with user@, not shown)"),
        (["--image", IMAGE, "--parallelism", "2", "--", "-e", "pd_addr=pd:2379", "-e", "threads=4"], "set by --pd-addr"),
    ]
    for args, msg in cases:
        p = render(*args)
        assert p.returncode == 2 and msg in p.stderr and not p.stdout, (args, p.stderr)
    p = render("--parallelism", "2")
    assert p.returncode == 2 and "--image" in p.stderr
