"""tools/history-quality: how well scripts/history finds a change, measured on real noise
(docs/history.md, issue #29 step 6).

  tools/history-quality collect --runs 30        N short identical runs (A/A) on the local stack
  tools/history-quality measure [--from DIR]     detection rate, delay, false change points
  tools/history-quality e2e [--slow-db PCT]      a real series where a TiDB variable flips midway (or TiDB slows)

`collect` prepares its own database (sbtest_history_aa), then runs one workload at one thread
step N times in a row with our k6 (`scripts/k6 run`), each run's manifest in --out (default
results/history-aa/). `measure` takes those runs' QPS (or --metric p95_ms) as the noise: each
trial draws a series from them (with replacement, a fixed seed), injects a step of 3, 5 and 10%
(QPS down, latency up: a regression) after --before runs and asks tidbbench.history.cp after
each new run, as a nightly job would, until --after runs: detected when a change point lands
within one run of the step; the delay is the runs after the step it took. A/A series of --aa-length
runs give the false change points per 100 runs, and so does the recorded sequence itself (its
drift included). `--grid` does the same for several detection settings. `e2e` runs a real series
on the local TiDB: --runs runs, the variable (--variable, --value) switched from run --flip on
as TiDB's root (.stack/secrets/tidb-root) and always put back (or, with --slow-db PCT, TiDB held
to (100 - PCT)% of its core from then on: a known slow-down), then ingests them into an index in
--out and prints `scripts/history runs` for the series."""
import argparse
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from tidbbench import ROOT, ReportError, disturbance
from tidbbench.history import cp as hcp
from tidbbench.history import store
from tidbbench.k6env import new_testid, read_k6_env, state_dir

STEPS = (3.0, 5.0, 10.0)
PIN = None  # benchkit.Pinning while TiDB is pinned (collect, e2e; --no-pin leaves it)
WITHIN = 5  # runs: the target's "found within 5 runs"


# -- the local stack

def sql(query, root=False, db=None, port=None):
    import pymysql
    env = read_k6_env()
    if root:
        user, pw = "root", (state_dir() / "secrets" / "tidb-root").read_text().strip()
    else:  # .stack/k6.env names the password or the file holding it
        user, pw = env.get("mysql_user", "sbtest"), env.get("mysql_password", "")
        if not pw:
            f = Path(env.get("mysql_password_file") or state_dir() / "secrets" / "sbtest")
            pw = f.read_text().strip() if f.is_file() else ""
    port = port or int(env.get("mysql_port", 4000))
    with pymysql.connect(host="127.0.0.1", port=port, user=user, password=pw, database=db, autocommit=True,
                         connect_timeout=10) as c, c.cursor() as cur:
        cur.execute(query)
        return cur.fetchall()


def k6(args, out):
    env = dict(os.environ, results_dir=str(out))
    p = subprocess.run([str(ROOT / "scripts/k6"), "run", "-q", *args], cwd=ROOT / "k6", env=env,
                       capture_output=True, text=True, timeout=600,
                       preexec_fn=PIN.client_preexec() if PIN else None)
    if p.returncode != 0:
        raise ReportError(f"k6 {' '.join(args)} exited {p.returncode}: {(p.stdout + p.stderr)[-1500:]}")
    return p


def prepare(db, workload, tables, size, out, port=None):
    sql(f"CREATE DATABASE IF NOT EXISTS {db}", port=port)
    have = sql(f"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{db}'", port=port)[0][0]
    if have < tables:
        k6(["-e", f"mysql_db={db}", "-e", f"tables={tables}", "-e", f"table_size={size}", "-e", "threads=2",
            *(["-e", f"mysql_port={port}"] if port else []), "prepare.js"], out)
        sql(f"ANALYZE TABLE {db}.sbtest1", port=port)


