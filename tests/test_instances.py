"""One run split over several k6 processes (issue 12): `scripts/k6 run --instances N`, the merge
(tidbbench/merge.py) and the report's load generators.

- on the local stack: 3 k6 instances against the local TiDB (tables prepared in the test's own
  database): per-step totals in Prometheus, in the merged results and in the report equal the
  sum of the three instances' own files; the merged p95 equals sysbench's nearest rank over the
  summed histograms (computed here independently) and agrees with Prometheus' histogram over
  every event; one set of run and step markers in Prometheus; the report lists the instances;
- one instance killed (SIGKILL) in the middle of the second step: the launcher exits non-zero,
  the merged results and the report name it and from when, and the figures are those of the
  instances that finished (Prometheus' all-instance totals are larger: nothing of the dead one
  is counted);
- offline: the merge of k6-operator-style files (instance_id 1..N, segments 0:1/N ...), whose
  p95 equals the nearest rank over all the events; bad input refused before anything starts.
"""
import json
import math
import os
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, fresh_db, k6, prom, prom_wait
from test_report_helpers import md_tables_after, run_report

from tidbbench import merge as M
from tidbbench.k6env import read_k6_env

pytestmark = pytest.mark.fast

RESULTS = ROOT / "results"
DB = "sbtest_instances"
THREADS = [3, 6]
TIME = 6
COMMON = ["-e", f"mysql_db={DB}", "-e", "tables=2", "-e", "table_size=5000", "-e", "threads=3,6", "-e", f"time={TIME}"]
# Prometheus' native histogram (schema 3) against sysbench's buckets (factor exp(1/mult))
P95_TOLERANCE = 2 ** (2 ** -3) * math.exp(1 / M.RANGE_MULT) * 1.01


def sysbench_p(counts, p):
    """sysbench 1.0.20's sb_histogram_get_pct, written again here (not merge.py's)."""
    total = sum(counts.values())
    nmax = math.floor(total * p / 100 + 0.5)
    mult = 1023 / (math.log(100000) - math.log(0.001))
    run = 0
    for i in range(1024):
        run += counts.get(i, 0)
        if run >= nmax:
            return math.exp(i / mult + math.log(0.001))
    raise AssertionError("histogram shorter than its count")


def files_of(testid):
    out = {}
    for p in RESULTS.glob(f"{testid}.instance-*.json"):
        d = json.loads(p.read_text())
        out[str(d["instance"]["id"])] = d
    return out


def step(doc, t):
    return next(s for s in doc["steps"] if s["threads"] == t)


def prom_total(testid, s, extra=""):
    w = s["window"]
    at = (w["measure_end"] + 6000) / 1000
    rng = int(w["measure_end"] + 6000 - w["measure_start"])
    sel = f'testid="{testid}",threads="{s["threads"]}",warmup="false"{extra}'
    r = prom(f"sum(max_over_time(k6_oltp_queries_total{{{sel}}}[{rng}ms]))", at)
    return float(r[0]["value"][1]) if r else 0.0


