"""PingCAP's own dashboards for the TiDB that runs (issue 13).

Static: tidbbench/dash/pingcap.py prepares the five dashboards the TiDB module we build carries
(pkg/metrics/grafana of scripts/lib/versions.sh's TIDB_MODULE_VERSION): the datasource
placeholder becomes our uid, stable uids, our run annotations and testid variable, PingCAP's
panels untouched; every PromQL expression of theirs parses with the stack's Prometheus parser.
Compose provisions the same files of pingcap/tidb-monitor-initializer:${TIDB_VERSION}.

Live: after a real run on the local TiDB (conftest.py's shared oltp_read_write run), every
panel's queries run against Prometheus over the run's window, with the dashboards' variables
resolved as Grafana resolves them; the share of panels with data per dashboard is printed (and
recorded in docs/dashboards.md). Locally tidb-server runs
on unistore: no TiKV, PD or TiFlash, so their panels stay empty, as do panels of features a
sysbench run does not use.
"""
import json
import math
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

import dashtools as dt
from conftest import ROOT, prom_wait
from tidbbench.dash import base as generate  # annotations(): the run annotations our dashboards carry
from tidbbench.dash import pingcap

pytestmark = pytest.mark.fast

PROM = "http://127.0.0.1:9090"


def versions():
    text = (ROOT / "scripts/lib/versions.sh").read_text()
    return dict(re.findall(r"^([A-Z_]+)=(\S+)$", text, re.M))