def loadavg():
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def one_run(a, testid, out):
    """One k6 run; returns its first step. The host's 1-minute load average before the run goes to
    out/conditions.jsonl (a shared host's neighbours are part of the noise)."""
    with open(out / "conditions.jsonl", "a") as f:
        f.write(json.dumps({"testid": testid, "loadavg_before": loadavg(),
                            "pinned": pinning()}) + "\n")
    k6(["-e", f"mysql_db={a.db}", "-e", f"tables={a.tables}", "-e", f"table_size={a.table_size}",
        "-e", f"workload={a.workload}", "-e", f"threads={a.threads}", "-e", f"time={a.time}",
        "-e", f"warmup_time={a.warmup_time}", "-e", f"testid={testid}", "oltp.js"], out)
    m = json.loads((out / f"{testid}.json").read_text())
    # what disturbed the run (the manifest's per-step `disturbance`, k6/lib/disturb.js), beside the
    # load average: the table of where the spread comes from reads both (measure --reject-disturbed)
    with open(out / "conditions.jsonl", "a") as f:
        f.write(json.dumps({"testid": testid, "after": True, "loadavg_after": loadavg(),
                            "disturbance": {str(x["threads"]): x.get("disturbance") for x in m["steps"]},
                            "disturbed": disturbance.run_reasons(m)}) + "\n")
    return m["steps"][0]


def pinned(a):
    """TiDB's threads on --pin-db, our k6 on --pin-client, as on a dedicated load-generator host:
    client and server then do not take turns on the same cores, the largest source of run-to-run
    noise on a shared 2-core host. Put back by unpin()."""
    global PIN
    if a.no_pin:
        return
    from tbstools import benchkit
    if (os.cpu_count() or 1) < 2:
        raise ReportError("pinning needs 2 cores (this machine has 1): use --no-pin", code=2)
    pid = tidb_pid()
    PIN = benchkit.Pinning(a.pin_db, a.pin_client)
    PIN.pin_server(pid)
    print(pinning(), flush=True)


def pinning():
    return f"TiDB's threads on core {PIN.db_core}, k6 on core {PIN.client_core}" if PIN else None


def unpin():
    global PIN
    if PIN:
        PIN.restore()
        PIN = None


def collect(a):
    out = Path(a.out or ROOT / "results/history-aa").resolve()
    pinned(a)  # first: a bad core or no TiDB stops it before anything is written
    out.mkdir(parents=True, exist_ok=True)
    try:
        return collect_runs(a, out)
    finally:
        unpin()


def duet_points(a, out, stamp, on_point=None):
    """--duet: a.runs duet points (tbstools.duet): the reference TiDB started beside the stack's,
    both prepared, each point one duet plan; on_point(i, duet) runs before point i (the e2e's flip).
    Returns the candidates' testids."""
    from tbstools import duet as duetmod
    d = duetmod.Duet(a, stamp, out, PIN, tidb_pid())
    ids = []
    try:
        prepare(a.db, a.workload, a.tables, a.table_size, out)
        prepare(a.db, a.workload, a.tables, a.table_size, out, port=a.ref_port)
        # a fresh reference TiDB runs slower for its first tens of seconds (its caches, statistics
        # and plan cache warming up: the first points of a collection read 1.15-1.43 where the rest
        # read 0.89-1.04): points run and not recorded, in a folder of their own
        for i in range(a.duet_warmup):
            cand, ref = d.point(i, out / "warmup")
            print(f"warm-up point {i + 1}/{a.duet_warmup} (not recorded): {duetmod.point_line(cand, ref)}", flush=True)
        for i in range(a.runs):
            if on_point:
                on_point(i, d)
            cand, ref = d.point(i)
            ids.append(cand["testid"])
            with open(out / "conditions.jsonl", "a") as f:
                f.write(json.dumps({"testid": cand["testid"], "reference": ref["testid"], "loadavg_after": loadavg(),
                                    "pinned": pinning(), "weights": {n: d.weights.weight(n) for n in d.weights.groups},
                                    "disturbed": disturbance.run_reasons(disturbance.without_partner(cand, ref)),
                                    "reference_disturbed": disturbance.run_reasons(
                                        disturbance.without_partner(ref, cand))}) + "\n")
            print(f"point {i + 1}/{a.runs} {cand['testid']}: {duetmod.point_line(cand, ref)}", flush=True)
    finally:
        d.close()
    return ids