def launch(testid, *extra):
    return subprocess.Popen([str(ROOT / "scripts/k6"), "run", "--instances", "3", "-e", f"testid={testid}", *COMMON,
                             *extra, "oltp.js"], cwd=ROOT / "k6", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


@pytest.fixture(scope="module")
def tables(stack):
    fresh_db("tidb", DB)
    k6("run", "-e", f"mysql_db={DB}", "-e", "tables=2", "-e", "table_size=5000", "-e", "threads=2", "prepare.js")
    return DB


@pytest.fixture(scope="module")
def split_run(tables):
    testid = f"inst-{int(time.time())}-ok"
    p = launch(testid)
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out[-5000:]
    return testid, out


@pytest.fixture(scope="module")
def killed_run(tables, split_run):
    testid = f"inst-{int(time.time())}-kill"
    p = launch(testid)
    pidfile = RESULTS / f".{testid}.instance-1.pid"
    deadline = time.time() + 120
    while not pidfile.exists() and time.time() < deadline and p.poll() is None:
        time.sleep(0.2)
    pid = int(pidfile.read_text())
    # once instance 1 is busy in the 6-thread step, kill it
    prom_wait(f'sum(k6_oltp_queries_total{{testid="{testid}",threads="6",warmup="false",instance_id="1"}})',
              lambda r: r and float(r[0]["value"][1]) > 0, timeout=120)
    time.sleep(1.5)
    killed_at = time.time() * 1000
    os.kill(pid, signal.SIGKILL)
    out, _ = p.communicate(timeout=300)
    return testid, p.returncode, out, killed_at


# ---------------------------------------------------------------- 3 instances, all finish

@pytest.mark.full
def test_merged_totals_are_the_sum_of_the_instance_files(split_run):
    testid, out = split_run
    files = files_of(testid)
    assert sorted(files) == ["0", "1", "2"], out[-3000:]
    merged = json.loads((RESULTS / f"{testid}.json").read_text())
    assert [s["threads"] for s in merged["steps"]] == THREADS
    assert [e["id"] for e in merged["instances"]] == ["0", "1", "2"]
    assert all(e["status"] == "complete" and e["exit_status"] == 0 for e in merged["instances"])
    assert not merged.get("interrupted")
    for t in THREADS:
        ms = step(merged, t)
        parts = [step(d, t) for d in files.values()]
        for k in ("read", "write", "other", "total"):
            assert ms["queries"][k] == sum(s["queries"][k] for s in parts), (t, k)
        for k in ("transactions", "errors", "reconnects"):
            assert ms[k] == sum(s[k] for s in parts), (t, k)
        assert ms["queries"]["total"] > 300
        assert ms["elapsed_s"] == max(s["elapsed_s"] for s in parts)
        assert ms["qps"] == pytest.approx(ms["queries"]["total"] / ms["elapsed_s"], rel=1e-12)
        assert ms["histogram"]["count"] == sum(s["histogram"]["count"] for s in parts)
        assert ms["latency_ms"]["min"] == min(s["latency_ms"]["min"] for s in parts)
        assert ms["latency_ms"]["max"] == max(s["latency_ms"]["max"] for s in parts)
        # k6 split every step's threads over the three (3 -> 1+1+1, 6 -> 2+2+2)
        assert sum(s.get("vus_ready", t // 3) for s in parts) == t
    print(f"{testid}: " + ", ".join(f"{t} threads {step(merged, t)['qps']:.1f} QPS" for t in THREADS))


@pytest.mark.full
def test_merged_p95_from_the_summed_histograms(split_run):
    testid, _ = split_run
    files = files_of(testid)
    merged = json.loads((RESULTS / f"{testid}.json").read_text())
    for t in THREADS:
        counts = {}
        for d in files.values():
            for i, c in step(d, t)["histogram"]["counts"]:
                counts[i] = counts.get(i, 0) + c
        ms = step(merged, t)
        for p in (50, 95, 99):
            assert ms["latency_ms"][f"p{p}"] == pytest.approx(sysbench_p(counts, p), rel=1e-12), (t, p)
        # Prometheus' histogram of every event of the three processes agrees within the two
        # histograms' resolutions
        w = ms["window"]
        at = (w["measure_end"] + 6000) / 1000
        rng = int(w["measure_end"] + 6000 - w["measure_start"])
        sel = f'testid="{testid}",threads="{t}",warmup="false"'
        r = prom(f"histogram_quantile(0.95, sum(last_over_time(k6_oltp_latency_seconds{{{sel}}}[{rng}ms])))", at)
        if r:  # the contract's native histogram (when the run writes one)
            pp95 = float(r[0]["value"][1]) * 1000
            ratio = max(pp95, ms["latency_ms"]["p95"]) / min(pp95, ms["latency_ms"]["p95"])
            assert ratio <= P95_TOLERANCE, (t, pp95, ms["latency_ms"]["p95"])


@pytest.mark.full
def test_prometheus_totals_equal_the_files(split_run):
    testid, _ = split_run
    files = files_of(testid)
    merged = json.loads((RESULTS / f"{testid}.json").read_text())
    for t in THREADS:
        ms = step(merged, t)
        assert prom_total(testid, ms) == ms["queries"]["total"], t
        for i, d in files.items():
            assert prom_total(testid, ms, f',instance_id="{i}"') == step(d, t)["queries"]["total"], (t, i)


@pytest.mark.full
def test_one_set_of_markers(split_run):
    testid, _ = split_run
    for event in ("run_start", "run_end"):
        r = prom(f'count(last_over_time(k6_oltp_marker{{testid="{testid}",event="{event}"}}[1h]))')
        assert r and float(r[0]["value"][1]) == 1, (event, r)
    for t in THREADS:
        for event in ("step_start", "measure_start", "measure_end"):
            r = prom(f'count(last_over_time(k6_oltp_marker{{testid="{testid}",threads="{t}",event="{event}"}}[1h]))')
            assert r and float(r[0]["value"][1]) == 1, (t, event, r)


@pytest.mark.full
def test_report_of_the_split_run(split_run, tmp_path):
    testid, _ = split_run
    merged = json.loads((RESULTS / f"{testid}.json").read_text())
    p = run_report("--out", str(tmp_path / "r"), testid, env={"GRAFANA_URL": ""})
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    [table] = md_tables_after(md, "### Point Select performance")[:1]
    rows = {int(r[0]): float(r[1]) for r in table[1:]}
    for t in THREADS:
        assert rows[t] == pytest.approx(step(merged, t)["qps"], abs=0.006), t
    # the instances table follows its sentence (the host-disturbance table's rows start with the testid too)
    tail = md.split("Each split run's k6 instances", 1)[1]
    inst = [line for line in tail.split("\n\n", 2)[1].splitlines() if line.startswith(f"| {testid} | ")]
    assert [line.split(" | ")[1] for line in inst] == ["0", "1", "2"], md
    assert all("| 3, 6 | 0 |" in line for line in inst)
    assert "did not finish" not in md


def cpu_busy(testid, s, inst):
    """k6's CPU seconds per second in a step's measured window, from Prometheus."""
    w = s["window"]
    rng = int(w["measure_end"] - w["measure_start"])
    r = prom(f'increase(k6_oltp_client_cpu_seconds_total{{testid="{testid}",instance_id="{inst}"}}[{rng}ms])',
             w["measure_end"] / 1000)
    return float(r[0]["value"][1]) / (rng / 1000)


@pytest.mark.full
def test_report_warns_when_a_load_generator_was_cpu_saturated(split_run, tmp_path):
    """The real run's CPU figures against the instances' usable cores: with the cores they had
    (2, GOMAXPROCS=1) no warning; the same figures with instance 0's usable cores set just under
    what it used in the 6-thread step (a smaller load generator, doctored in a copy of the
    manifest) warn about exactly that instance and step. Instance 0's figure comes from
    Prometheus; an instance without the series falls back to its summary's client_cpu_s."""
    testid, _ = split_run
    merged = json.loads((RESULTS / f"{testid}.json").read_text())
    p = run_report("--out", str(tmp_path / "r"), testid, env={"GRAFANA_URL": ""})
    assert p.returncode == 0 and "load generator saturated" not in p.stderr, p.stderr
    busy = {t: cpu_busy(testid, step(merged, t), "0") for t in THREADS}
    assert 0 < busy[6] < 0.9, busy
    md = (tmp_path / "r" / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith(f"| {testid} | 0 |"))
    assert row.endswith(f"| 3: {busy[3]:.2f}, 6: {busy[6]:.2f} |"), (row, busy)
    for e in merged["instances"]:
        row = next(line for line in md.splitlines() if line.startswith(f"| {testid} | {e['id']} |"))
        assert "| 3: " in row and ", 6: " in row, row
    doctored = tmp_path / "results"
    doctored.mkdir()
    facts = merged["instances"][0]["load_generator"]
    facts["gomaxprocs"] = busy[6] / 0.95
    (doctored / f"{testid}.json").write_text(json.dumps(merged))
    p = run_report("--results", str(doctored), "--out", str(tmp_path / "d"), testid, env={"GRAFANA_URL": ""})
    assert p.returncode == 0, p.stderr
    warn = [line for line in p.stderr.splitlines() if "load generator saturated" in line]
    assert warn and all(f"instance 0 on {facts['hostname']}" in w for w in warn), p.stderr
    assert any("during the 6-thread step" in w and f"k6 used {busy[6]:.2f} CPU seconds per second" in w
               and "Prometheus" in w for w in warn), warn
    assert f"instance 0 on {facts['hostname']}: k6 used {busy[6]:.2f}" in (tmp_path / "d" / "report.md").read_text()


@pytest.mark.full
def test_every_instance_reports_its_cpu_to_prometheus(split_run):
    """docs/CONTRACT.md: k6_oltp_client_cpu_seconds_total per process (instance_id)."""
    testid, _ = split_run
    merged = json.loads((RESULTS / f"{testid}.json").read_text())
    s = step(merged, 6)
    rng = int(merged["run_end"] - merged["run_start"]) + 10000
    r = prom(f'count by (instance_id) '
             f'(count_over_time(k6_oltp_client_cpu_seconds_total{{testid="{testid}"}}[{rng}ms]))',
             (merged["run_end"] + 5000) / 1000)
    assert sorted(x["metric"]["instance_id"] for x in r) == ["0", "1", "2"], (s["threads"], r)


# ---------------------------------------------------------------- one instance dies

@pytest.mark.full
def test_killed_instance_fails_the_launcher_and_is_named(killed_run):
    testid, rc, out, killed_at = killed_run
    assert rc == 137, out[-3000:]
    assert "instance 1 exited with status 137" in out
    merged = json.loads((RESULTS / f"{testid}.json").read_text())
    assert merged["interrupted"] is True
    e = {x["id"]: x for x in merged["instances"]}
    assert e["0"]["status"] == e["2"]["status"] == "complete"
    dead = e["1"]
    assert dead["status"] == "failed" and dead["exit_status"] == 137 and dead["file"] is None
    assert dead["missing_from"]["no_file"] and dead["missing_from"]["threads"] == 6
    assert abs(dead["missing_from"]["at"] - killed_at) < 5000
    assert "warning: instance 1 (1/3:2/3) did not finish (exit status 137)" in out
    assert "during the 6-thread step" in out


@pytest.mark.full
def test_killed_run_figures_are_those_of_the_instances_that_ran(killed_run, tmp_path):
    testid, _, _, _ = killed_run
    files = files_of(testid)
    assert sorted(files) == ["0", "2"]
    merged = json.loads((RESULTS / f"{testid}.json").read_text())
    for t in THREADS:
        ms = step(merged, t)
        assert ms["instances"] == ["0", "2"]
        assert ms["queries"]["total"] == sum(step(d, t)["queries"]["total"] for d in files.values())
        assert prom_total(testid, ms, ',instance_id=~"0|2"') == ms["queries"]["total"]
        # the dead instance's queries are in Prometheus, and counted nowhere
        assert prom_total(testid, ms) > ms["queries"]["total"]
    p = run_report("--out", str(tmp_path / "r"), testid, env={"GRAFANA_URL": ""})
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    rows = {int(r[0]): float(r[1]) for r in md_tables_after(md, "### Point Select performance")[0][1:]}
    for t in THREADS:
        assert rows[t] == pytest.approx(step(merged, t)["qps"], abs=0.006), t
    assert "instance 1 (1/3:2/3) did not finish (exit status 137)" in md
    assert "during the 6-thread step" in md and "instance 1 (1/3:2/3) did not finish" in p.stderr
    when = M.utc(merged["instances"][1]["missing_from"]["at"])
    assert f"it ended at {when}" in md


# ---------------------------------------------------------------- offline

def synthetic(testid, ids, n, steps_of, rng):
    """k6-operator-style instance files (instance_id 1..n, segments 0:1/n ... (n-1)/n:1) from
    random events; -> ({id: doc}, {threads: [every event's latency]})."""
    events = {}
    docs = {}
    for pos in ids:
        seg = f"{'0' if pos == 0 else f'{pos}/{n}'}:{'1' if pos + 1 == n else f'{pos + 1}/{n}'}"
        steps = []
        for k, t in enumerate(steps_of(pos)):
            ev = [rng.lognormvariate(0, 1.2) for _ in range(rng.randrange(500, 3000))]
            events.setdefault(t, []).extend(ev)
            c = {}
            for v in ev:
                c[M.bucket(v)] = c.get(M.bucket(v), 0) + 1
            steps.append({"threads": t, "seconds": 5, "elapsed_s": 5 + rng.random() / 100,
                          "queries": {"read": len(ev), "write": 0, "other": len(ev), "total": 2 * len(ev)},
                          "transactions": len(ev), "errors": 1, "reconnects": 0,
                          "histogram": {"scheme": "sysbench", "buckets": 1024, "min_ms": 0.001, "max_ms": 100000,
                                        "count": len(ev), "sum_ms": sum(ev), "min": min(ev), "max": max(ev),
                                        "counts": [[b, c[b]] for b in sorted(c)]},
                          "window": {"step_start": 10000 * k, "measure_start": 10000 * k,
                                     "measure_end": 10000 * k + 5000}})
        docs[pos + 1] = (Path(f"{testid}.instance-{pos + 1}.json"),
                         {"testid": testid, "workload": "oltp_read_only", "options": {"threads": [4, 8], "time": 5},
                          "instance": {"id": str(pos + 1), "segment": seg, "sequence": "0,1/4,1/2,3/4,1"},
                          "load_generator": {"hostname": f"runner-{pos + 1}", "cpu_cores": 2}, "steps": steps})
    return docs, events


def test_merge_of_k6_operator_files_matches_all_events():
    rng = random.Random(12)
    docs, events = synthetic("op", range(4), 4, lambda pos: [4, 8], rng)
    m = M.merge("op", docs)
    assert [e["id"] for e in m["instances"]] == ["1", "2", "3", "4"]
    for t in (4, 8):
        s = step(m, t)
        every = {}
        for v in events[t]:
            every[M.bucket(v)] = every.get(M.bucket(v), 0) + 1
        assert s["histogram"]["count"] == len(events[t])
        assert s["latency_ms"]["p95"] == sysbench_p(every, 95)
        assert s["latency_ms"]["max"] == max(events[t]) and s["latency_ms"]["min"] == min(events[t])
        assert s["queries"]["total"] == 2 * len(events[t]) and s["errors"] == 4
    # an instance without the 8-thread step and one without a file: named, not counted
    docs, events = synthetic("op2", [0, 1, 3], 4, lambda pos: [4] if pos == 1 else [4, 8], rng)
    m = M.merge("op2", docs)
    e = {x["id"]: x for x in m["instances"]}
    assert e["2"]["missing_from"]["threads"] == 8 and e["2"]["status"] == "failed"
    assert e["3"]["file"] is None and e["3"]["missing_from"]["no_file"]
    assert step(m, 8)["instances"] == ["1", "4"] and step(m, 4)["instances"] == ["1", "2", "4"]
    assert m["interrupted"] is True


def test_bad_input_is_refused_before_anything_starts():
    before = set(RESULTS.glob("*.instance-*"))
    cases = [
        (["--instances", "0"], "--instances '0'"),
        (["--instances", "x"], "--instances 'x'"),
        (["--instances=-2"], "--instances '-2'"),
        (["--instances", "4"], "the smallest thread step has 3 thread(s)"),
        (["--instances", "2", "--instance", "1"], "give every host the same -e testid"),
        (["--instances", "2", "--execution-segment", "0:1/2"], "sets the execution segments itself"),
    ]
    for args, msg in cases:
        p = subprocess.run([str(ROOT / "scripts/k6"), "run", *args, "-e", "threads=3", "oltp.js"], cwd=ROOT / "k6",
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and msg in p.stderr, (args, p.stderr)
    p = subprocess.run([str(ROOT / "scripts/k6"), "run", "--instances", "2", "-e", "threads=4", "prepare.js"],
                       cwd=ROOT / "k6", capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "k6/prepare.js loads the tables once" in p.stderr
    p = subprocess.run([str(ROOT / "scripts/k6"), "merge", "no-such-run"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no instance files results/no-such-run.instance-<i>.json" in p.stderr
    assert set(RESULTS.glob("*.instance-*")) == before


# ---------------------------------------------------------------- compose: replicas of one run

def test_compose_k6_instance_replicas():
    from test_compose import compose, compose_env, model
    m = model("k6-instances")
    svc = m["services"]["k6-instance"]
    assert svc["profiles"] == ["k6-instances"] and "k6-instance" not in model("k6")["services"]
    assert svc["deploy"]["replicas"] == 2
    m3 = json.loads(compose("--profile", "k6-instances", "config", "--format", "json",
                            env=compose_env(K6_INSTANCES="3")).stdout)
    s3 = m3["services"]["k6-instance"]
    assert s3["deploy"]["replicas"] == 3 and s3["environment"]["K6_INSTANCES"] == "3"
    # the same image, target, remote write and results folder as the k6 service
    k6svc = model("k6")["services"]["k6"]
    assert svc["image"] == k6svc["image"] and svc["build"] == k6svc["build"]
    assert {k: v for k, v in svc["environment"].items() if not k.startswith(("TBS_", "K6_INSTANCES"))} == \
        {k: v for k, v in k6svc["environment"].items() if not k.startswith("TBS_")}
    mounts = {v["target"]: v for v in svc["volumes"]}
    assert mounts["/scripts/results"]["source"] == str(ROOT / "results")
    assert mounts["/tbs/instance.sh"]["source"] == str(ROOT / "compose/k6/instance.sh")
    assert mounts["/tbs/instance.sh"].get("read_only") and svc["entrypoint"] == ["/bin/sh", "/tbs/instance.sh"]


def stack_env(**extra):
    env = dict(os.environ)
    for k, v in read_k6_env(ROOT / ".stack/k6.env").items():
        env.setdefault(k, v)
    env.update(PATH=f"{ROOT / 'bin'}:{env['PATH']}", TBS_RESULTS=str(RESULTS), results_dir=str(RESULTS),
               GOMAXPROCS="1", **extra)
    return env


@pytest.mark.full
def test_compose_entrypoint_splits_one_run(tables):
    """The replicas' entrypoint (compose/k6/instance.sh) run here twice at once with our k6, as
    two containers would: each claims its own segment; the merge sums both."""
    testid = f"inst-{int(time.time())}-compose"
    env = stack_env(K6_INSTANCES="2", TBS_TESTID=testid, TBS_START_AT=str(int(time.time() * 1000) + 8000),
                    TBS_K6_ARGS=f"-e mysql_db={DB} -e tables=2 -e table_size=5000 -e threads=2 -e time=4")
    procs = [subprocess.Popen(["sh", str(ROOT / "compose/k6/instance.sh")], cwd=ROOT / "k6", env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=180)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[-2000:] for o in outs]
    assert sorted(re.search(r"instance (\d) of 2", o).group(1) for o in outs) == ["0", "1"]
    p = subprocess.run(["sh", str(ROOT / "compose/k6/instance.sh")], cwd=ROOT / "k6", env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "all 2 instances of testid" in p.stderr
    r = subprocess.run([str(ROOT / "scripts/k6"), "merge", testid], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    merged = json.loads((RESULTS / f"{testid}.json").read_text())
    files = files_of(testid)
    assert sorted(files) == ["0", "1"] and [e["status"] for e in merged["instances"]] == ["complete", "complete"]
    assert step(merged, 2)["queries"]["total"] == sum(step(d, 2)["queries"]["total"] for d in files.values()) > 0
    p = subprocess.run(["sh", str(ROOT / "compose/k6/instance.sh")], cwd=ROOT / "k6",
                       env=stack_env(K6_INSTANCES="x", TBS_TESTID=testid), capture_output=True, text=True)
    assert p.returncode == 2 and "K6_INSTANCES='x'" in p.stderr
