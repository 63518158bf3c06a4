"""Helpers of the compose tests (test_compose.py, test_compose_model.py, test_compose_k6.py):
the real tools (bin/docker-compose built from the Go module proxy, bin/loki, bin/tidb-server,
bin/alloy-check, promtool and haproxy from Debian; scripts/test-setup.d/40-compose.sh makes
them), the compose model as `docker compose config` gives it, and what a service listens on,
mounts and reaches."""
import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlparse




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
                    "pingcap-dashboards-src", "pingcap-dashboards",
                    "history-db"}  # the run history's team store (compose/history.yaml)
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
    return model("cluster", "k6", "nightly")


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