def collect_runs(a, out):
    stamp = new_testid()  # the launcher core's (k6/ext/launch makes every testid); one per collection
    if a.duet:
        duet_points(a, out, stamp)
        print(f"{a.runs} A/A duet points in {out} (measure --metric vs_ref)")
        return 0
    prepare(a.db, a.workload, a.tables, a.table_size, out)
    for i in range(a.runs):
        s = one_run(a, f"haa-{stamp}-{i:03d}", out)
        d = s.get("disturbance") or {}
        print(f"run {i + 1}/{a.runs}: {s['qps']:.1f} QPS, p95 {s['latency_ms']['p95']:.3f} ms, load average "
              f"{loadavg()}, {disturbance.summary(s)}, database CPU {disturbance.cores(d.get('db_cpu_s'), d)} cores",
              flush=True)
    print(f"{a.runs} A/A runs in {out}")
    return 0


def e2e(a):
    stamp = new_testid()  # the launcher core's (k6/ext/launch makes every testid); one per series
    out = Path(a.out or ROOT / f"results/history-e2e-{stamp}").resolve()
    pinned(a)  # first: a bad core or no TiDB stops it before anything is written
    out.mkdir(parents=True, exist_ok=True)
    try:
        return e2e_runs(a, stamp, out)
    finally:
        unpin()


class VariableFlip:
    """The change of an e2e series: a TiDB variable set from the flip on (as TiDB's root), always
    put back."""

    def __init__(self, a):
        self.name, self.value = a.variable, a.value
        (self.old,), = sql(f"SELECT @@GLOBAL.{self.name}", root=True)
        print(f"{self.name} is {self.old}; runs {a.flip}..{a.runs - 1} with {self.value}", flush=True)

    def apply(self, _duet=None):
        sql(f"SET GLOBAL {self.name} = {self.value}", root=True)

    def undo(self):
        sql(f"SET GLOBAL {self.name} = {quote(self.old)}", root=True)
        print(f"{self.name} back to {self.old}", flush=True)


class SlowDb:
    """The change of an e2e series with --slow-db PCT: from the flip on, TiDB (pinned to its core)
    is held to (100 - PCT)% of that core (benchkit.CpuCap): a real slow-down of the database by
    about PCT% where it sets the pace, with no setting in the evidence (what a slower build looks
    like). Released at the end, whatever happened."""

    def __init__(self, a, stamp):
        self.share, self.name, self.cap = 1 - a.slow_db / 100, f"tbs-e2e-{stamp}", None
        print(f"runs {a.flip}..{a.runs - 1} with TiDB held to {self.share:.0%} of core {a.pin_db}", flush=True)

    def apply(self):
        from tbstools import benchkit
        self.cap = benchkit.CpuCap(tidb_pid(), self.share, self.name)

    def undo(self):
        if self.cap:
            self.cap.release()
            print("TiDB's CPU cap released", flush=True)


class DuetSlowDb:
    """The change of an e2e --duet series with --slow-db PCT: from the flip on, the candidate TiDB's
    CPU weight is (100 - PCT)% of the reference's on their shared core (benchkit.CpuWeights): it
    gets PCT% less of the core than the reference, a known slow-down of the candidate against it.
    Back to equal weights at the end (Duet.close removes the groups in any case)."""

    def __init__(self, a):
        self.share, self.duet = 1 - a.slow_db / 100, None
        print(f"points {a.flip}..{a.runs - 1} with the candidate TiDB at {self.share:.0%} of the reference's CPU "
              f"weight on core {a.pin_db}", flush=True)

    def apply(self, duet):
        from tbstools import duet as duetmod
        self.duet = duet
        duet.weights.set(duetmod.CAND_ARM, self.share)

    def undo(self):
        if self.duet and self.duet.weights and self.duet.weights.groups:
            from tbstools import duet as duetmod
            self.duet.weights.set(duetmod.CAND_ARM, 1)
            print("the candidate's CPU weight back to the reference's", flush=True)


