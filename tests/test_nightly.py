"""Issue #29, nightly use, checked statically with the real tools (no night passes here): the
nightly plan loads as scripts/sweep loads it; the systemd units, rendered by deploy/systemd/install,
pass `systemd-analyze verify` without a warning (and a broken one does not); scripts/nightly and
the Kubernetes driver refuse bad input; the driver's TestRuns pass k6-operator's CRD schema and
the CronJob's objects Kubernetes' (tests/test_k8s.py's validators); compose's one-shot is wired
to the store, the target and the results. What is NOT run here: a whole night (20 minutes of
benchmark), the compose one-shot on an engine (its image is built from PyPI and a Python base
image no registry here serves) and the CronJob in a cluster (none here)."""
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import ROOT
from tidbbench.sweep import plan as planmod

from test_k8s import check_jsonschema, kubernetes_validate, testrun_schema  # noqa: F401 (a fixture)

pytestmark = pytest.mark.fast

NIGHTLY = ROOT / "scripts/nightly"
DRIVER = ROOT / "k8s/nightly/tbs-nightly"
K6_IMAGE = "registry.example.com/tidb-bench-k6:v1"


def test_the_nightly_plan_is_a_plan():
    p = planmod.load(ROOT / "plans/nightly.json")
    assert len(p["arms"]) == 2 and not any(a.get("set_global") for a in p["arms"])  # an A/A pair
    assert p["prepare"] is True and p["options"]["mysql_db"] == "sbtest_nightly"
    assert set(p["workloads"]) >= {"oltp_point_select", "oltp_read_write"}


# ------------------------------------------------------------------------------ systemd
def verify(*units):
    return subprocess.run(["systemd-analyze", "verify", *map(str, units)], capture_output=True, text=True, timeout=60)


