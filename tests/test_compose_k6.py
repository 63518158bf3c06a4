"""The k6 image and service of compose, Alloy's configuration (checked by bin/alloy-check
against the table of Alloy's documentation, tests/tools/alloycheck) and the docs of the compose
stack (tests/test_compose.py says how the compose files are tested)."""
import json
import os
import re
import shutil
import subprocess




from composetools import (ROOT, assert_reaches, bind_mounts, container_path, dotenv, everything,
                          model, tool)

import pytest

pytestmark = pytest.mark.fast


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
    # the step profiles' TiKV and PD (k6/lib/profiles.js): services of the model on those ports
    assert_reaches(m, env["tikv_status_addr"], "tikv_status_addr")
    assert_reaches(m, env["pd_addr"], "pd_addr")
    for addr in ("tikv2:20180", "tikv3:20180", "pd2:2379", "pd3:2379"):  # the cluster profile's, as k6.yaml says
        assert_reaches(model("cluster"), addr, "the cluster profile's members (compose/k6.yaml)")
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


@pytest.mark.full
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
    models = {"": model(), "cluster": model("cluster"), "all": model("cluster", "k6", "k6-instances", "nightly")}
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