def tidb_pid():
    f = state_dir() / "run/tidb.pid"
    try:
        pid = int(f.read_text().split()[0])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, IndexError):
        raise ReportError(f"the local TiDB is not running ({f}): scripts/stack up", code=2) from None


def e2e_runs(a, stamp, out):
    if a.duet:
        change = DuetSlowDb(a) if a.slow_db else VariableFlip(a)
        try:
            ids = duet_points(a, out, stamp, lambda i, d: change.apply(d) if i == a.flip else None)
        finally:
            change.undo()
        # the candidate's series (the reference's runs are a series of their own, at --ref-port)
        return e2e_history(a, out, ids, f"127.0.0.1:{read_k6_env().get('mysql_port', 4000)}/{a.db}")
    prepare(a.db, a.workload, a.tables, a.table_size, out)
    change = SlowDb(a, stamp) if a.slow_db else VariableFlip(a)
    ids = []
    try:
        for i in range(a.runs):
            if i == a.flip:
                change.apply()
            testid = f"he2e-{stamp}-{i:03d}"
            s = one_run(a, testid, out)
            ids.append(testid)
            print(f"run {i} {testid}: {s['qps']:.1f} QPS, p95 {s['latency_ms']['p95']:.3f} ms, load average "
                  f"{loadavg()}", flush=True)
    finally:
        change.undo()
    return e2e_history(a, out, ids, f"{a.workload}/{a.threads}t/")


def e2e_history(a, out, ids, series):
    """The e2e's runs ingested into out/history.sqlite, the candidate's series shown (`runs`), then
    `--check` at its defaults, its verdict printed (the e2e exits 0 either way; 2 on bad input)."""
    from tidbbench.history import cli as history
    idx = out / "history.sqlite"
    seg = ["--min-segment", str(a.min_segment)] if a.min_segment else []  # none given: scripts/history's own
    rc = history.main(["ingest", "--results", str(out), "--index", str(idx), *seg])
    if rc:
        return rc
    print(f"\nthe flip: run {a.flip}, testid {ids[a.flip]}\n")
    rc = history.main(["runs", "--results", str(out), "--index", str(idx), "--series", series,
                       *seg])
    if rc:
        return rc
    print("\nscripts/history --check at its defaults:", flush=True)
    rc = history.main(["changes", "--check", "--results", str(out), "--index", str(idx)])
    print(f"(--check exited {rc}: {'a regression found' if rc == 1 else 'no regression found' if rc == 0 else 'bad input'})")
    return 2 if rc == 2 else 0


def quote(v):
    return v if str(v).lstrip("-").replace(".", "").isdigit() else f"'{v}'"


# -- measuring

def pool(folder, metric, threads=None, reject_disturbed=False):
    """The metric's values of the runs in folder (one thread step), in the order they ran; with
    reject_disturbed, without the steps the rule of tidbbench/disturbance.py calls disturbed (the
    canary against the median of every run's canaries)."""
    runs = []
    found = [m for kind, f, m in store.scan([folder]) if kind == "run"]
    median = disturbance.canary_median(found) if reject_disturbed else None
    dropped = 0
    for m in found:
        for s in m["steps"]:
            if reject_disturbed and disturbance.step_reasons(s, median):
                dropped += 1
                continue
            if threads is None or s.get("threads") == threads:
                v = store.step_point(m, s).get(metric)
                if v is not None:
                    runs.append((store.started_ms(m), v))
    if reject_disturbed:
        print(f"{folder}: {dropped} disturbed step(s) left out (tidbbench/disturbance.py's rule)", flush=True)
    if len(runs) < 5:
        raise ReportError(f"{folder}: {len(runs)} runs with {metric}; at least 5 are needed "
                          "(tools/history-quality collect)", code=2)
    return [v for _, v in sorted(runs)]