@pytest.fixture
def units(tmp_path):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed (Debian's systemd package): the units are not verified (not counted)")
    p = subprocess.run([str(ROOT / "deploy/systemd/install"), "--dir", str(tmp_path), "--user", "root"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return tmp_path


def test_the_systemd_units_verify_cleanly(units):
    service, timer = units / "tbs-nightly.service", units / "tbs-nightly.timer"
    r = verify(service, timer)
    assert r.returncode == 0 and "ignoring" not in r.stderr and "Unknown" not in r.stderr, r.stderr
    text = service.read_text()
    assert "@ROOT@" not in text and "@USER@" not in text
    assert f"ExecStart={ROOT}/scripts/nightly --plan ${{TBS_NIGHTLY_PLAN}}" in text
    assert f"ExecStartPre={ROOT}/scripts/stack up --no-install" in text and "Type=oneshot" in text
    assert "OnCalendar=*-*-* 02:00:00 UTC" in timer.read_text() and "Persistent=true" in timer.read_text()
    cal = subprocess.run(["systemd-analyze", "calendar", "*-*-* 02:00:00 UTC"], capture_output=True, text=True)
    assert cal.returncode == 0 and "02:00:00 UTC" in cal.stdout


def test_systemd_analyze_catches_broken_units(units):
    """Negative controls: the verification can fail."""
    bad = units / "bad.service"
    bad.write_text((units / "tbs-nightly.service").read_text().replace("Type=oneshot", "Type=oneshoot"))
    assert "ignoring" in verify(bad).stderr
    bad.write_text((units / "tbs-nightly.service").read_text().replace(f"{ROOT}/scripts/nightly", "/nonexistent/nightly"))
    assert verify(bad).returncode != 0
    badt = units / "bad.timer"
    badt.write_text((units / "tbs-nightly.timer").read_text().replace("*-*-* 02:00:00 UTC", "every night"))
    assert verify(badt).returncode != 0


def test_install_refuses_an_unknown_user(tmp_path):
    p = subprocess.run([str(ROOT / "deploy/systemd/install"), "--dir", str(tmp_path), "--user", "no-such-user-tbs"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "no user 'no-such-user-tbs'" in p.stderr and not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------ scripts/nightly
@pytest.mark.parametrize("args,message", [
    (["--bogus"], "unknown option '--bogus' (valid: --plan FILE"),
    (["--plan", "plans/no-such.json"], "plan plans/no-such.json does not exist"),
    (["--threshold", "lots"], "--threshold 'lots' is not a percentage"),
    (["--conninfo", "/nonexistent/conninfo"], "no connection file /nonexistent/conninfo for the history store"),
])
def test_nightly_refuses_bad_input_before_running_anything(args, message, tmp_path):
    p = subprocess.run([str(NIGHTLY), *args], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "TBS_STATE": str(tmp_path)})
    assert p.returncode != 0 and message in p.stderr, p.stderr
    assert not (tmp_path / "nightly.lock").exists()  # nothing started


def test_nightly_runs_one_job_at_a_time(tmp_path):
    import fcntl
    conninfo = tmp_path / "c"
    conninfo.write_text("dbname=x user=y")
    with open(tmp_path / "nightly.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        p = subprocess.run([str(NIGHTLY), "--conninfo", str(conninfo)], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "TBS_STATE": str(tmp_path)})
    assert p.returncode != 0 and "another scripts/nightly runs" in p.stderr


# ------------------------------------------------------------------------------ Kubernetes
def driver(*args):
    return subprocess.run([str(DRIVER), *args], capture_output=True, text=True, timeout=60)


def test_the_drivers_testruns_pass_the_crd_schema(testrun_schema, tmp_path):  # noqa: F811
    p = driver("--dry-run", "--image", K6_IMAGE, "--parallelism", "2", "--mysql-host", "basic-tidb.tidb-cluster.svc")
    assert p.returncode == 0, p.stderr
    runs = [json.loads(line) for line in p.stdout.splitlines()]
    plan = json.loads((ROOT / "plans/nightly.json").read_text())
    assert [r["spec"]["arguments"].split()[5].split("=", 1)[1] for r in runs] == plan["workloads"]
    names = [r["metadata"]["name"] for r in runs]
    assert len(set(names)) == len(names)
    for i, tr in enumerate(runs):
        r = check_jsonschema(testrun_schema, tr, tmp_path, name=f"tr{i}.yaml")
        assert r.returncode == 0, r.stdout + r.stderr
        args = tr["spec"]["arguments"]
        assert re.match(r"-e testid=nightly-\d{8}-\d{6}-[0-9a-f]{4}-oltp-[a-z-]+ -e start_at=\d+ -e workload=oltp_\w+ -e threads=4,8", args)
        env = {e["name"]: e.get("value") for e in tr["spec"]["runner"]["env"]}
        assert env["mysql_db"] == "sbtest_nightly" and env["mysql_host"] == "basic-tidb.tidb-cluster.svc"
    # -e after -- wins over the plan's option
    p = driver("--dry-run", "--image", K6_IMAGE, "--parallelism", "2", "--", "-e", "time=300")
    assert "-e time=300" in json.loads(p.stdout.splitlines()[0])["spec"]["arguments"]
    assert "-e time=60" not in json.loads(p.stdout.splitlines()[0])["spec"]["arguments"]


@pytest.mark.parametrize("args,message", [
    (["--image", "r/k6:latest", "--parallelism", "2"], "never latest"),
    (["--image", K6_IMAGE, "--parallelism", "16"], "needs at least one thread of every step"),
    (["--image", K6_IMAGE, "--parallelism", "2", "--plan", "plans/none.json"], "plan plans/none.json does not exist"),
    (["--image", K6_IMAGE, "--parallelism", "2", "--", "-e", "mysql_password=x"], "a Secret, never an argument"),
])
def test_the_driver_refuses_bad_input(args, message):
    p = driver("--dry-run", *args)
    assert p.returncode == 2 and message in p.stderr, p.stderr


def test_the_driver_outside_a_pod_says_so(tmp_path):
    c = tmp_path / "conninfo"
    c.write_text("dbname=x user=y")
    p = driver("--image", K6_IMAGE, "--parallelism", "2", "--conninfo", str(c))
    assert p.returncode != 0 and "not in a Kubernetes pod" in p.stderr


def test_the_cronjob_passes_kubernetes_schemas(tmp_path):
    docs = [d for d in yaml.safe_load_all((ROOT / "k8s/nightly/cronjob.yaml").read_text()) if d]
    assert [d["kind"] for d in docs] == ["ServiceAccount", "Role", "RoleBinding", "CronJob"]
    r = kubernetes_validate(docs, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    cj = docs[3]["spec"]
    assert cj["schedule"] == "0 2 * * *" and cj["timeZone"] == "Etc/UTC" and cj["concurrencyPolicy"] == "Forbid"
    pod = cj["jobTemplate"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["command"] == ["/opt/tbs/k8s/nightly/tbs-nightly"] and pod["serviceAccountName"] == "tbs-nightly"
    assert {v["name"]: v for v in pod["volumes"]}["history"]["secret"]["defaultMode"] == 0o400
    assert docs[1]["rules"] == [{"apiGroups": ["k6.io"], "resources": ["testruns"], "verbs": ["create", "get", "delete"]}]
    # the driver's own flags and render-testrun's: parsed as the pod would
    args = [a for a in c["args"]]
    p = driver("--dry-run", *args)
    assert p.returncode == 0, p.stderr
    # a broken CronJob fails the same validation (negative control)
    docs[3]["spec"]["schedule"] = {"every": "night"}
    assert kubernetes_validate(docs, tmp_path, name="bad.yaml").returncode != 0


# ------------------------------------------------------------------------------ compose's one-shot
def test_composes_nightly_one_shot_is_wired():
    from composetools import dotenv, model
    env = dotenv()
    svc = model("nightly")["services"]["history-nightly"]
    assert svc["profiles"] == ["nightly"] and svc["image"] == env["NIGHTLY_IMAGE"]
    assert svc["build"]["args"] == {"K6_IMAGE": env["K6_IMAGE"], "NIGHTLY_BASE_IMAGE": env["NIGHTLY_BASE_IMAGE"]}
    assert svc["build"]["dockerfile"] == "deploy/nightly/Dockerfile"
    mounts = {v["target"]: v for v in svc["volumes"]}
    assert mounts["/opt/tbs/results"]["source"] == str(ROOT / "results")
    assert mounts["/run/secrets/history"]["source"] == "history-writer-secret" and mounts["/run/secrets/history"]["read_only"]
    assert svc["environment"]["TBS_HISTORY_CONNINFO"] == "/run/secrets/history/conninfo"
    assert svc["environment"]["mysql_password_file"] == "/run/secrets/tbs/sbtest_password"
    assert {d: v["condition"] for d, v in svc["depends_on"].items()} == {
        "tidb": "service_healthy", "prometheus": "service_healthy", "history-db": "service_healthy"}
    # the image: the scripts' own venv bootstrap, our k6 from K6_IMAGE, the pinned base; no state, binaries
    # or results in its build context
    text = (ROOT / "deploy/nightly/Dockerfile").read_text()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    assert args == {"K6_IMAGE": env["K6_IMAGE"], "NIGHTLY_BASE_IMAGE": env["NIGHTLY_BASE_IMAGE"]}
    assert "ensure_venv" in text and "COPY --from=k6 /usr/bin/k6 ./bin/k6" in text
    assert 'ENTRYPOINT ["/opt/tbs/scripts/nightly"]' in text
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".stack", "bin", "results", ".git"} <= set(ignored)
    for copied in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.M):
        for src in copied.split():
            assert list(ROOT.glob(src)), f"deploy/nightly/Dockerfile copies {src}, which does not exist"