def module_dashboards_dir():
    v = versions()["TIDB_MODULE_VERSION"]
    p = subprocess.run(["go", "mod", "download", "-json", f"github.com/pingcap/tidb@{v}"], cwd="/tmp",
                       capture_output=True, text=True, env={**os.environ, "GOFLAGS": os.environ["GOFLAGS"] + " -mod=mod", "GOSUMDB": "off"})
    assert p.returncode == 0, p.stderr
    d = os.path.join(json.loads(p.stdout)["Dir"], "pkg", "metrics", "grafana")
    assert os.path.isdir(d), d
    return d


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    src = module_dashboards_dir()
    out = tmp_path_factory.mktemp("pingcap")
    p = subprocess.run([sys.executable, "-m", "tidbbench.dash.pingcap", "--src", src, "--out", str(out),
                        "--only", ",".join(pingcap.LOCAL)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    dashes = {n: json.loads((out / f"{n}.json").read_text()) for n in pingcap.LOCAL}
    originals = {n: json.loads(open(os.path.join(src, f"{n}.json"), encoding="utf-8").read()) for n in pingcap.LOCAL}
    return out, dashes, originals


def all_panels(d):
    """Every panel (rows' nested ones and old-style rows[].panels included), rows excluded."""
    stack = list(d.get("panels", [])) + [p for r in d.get("rows", []) for p in r.get("panels", [])]
    while stack:
        p = stack.pop(0)
        stack[0:0] = p.get("panels", [])
        if p.get("type") != "row":
            yield p


def query_targets(p):
    return [t for t in p.get("targets", []) if t.get("expr") and not t.get("hide")]


def datasource_refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "datasource":
                yield v
            yield from datasource_refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from datasource_refs(v)


# ------------------------------------------------------------------------------ static
def test_prepared_like_tiup_and_operator_plus_our_annotations(prepared):
    out, dashes, originals = prepared
    assert sorted(p.name for p in out.glob("*.json")) == sorted(f"{n}.json" for n in pingcap.LOCAL)
    assert (out / ".ready").read_text().split() == pingcap.LOCAL
    ours = generate.annotations()["list"]
    for name, d in dashes.items():
        text = json.dumps(d)
        assert "${DS_" not in text and "__inputs" not in d, name
        assert d["uid"] == pingcap.uid(name) and d["title"] == pingcap.title(name)
        refs = list(datasource_refs(d))
        assert refs and all(r is None or r == {"type": "prometheus", "uid": "prometheus"} for r in refs), \
            (name, {json.dumps(r) for r in refs})
        assert d["annotations"]["list"][:len(ours)] == ours
        assert "testid" in [v["name"] for v in d["templating"]["list"]]
        assert any("tbs" in (link.get("tags") or []) for link in d["links"])
        # PingCAP's panels and queries are theirs, untouched
        before = [[t.get("expr") for t in p.get("targets", [])] for p in all_panels(originals[name])]
        after = [[t.get("expr") for t in p.get("targets", [])] for p in all_panels(d)]
        assert before == after and len(after) > 10, name


def test_their_promql_parses_with_the_stacks_parser(prepared):
    _, dashes, _ = prepared
    items, where = [], []
    for name, d in dashes.items():
        vals = {**dt.BUILTIN_STATIC, **{v["name"]: ".*" for v in d["templating"]["list"]},
                "k8s_cluster": "", "tidb_cluster": "", "__to:date:H": "12", "__to:date:m": "30"}
        for p in all_panels(d):
            for t in query_targets(p):
                items.append({"id": str(len(items)), "lang": "promql", "expr": dt.substitute(t["expr"], vals)})
                where.append(f"{name}: {p.get('title')!r}")
    res = dt.exprcheck(items)
    bad = [f"{w}: {r.get('error')}\n  {i['expr']}" for w, i, r in zip(where, items, res) if not r["ok"]]
    assert len(items) > 300
    assert not bad, f"{len(bad)} of {len(items)} do not parse:\n" + "\n".join(bad[:20])


def test_grafana_provisions_them_in_their_own_folder():
    with open(ROOT / "grafana/provisioning/dashboards/pingcap.yaml", encoding="utf-8") as f:
        [prov] = yaml.safe_load(f)["providers"]
    assert prov["folderUid"] == "tbs-pingcap" and prov["options"]["path"] == "${GRAFANA_PINGCAP_DASHBOARDS}"
    stack = (ROOT / "scripts/stack").read_text()
    assert 'GRAFANA_PINGCAP_DASHBOARDS="$STATE/grafana/pingcap"' in stack and "prepare_pingcap_dashboards" in stack


def test_compose_prepares_the_initializer_images_dashboards_of_tidb_version():
    """Two one-shot services: pingcap-dashboards-src copies /tmp/*.json of the official
    tidb-monitor-initializer image of TIDB_VERSION into a volume (no image volume: Engine 28.1),
    pingcap-dashboards prepares them for Grafana, which waits for both to exit 0. The engine
    test (tests/test_compose_engine.py) runs them for real."""
    compose = ROOT / "bin/docker-compose"
    if not compose.exists():
        pytest.fail("bin/docker-compose is missing: scripts/build compose (scripts/test-setup.d/40-compose.sh)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
    p = subprocess.run([str(compose), "config", "--format", "json"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    m = json.loads(p.stdout)
    tidb_version = re.search(r"^TIDB_VERSION=(\S+)", (ROOT / ".env").read_text(), re.M).group(1)
    copy = m["services"]["pingcap-dashboards-src"]
    assert copy["image"] == f"pingcap/tidb-monitor-initializer:{tidb_version}"
    assert copy["entrypoint"][-1] == "rm -f /src/*.json && cp /tmp/*.json /src/"  # the image keeps them in /tmp
    assert not [v for v in copy["volumes"] + m["services"]["pingcap-dashboards"]["volumes"] if v["type"] == "image"]
    [src_vol] = [v for v in copy["volumes"] if v["target"] == "/src"]
    svc = m["services"]["pingcap-dashboards"]
    assert svc["depends_on"]["pingcap-dashboards-src"]["condition"] == "service_completed_successfully"
    cmd = svc["command"]
    assert cmd[:3] == ["python3", "-m", "tidbbench.dash.pingcap"] and svc["working_dir"] == "/opt/tbs"
    src = cmd[cmd.index("--src") + 1]
    out = cmd[cmd.index("--out") + 1]
    mounts = {v["target"]: v for v in svc["volumes"]}
    assert mounts[src]["source"] == src_vol["source"] and mounts[src]["read_only"]
    pkg = mounts["/opt/tbs/tidbbench"]
    assert pkg["source"] == str(ROOT / "tidbbench") and pkg["read_only"]
    assert mounts[out]["type"] == "volume"
    g = m["services"]["grafana"]
    assert g["depends_on"]["pingcap-dashboards"]["condition"] == "service_completed_successfully"
    gpath = g["environment"]["GRAFANA_PINGCAP_DASHBOARDS"]
    gm = {v["target"]: v for v in g["volumes"]}
    assert gm[gpath]["source"] == mounts[out]["source"] and gm[gpath].get("read_only")


# ------------------------------------------------------------------------------ live


def get(path, params):
    try:
        with urllib.request.urlopen(f"{PROM}{path}?{urllib.parse.urlencode(params, doseq=True)}", timeout=30) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{params}: HTTP {e.code}: {e.read().decode()[:300]}") from None
    assert body["status"] == "success", body
    return body["data"]


def resolve_variables(d, start, end):
    """The dashboard's variables as Grafana resolves them: each query variable's label_values
    against Prometheus (empty -> ""), 'All' -> its allValue or the values as a regex."""
    vals = {"__rate_interval": "20s", "__interval": "15s", "__range": f"{int(end - start)}s",
            "__range_s": str(int(end - start)), "__to:date:H": time.strftime("%H", time.gmtime(end)),
            "__to:date:m": time.strftime("%M", time.gmtime(end)), "testid": ".*", "interval": "1m"}
    for v in d["templating"]["list"]:
        if v["type"] != "query" or v["name"] == "testid":
            if v["type"] in ("custom", "interval", "constant", "textbox"):
                vals[v["name"]] = str((v.get("current") or {}).get("value") or v.get("query", "").split(",")[0])
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = dt.LABEL_VALUES.match(q)
        assert m, (d["uid"], v["name"], q)
        params = {"start": f"{start:.0f}", "end": f"{end:.0f}"}
        if m.group("expr"):
            try:
                params["match[]"] = dt.substitute(m.group("expr"), vals)
            except KeyError:  # a variable PingCAP never defined ($kuberentes): Grafana leaves it empty
                params["match[]"] = dt.VAR_RE.sub("", m.group("expr"))
        got = get(f"/api/v1/label/{m.group('label')}/values", params)
        if v.get("includeAll"):
            vals[v["name"]] = v.get("allValue") or ("(" + "|".join(re.escape(x).replace("\\", "\\\\") for x in got) + ")" if got else "")
        else:
            vals[v["name"]] = got[0] if got else ""
    return vals


def has_data(result):
    for r in result:
        if r.get("histograms"):
            return True
        if any(not math.isnan(float(x[1])) for x in r.get("values", [])):
            return True
    return False


# Components a standalone tidb-server on unistore does not have: TiKV, PD, TiFlash, TiCDC.
LOCAL_ABSENT = re.compile(r'\b(tikv_|pd_|tiflash_|ticdc_|etcd_)|job=~?"[^"]*(tikv|pd|tiflash|ticdc)[^"]*"|instance=~"tiflash')


@pytest.fixture(scope="module")
def tidb_run(read_write_runs):
    """conftest.py's shared TiDB run (oltp_read_write, 2 then 4 threads): its window, once its
    run_end marker and the scrapes of tidb-server after it are in Prometheus."""
    m = read_write_runs[1]["tidb"]
    testid = m["testid"]
    prom_wait(f'max_over_time(k6_oltp_marker{{testid="{testid}", event="run_end"}}[1h])', bool, timeout=60)
    time.sleep(max(0.0, m["run_end"] / 1000 + 10 - time.time()))  # the last scrapes after the run
    return m["run_start"] / 1000, m["run_end"] / 1000


@pytest.mark.full
def test_share_of_official_panels_with_data_after_a_run(prepared, tidb_run, capsys):
    _, dashes, _ = prepared
    start, end = tidb_run
    start, end = start - 10, end + 10
    shares = {}
    for name, d in dashes.items():
        vals = resolve_variables(d, start, end)
        n = with_data = absent_locally = 0
        empty = []
        for p in all_panels(d):
            ts = query_targets(p)
            if not ts:
                continue
            n += 1
            ok = False
            for t in ts:
                expr = dt.substitute(t["expr"], vals)
                if has_data(get("/api/v1/query_range", {"query": expr, "start": f"{start:.0f}",
                                                         "end": f"{end:.0f}", "step": "15"})["result"]):
                    ok = True
                    break
            if ok:
                with_data += 1
            elif any(LOCAL_ABSENT.search(t["expr"]) for t in ts):
                absent_locally += 1
            else:
                empty.append(p.get("title"))
        shares[name] = (with_data, n, absent_locally, empty)
        with capsys.disabled():  # in scripts/test's output too (the README quotes these figures)
            print(f"\n{pingcap.title(name)}: {with_data} of {n} panels with data ({with_data / n:.0%}); "
                  f"{absent_locally} empty for want of TiKV, PD, TiFlash or TiCDC (none locally); of the other "
                  f"{n - absent_locally}, {with_data / (n - absent_locally):.0%} with data; "
                  f"empty: {', '.join(map(str, empty))}")
    # the two the issue names: most of what a standalone TiDB can fill has data
    for name in ("tidb", "performance_overview"):
        with_data, n, absent, empty = shares[name]
        assert n > 20 and with_data / n >= 0.2 and with_data / (n - absent) >= 0.6, (name, shares[name])
    for name, (with_data, n, absent, empty) in shares.items():
        assert with_data > 0, name


def test_grafana_server_provisions_them(prepared, tmp_path):
    """A real Grafana with grafana/provisioning and the prepared files: every PingCAP dashboard is
    provisioned by uid in its folder, with all its panels (skipped where no grafana-server is)."""
    import base64
    import shutil

    from conftest import stop_process
    from test_dashboards import free_port
    binary = shutil.which("grafana-server") or shutil.which("grafana")
    if not binary:
        pytest.skip("no grafana-server on PATH: Grafana cannot be installed on this machine, so provisioning "
                    "is not exercised (not counted); checked statically and live")
    out, dashes, _ = prepared
    home = os.environ.get("GRAFANA_HOME", "/usr/share/grafana")
    port = free_port()
    env = {**os.environ, "PROMETHEUS_URL": PROM, "LOKI_URL": "http://127.0.0.1:3100",
           "GRAFANA_DASHBOARDS": dt.DASHBOARDS_DIR, "GRAFANA_PINGCAP_DASHBOARDS": str(out),
           "GF_PATHS_PROVISIONING": str(ROOT / "grafana/provisioning"), "GF_PATHS_DATA": str(tmp_path / "data"),
           "GF_PATHS_LOGS": str(tmp_path / "logs"), "GF_SERVER_HTTP_ADDR": "127.0.0.1",
           "GF_SERVER_HTTP_PORT": str(port), "GF_SECURITY_ADMIN_PASSWORD": "tbs-test-only"}
    args = [binary, "server", "--homepath", home] if binary.endswith("/grafana") else [binary, "--homepath", home]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    auth = {"Authorization": "Basic " + base64.b64encode(b"admin:tbs-test-only").decode()}

    def get(path):
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=auth)
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.load(r)
    try:
        deadline = time.time() + 120
        for name, d in dashes.items():
            while True:
                try:
                    got = get(f"/api/dashboards/uid/{d['uid']}")
                    break
                except OSError:
                    assert proc.poll() is None and time.time() < deadline, f"{d['uid']} was not provisioned"
                    time.sleep(1)
            assert got["meta"]["provisioned"] and got["meta"]["folderUid"] == "tbs-pingcap"
            assert len(list(all_panels(got["dashboard"]))) >= len(list(all_panels(d)))
    finally:
        stop_process(proc)