def detect_delay(before, after, sign, pct, params, max_after):
    """Runs after the step until a change point lands within one run of it (None: not by max_after)."""
    b = len(before)
    series = before + [x * (1 + sign * pct / 100) for x in after]
    for k in range(params.min_segment, max_after + 1):
        if any(abs(i - b) <= 1 for i, _ in hcp.find(series[:b + k], params)):
            return k
    return None


def measure_one(values, params, a, sign):
    rnd = random.Random(a.seed)
    rows = []
    aa_cps = aa_runs = 0
    for _ in range(a.trials):
        s = [rnd.choice(values) for _ in range(a.aa_length)]
        aa_cps += len(hcp.find(s, params))
        aa_runs += len(s)
    for pct in a.steps:
        delays, false = [], 0
        rnd = random.Random(a.seed + int(pct * 10))
        for _ in range(a.trials):
            before = [rnd.choice(values) for _ in range(a.before)]
            after = [rnd.choice(values) for _ in range(a.after)]
            delays.append(detect_delay(before, after, sign, pct, params, a.after))
            full = before + [x * (1 + sign * pct / 100) for x in after]
            false += sum(1 for i, _ in hcp.find(full, params) if abs(i - a.before) > 1)
        found = [d for d in delays if d is not None]
        within = sum(1 for d in found if d <= WITHIN)
        rows.append({"step_pct": pct, "trials": a.trials, "found_within_5": within / a.trials,
                     "found_by_end": len(found) / a.trials,
                     "median_delay": statistics.median(found) if found else None,
                     "max_delay": max(found) if found else None,
                     "false_per_100_runs": false / (a.trials * (a.before + a.after)) * 100})
    recorded = len(hcp.find(values, params))
    return {"aa_false_per_100_runs": aa_cps / aa_runs * 100, "recorded_false": recorded,
            "recorded_runs": len(values), "steps": rows}


