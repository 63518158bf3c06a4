"""The compose model (`docker compose config`, no engine): only what exists is scraped, every
scrape target, bind mount, healthcheck, published port and memory limit (tests/test_compose.py
says how the compose files are tested)."""
import re
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import yaml



from composetools import (HOST_PATHS, ONE_SHOTS, ROOT, assert_reaches, bind_mounts, container_path,
                          dotenv, everything, model)

import pytest

pytestmark = pytest.mark.fast


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
                # k6's run summaries (and the nightly one-shot's history index): git-ignored
                # output, created on the first run
                assert name in ("k6", "history-nightly") and git_ignored(ROOT / "results/some-testid.json")
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
    # (a secret's variable X comes as X__FILE: the Grafana image's entrypoint reads the file into X)
    given = set(env) | {k[:-len("__FILE")] for k in env if k.endswith("__FILE")}
    assert used and used <= given, f"provisioning uses {sorted(used - given)}, not set for grafana"


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