def measure(a):
    folder = Path(a.from_ or ROOT / "results/history-aa")
    if a.metric == "vs_ref":  # duet points (collect --duet): each candidate over its reference
        from tbstools import duet as duetmod
        runs = duetmod.pool(folder, a.threads, a.reject_disturbed)
        if len(runs) < 5:
            raise ReportError(f"{folder}: {len(runs)} paired runs with vs_ref; at least 5 are needed "
                              "(tools/history-quality collect --duet)", code=2)
        values = [v for _, v in sorted(runs)]
    else:
        values = pool(folder, a.metric, a.threads, a.reject_disturbed)
    sign = -1 if hcp.METRICS[a.metric] else 1  # a regression: QPS down, latency up
    cv = statistics.stdev(values) / statistics.fmean(values) * 100
    if a.noise_cv:
        # the runs' deviations from their mean, shrunk to the given CV: the recorded noise's shape
        # (its tails, its order) at the spread of a quieter host
        mean, f = statistics.fmean(values), a.noise_cv / cv
        values = [mean + (v - mean) * f for v in values]
        print(f"the recorded deviations (CV {cv:.2f}%) scaled by {f:.4f} to CV {a.noise_cv:g}%")
        cv = a.noise_cv
    print(f"noise: {len(values)} A/A runs of {folder}, {a.metric} mean {statistics.fmean(values):.2f}, "
          f"CV {cv:.2f}%; {a.trials} trials a row, {a.before} runs before the step, {a.after} after; "
          f"A/A series of {a.aa_length} runs")
    # the metric's own default minimum segment unless given (vs_ref: DEFAULTS.paired_min_segment)
    segments = a.min_segment or [hcp.DEFAULTS.for_metric(a.metric).min_segment]
    grid = [hcp.Params(ms, mm, p, a.window, ms) for ms, mm, p in itertools.product(
        segments, a.min_magnitude, a.max_pvalue)] if a.grid else \
        [hcp.Params(segments[0], a.min_magnitude[0], a.max_pvalue[0], a.window, segments[0])]
    out = []
    for params in grid:
        r = measure_one(values, params, a, sign)
        out.append({"params": asdict(params), **r})
        print(f"\nmin segment {params.min_segment} runs, min magnitude {params.min_magnitude:g}%, "
              f"max p-value {params.max_pvalue:g}, window {params.window}:")
        print("| step | trials | found within 5 runs | found within "
              f"{a.after} | median delay (runs) | max delay | false CPs per 100 runs |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        print(f"| 0% (A/A, {a.aa_length} runs) | {a.trials} | — | — | — | — | {r['aa_false_per_100_runs']:.2f} |")
        for s in r["steps"]:
            md = "—" if s["median_delay"] is None else f"{s['median_delay']:g}"
            mx = "—" if s["max_delay"] is None else str(s["max_delay"])
            print(f"| {s['step_pct']:g}% | {s['trials']} | {s['found_within_5'] * 100:.1f}% | "
                  f"{s['found_by_end'] * 100:.1f}% | {md} | {mx} | {s['false_per_100_runs']:.2f} |")
        print(f"the {r['recorded_runs']} recorded runs in their order (drift included): "
              f"{r['recorded_false']} change point(s)")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2))
    return 0


def floats(text):
    return [float(x) for x in text.split(",")]


def ints(text):
    return [int(x) for x in text.split(",")]


def parser():
    ap = argparse.ArgumentParser(prog="tools/history-quality", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    for verb in ("collect", "e2e"):
        p = sub.add_parser(verb)
        p.add_argument("--runs", type=int, default=30 if verb == "collect" else 12)
        p.add_argument("--workload", default="oltp_point_select")
        p.add_argument("--threads", type=int, default=2)
        p.add_argument("--time", type=int, default=5, help="measured seconds per run")
        p.add_argument("--warmup-time", type=int, default=1)
        p.add_argument("--tables", type=int, default=1)
        p.add_argument("--table-size", type=int, default=10000)
        p.add_argument("--db", default="sbtest_history_aa" if verb == "collect" else "sbtest_history_e2e")
        p.add_argument("--out", help="results folder for the runs")
        p.add_argument("--no-pin", action="store_true", help="leave TiDB and k6 on every core")
        p.add_argument("--pin-db", type=int, default=0, help="TiDB's core (default 0)")
        p.add_argument("--pin-client", type=int, default=1, help="k6's core (default 1)")
        p.add_argument("--duet", action="store_true",
                       help="each point a duet: the stack's TiDB beside a reference TiDB of the same build, both on "
                            "--pin-db at equal CPU weights, run at once by a plan with a reference arm; the history "
                            "judges vs_ref (tbstools/duet.py)")
        p.add_argument("--duet-warmup", type=int, default=3,
                       help="duet points run first and not recorded, while the fresh reference TiDB warms up (default 3)")
        p.add_argument("--ref-port", type=int, default=4001, help="the reference TiDB's SQL port (--duet; default 4001)")
        p.add_argument("--ref-status-port", type=int, default=10081,
                       help="the reference TiDB's status port (--duet; default 10081)")
        if verb == "e2e":
            p.add_argument("--variable", default="tidb_enable_prepared_plan_cache")
            p.add_argument("--value", default="OFF")
            p.add_argument("--flip", type=int, help="the first run with the new value (default: the middle)")
            p.add_argument("--slow-db", type=float, metavar="PCT",
                           help="instead of the variable: from --flip on, hold the pinned TiDB to (100 - PCT)%% of "
                                "its core (cgroup v1's cpu quota), a slow-down of about PCT%% (1 to 50)")
            p.add_argument("--min-segment", type=int,
                           help="scripts/history's --min-segment (default: its own: "
                                f"{hcp.DEFAULTS.min_segment}, {hcp.DEFAULTS.paired_min_segment} for vs_ref)")
    p = sub.add_parser("measure")
    p.add_argument("--from", dest="from_", metavar="DIR", help="the A/A runs (default results/history-aa)")
    p.add_argument("--metric", default="qps", choices=list(hcp.METRICS),
                   help="the runs' figure taken as the noise (vs_ref: duet points, collect --duet)")
    p.add_argument("--threads", type=int, help="the thread step (default: every step of the runs)")
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--before", type=int, default=30, help="runs before the step")
    p.add_argument("--after", type=int, default=10, help="runs after the step, at most")
    p.add_argument("--aa-length", type=int, default=100, help="runs of each A/A series")
    p.add_argument("--steps", type=floats, default=list(STEPS), help="step sizes, %% (default 3,5,10)")
    p.add_argument("--min-segment", type=ints,
                   help=f"(default: the metric's, {hcp.DEFAULTS.min_segment}; {hcp.DEFAULTS.paired_min_segment} for vs_ref)")
    p.add_argument("--min-magnitude", type=floats, default=[hcp.DEFAULTS.min_magnitude])
    p.add_argument("--max-pvalue", type=floats, default=[hcp.DEFAULTS.max_pvalue])
    p.add_argument("--window", type=int, default=hcp.DEFAULTS.window)
    p.add_argument("--grid", action="store_true", help="every combination of the comma-separated settings")
    p.add_argument("--noise-cv", type=float, metavar="PCT",
                   help="scale the runs' deviations from their mean to this CV (the recorded shape at a "
                        "quieter host's spread; default: as recorded)")
    p.add_argument("--reject-disturbed", action="store_true",
                   help="leave out the runs whose step the rule of tidbbench/disturbance.py calls disturbed "
                        "(steal, other processes' CPU, a slow canary; docs/report.md)")
    p.add_argument("--seed", type=int, default=29)
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    try:
        if a.verb == "e2e" and a.flip is None:
            a.flip = a.runs // 2
        if a.verb == "e2e" and not 0 < a.flip < a.runs:
            raise ReportError(f"invalid --flip {a.flip}: a run between 1 and {a.runs - 1}", code=2)
        if a.verb == "e2e" and a.slow_db is not None:
            if not 1 <= a.slow_db <= 50:
                raise ReportError(f"invalid --slow-db {a.slow_db:g}: a slow-down between 1 and 50 (%)", code=2)
            if a.no_pin:
                raise ReportError("--slow-db caps TiDB's share of its one core: it needs the pinning --no-pin "
                                  "turns off", code=2)
            if not (Path("/sys/fs/cgroup/cpu") / ("cpu.shares" if a.duet else "cpu.cfs_quota_us")).is_file():
                raise ReportError("--slow-db needs cgroup v1's cpu controller at /sys/fs/cgroup/cpu "
                                  f"({'cpu.shares' if a.duet else 'cpu.cfs_quota_us'} is not there)", code=2)
        if a.verb in ("collect", "e2e") and a.duet:
            if a.no_pin:
                raise ReportError("--duet puts both databases on one core (--pin-db): it needs the pinning --no-pin "
                                  "turns off", code=2)
            if not (Path("/sys/fs/cgroup/cpu") / "cpu.shares").is_file():
                raise ReportError("--duet weighs the two databases on their core by cgroup v1's cpu controller at "
                                  "/sys/fs/cgroup/cpu (cpu.shares is not there)", code=2)
        return {"collect": collect, "measure": measure, "e2e": e2e}[a.verb](a)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
