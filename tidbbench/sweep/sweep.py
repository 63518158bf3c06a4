"""scripts/sweep: the seeds' method in one command -- several workloads x thread steps, each
workload its own k6 run (testid), optional data reset (cleanup + prepare) and ANALYZE TABLE
before each workload, a sweep manifest results/sweep-<id>.json listing the testids, and a
report at the end (scripts/report on the sweep)."""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tidbbench import ROOT, ReportError
from tidbbench import contract
from tidbbench.commands import DEFAULTS, scrub_argv
from tidbbench.k6env import new_testid, target_settings

WORKLOADS = contract.workloads()
# set by the sweep's own flags, so not allowed as -e
OWN = {"workload": "--workloads", "threads": "--threads", "testid": "--id", "time": "--time",
       "warmup_time": "--warmup-time", "tables": "--tables", "table_size": "--table-size", "mysql_db": "--mysql-db",
       "results_dir": "--results", "command": "--reset"}

EPILOG = """\
example:
  scripts/sweep --workloads oltp_point_select,oltp_read_write --threads 2,4 --time 10 \\
                --warmup-time 3 --tables 2 --table-size 5000 --mysql-db sbtest --reset --analyze
Each workload runs `scripts/k6 run -e workload=W -e testid=<id>-W ... k6/oltp.js`; with --reset,
`k6/prepare.js -e command=cleanup` and `k6/prepare.js` come first, with --analyze,
ANALYZE TABLE sbtest1..N. Then `scripts/report <sweep id>` (or `scripts/report BASELINE
<sweep id>` with --baseline) writes the report. Compare two sweeps later with
`scripts/report sweep-A sweep-B`.
"""


def parser():
    ap = argparse.ArgumentParser(prog="scripts/sweep", description=__doc__, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", help="comma-separated sysbench workloads, run in this order")
    ap.add_argument("--threads", help="thread steps for every workload, e.g. 150,300,600")
    ap.add_argument("--repeats", type=int, default=1,
                    help="run every workload N times (samples for the report's medians, intervals and p-values)")
    ap.add_argument("--plan", metavar="FILE",
                    help="a plan (JSON, docs/report.md): two or more arms run interleaved, each a sweep; "
                         "an interrupted plan resumes with the same --id")
    ap.add_argument("--scale", metavar="F",
                    help="with --plan: rows per table x F (0 < F <= 1, at least 1,000 rows), e.g. 0.001 runs a "
                         "seed plan's 10,000,000 rows as 10,000; --threads/--time/--warmup-time/--workloads/"
                         "--mysql-db replace the plan's own (tidbbench/sweep/seedplan.py)")
    ap.add_argument("--arm-target", action="append", default=[], metavar="ARM=HOST:PORT",
                    help="with --plan: the arm's target (repeat per arm; all=HOST:PORT: every arm at one "
                         "target); the seed plans need one for every arm")
    ap.add_argument("--drop-global", metavar="VAR[,VAR]",
                    help="with --plan: leave these set_global variables out of every arm, e.g. "
                         "tidb_enable_async_commit,tidb_enable_1pc on the local stack's unistore")
    ap.add_argument("--time", type=int, help="seconds measured per step (k6 option time)")
    ap.add_argument("--warmup-time", type=int, help="seconds of warm-up before each step (warmup_time)")
    ap.add_argument("--tables", type=int, help="number of tables (tables)")
    ap.add_argument("--table-size", type=int, help="rows per table (table_size)")
    ap.add_argument("--mysql-db", help="database (mysql_db)")
    ap.add_argument("--analyze", action="store_true", help="ANALYZE TABLE sbtest1..N before each workload")
    ap.add_argument("--reset", action="store_true",
                    help="before each workload, drop and re-create the tables (prepare.js cleanup, then prepare)")
    ap.add_argument("--prepare-threads", type=int, default=4, help="threads of prepare.js for --reset (default 4)")
    ap.add_argument("-e", "--env", dest="extra", action="append", default=[], metavar="NAME=VALUE",
                    help="any other k6 option for every run (as scripts/k6 run -e), e.g. -e preset=tidb")
    ap.add_argument("--id", help="sweep id (default: a timestamp); testids are <id>-<workload>")
    ap.add_argument("--results", default=str(contract.results_dir()),
                    help="where run and sweep manifests go (default: $results_dir or results/)")
    ap.add_argument("--out", help="report folder (scripts/report --out)")
    ap.add_argument("--prometheus", help="scripts/report --prometheus")
    ap.add_argument("--grafana", help="scripts/report --grafana")
    ap.add_argument("--grafana-password-file", metavar="FILE", help="scripts/report --grafana-password-file")
    ap.add_argument("--baseline", metavar="RUN", help="compare with this testid or sweep in the final report")
    ap.add_argument("--no-report", action="store_true", help="run the sweep only")
    return ap


def now_ms():
    return int(time.time() * 1000)


def parse_args(argv):
    a = parser().parse_args(argv)
    if a.repeats < 1:
        raise ReportError(f"invalid --repeats {a.repeats}: must be >= 1", code=2)
    from tidbbench.report.grafana import password_in_argument
    if password_in_argument(a.grafana):
        raise ReportError(password_in_argument(a.grafana), code=2)
    if a.plan:
        # what a plan file holds itself is not taken from the command line (--threads, --time,
        # --warmup-time, --workloads, --mysql-db and --scale do override it: tidbbench/sweep/seedplan.py)
        for flag, v in (("-e", a.extra), ("--tables", a.tables), ("--table-size", a.table_size),
                        ("--analyze", a.analyze), ("--reset", a.reset), ("--out", a.out),
                        ("--prometheus", a.prometheus), ("--grafana", a.grafana),
                        ("--grafana-password-file", a.grafana_password_file), ("--baseline", a.baseline)):
            if v:
                raise ReportError(f"{flag} does not apply to --plan: set it in the plan file (its options, "
                                  "analyze, reset), or scale rows with --scale; report with scripts/report "
                                  "plan-<id>", code=2)
        return a, None, None, None
    for flag, v in (("--scale", a.scale), ("--arm-target", a.arm_target), ("--drop-global", a.drop_global)):
        if v:
            raise ReportError(f"{flag} applies to a plan (--plan FILE); a sweep takes --table-size and "
                              "-e mysql_host=... -e mysql_port=...", code=2)
    if not a.workloads or not a.threads:
        raise ReportError("--workloads and --threads are required (or --plan FILE)", code=2)
    workloads = [w.strip() for w in a.workloads.split(",") if w.strip()]
    valid = contract.workloads()
    bad = [w for w in workloads if w not in valid]
    if bad or not workloads:
        raise ReportError(f"unknown workload '{bad[0] if bad else a.workloads}' in --workloads "
                          f"(valid: {', '.join(valid)})", code=2)
    if len(set(workloads)) != len(workloads):
        raise ReportError(f"--workloads lists a workload twice: {a.workloads}", code=2)
    if not re.match(r"^\d+(,\d+)*$", a.threads.replace(" ", "")) or any(int(t) < 1 for t in a.threads.split(",")):
        raise ReportError(f"invalid --threads {a.threads}: thread counts >= 1, comma-separated (e.g. 2,4,8)", code=2)
    for name in ("time", "tables", "table_size", "prepare_threads"):
        v = getattr(a, name)
        if v is not None and v < 1:
            raise ReportError(f"invalid --{name.replace('_', '-')} {v}: must be >= 1", code=2)
    if a.warmup_time is not None and a.warmup_time < 0:
        raise ReportError(f"invalid --warmup-time {a.warmup_time}: must be >= 0", code=2)
    extra = {}
    for e in a.extra:
        if "=" not in e:
            raise ReportError(f"invalid -e {e}: write NAME=VALUE", code=2)
        k, v = e.split("=", 1)
        if k in OWN:
            raise ReportError(f"-e {k}=... is set by the sweep; use {OWN[k]}", code=2)
        if k not in DEFAULTS:
            raise ReportError(f"unknown option '{k}' in -e {k}=... (valid: {', '.join(DEFAULTS)})", code=2)
        extra[k] = v
    try:
        base = a.id or new_testid()
    except RuntimeError as e:
        raise ReportError(f"no sweep id: {e}", code=2) from e
    base = base[len("sweep-"):] if base.startswith("sweep-") else base
    for w in workloads:
        if not contract.testid_re().match(f"{base}-{w}" + (f"-r{a.repeats}" if a.repeats > 1 else "")):
            raise ReportError(f"invalid --id {a.id}: testid '{base}-{w}' must be letters, digits, . _ - "
                              f"(at most {contract.testid_max()})", code=2)
    return a, workloads, extra, base


def stack_commit():
    try:
        p = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        return f"commit {p.stdout.strip()}" if p.returncode == 0 else ""
    except OSError:
        return ""


def target(extra, db):
    """Where the runs go, as scripts/k6 resolves it (the launcher core, k6env.target_settings):
    -e, then the environment, then .stack/k6.env, then k6's defaults."""
    try:
        t = target_settings(extra)
    except RuntimeError as e:
        raise ReportError(f"the target: {e}", code=2) from e
    if db:
        t["mysql_db"] = db
    t["mysql_port"] = int(t["mysql_port"])
    return t


def analyze(t, tables):
    import pymysql
    try:
        conn = pymysql.connect(host=t["mysql_host"], port=t["mysql_port"], user=t["mysql_user"],
                               password=t["mysql_password"], database=t["mysql_db"], autocommit=True,
                               connect_timeout=10)
    except pymysql.MySQLError as e:
        raise ReportError(f"ANALYZE: cannot connect to {t['mysql_host']}:{t['mysql_port']} as user "
                          f"'{t['mysql_user']}' (database '{t['mysql_db']}'): {e.args[-1]}")
    with conn, conn.cursor() as cur:
        for i in range(1, tables + 1):
            print(f"sweep: ANALYZE TABLE sbtest{i}", flush=True)
            try:
                cur.execute(f"ANALYZE TABLE sbtest{i}")
                cur.fetchall()
            except pymysql.MySQLError as e:
                raise ReportError(f"ANALYZE TABLE sbtest{i} in '{t['mysql_db']}' failed: {e.args[-1]}")


def k6(args, results):
    return wait_all([k6_start(args, results)])[0]


def wait_all(procs):
    """The exit codes of started processes; on an interrupt (or any error) every one still running
    is killed first, as subprocess.run does with its one."""
    try:
        return [p.wait() for p in procs]
    except BaseException:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        raise


def k6_start(args, results):
    """`scripts/k6 run ARGS` started (a Popen), its results in `results`."""
    env = dict(os.environ)
    env["results_dir"] = str(results)
    cmd = [str(ROOT / "scripts/k6"), "run", *args]
    print("sweep: " + " ".join(scrub_argv(cmd[1:])).replace(str(ROOT) + "/", ""), flush=True)
    return subprocess.Popen(cmd, cwd=ROOT, env=env)


def k6_check(common, workloads, threads):
    """k6's own option check (k6/lib/config.js, run by `k6 inspect`, which connects to nothing)
    on every run's options, before the sweep writes or changes anything: '' or the error."""
    k6bin = os.environ.get("K6_BIN") or str(ROOT / "bin/k6")
    if not os.access(k6bin, os.X_OK):
        return ""
    # (the password is not checked and stays out of the argument list)
    args = [x for i, x in enumerate(common) if not x.startswith("mysql_password=")
            and not (x == "-e" and i + 1 < len(common) and common[i + 1].startswith("mysql_password="))]
    for w in workloads:
        script = ["tpcc.js"] if w == contract.TPCC else ["-e", f"workload={w}", "oltp.js"]
        p = subprocess.run([k6bin, "inspect", *args, "-e", f"threads={threads}", *script],
                           cwd=ROOT / "k6", capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            m = re.search(r"((?:invalid|unknown) option [^\n\\\"]*)", p.stdout + p.stderr)
            return m.group(1) if m else f"k6 rejected the options of the {w} run: {(p.stdout + p.stderr).strip()[-300:]}"
    return ""


def host_info():
    """The load generator's host as each sample saw it: cores, memory, kernel, load average."""
    u = os.uname()
    info = {"hostname": u.nodename, "kernel": f"{u.sysname} {u.release}", "cores": os.cpu_count()}
    try:
        mem = Path("/proc/meminfo").read_text().split("\n", 1)[0].split()
        info["memory_gib"] = round(int(mem[1]) / 1024 / 1024, 1)
        info["loadavg"] = Path("/proc/loadavg").read_text().split()[0]
    except (OSError, IndexError, ValueError):
        pass
    return info


def run_sample(entry, common, threads, results, a, tables, analyze_target, before=None):
    """One k6 run of one workload (one sample); fills entry, ReportError when it fails."""
    prepare_sample(entry, common, results, a, tables, analyze_target, before)
    entry["host"] = host_info()
    entry["started"] = now_ms()
    rc = k6(sample_args(entry, common, threads), results)
    entry["finished"] = now_ms()
    check_sample(entry, rc, results)


def prepare_sample(entry, common, results, a, tables, analyze_target, before=None):
    """What runs before a sample's k6 run: the reset (--reset), ANALYZE (--analyze), then `before`
    (a plan's set_global)."""
    w = entry["workload"]
    if a.reset:
        t0 = time.time()
        for what, args in prepare_commands(w, common, a.prepare_threads):
            if k6(args, results) != 0:
                raise ReportError(f"reset before {w}: {what} failed")
        entry["reset_seconds"] = round(time.time() - t0, 1)
    if a.analyze:
        t0 = time.time()
        analyze(analyze_target(), tables)
        entry["analyze_seconds"] = round(time.time() - t0, 1)
    if before:
        before()


def sample_args(entry, common, threads, extra=()):
    """k6's arguments for the sample's run (oltp.js or tpcc.js)."""
    w = entry["workload"]
    script = [contract.TPCC_SCRIPT] if w == contract.TPCC else ["-e", f"workload={w}", "k6/oltp.js"]
    return [*script[:-1], "-e", f"threads={threads}", "-e", f"testid={entry['testid']}", *common, *extra, script[-1]]


def check_sample(entry, rc, results):
    """ReportError when the sample's k6 run failed or wrote no manifest."""
    w = entry["workload"]
    if rc != 0:
        raise ReportError(f"the {w} run (testid {entry['testid']}) failed: k6 exited {rc}")
    if not (results / f"{entry['testid']}.json").is_file():
        raise ReportError(f"the {w} run (testid {entry['testid']}) wrote no manifest "
                          f"{results / (entry['testid'] + '.json')}")


def prepare_commands(w, common, threads):
    """[(what, k6 arguments)] that drop and load the tables of workload w: prepare.js's cleanup and
    prepare for sysbench's, tpcc.js's (go-tpc's) for TPC-C."""
    if w == contract.TPCC:
        return [("tpcc.js cleanup", [*common, "-e", "tpcc_command=cleanup", contract.TPCC_SCRIPT]),
                ("tpcc.js prepare", [*common, "-e", "tpcc_command=prepare", "-e", f"threads={threads}",
                                     contract.TPCC_SCRIPT])]
    return [("prepare.js cleanup", [*common, "-e", "command=cleanup", "k6/prepare.js"]),
            ("prepare.js prepare", [*common, "-e", f"threads={threads}", "k6/prepare.js"])]


def sample_testid(base, w, repeat, repeats):
    return f"{base}-{w}" + (f"-r{repeat}" if repeats > 1 else "")


def save_json(path, data):
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.rename(path)


def report_cmd(a, results, runs):
    cmd = [sys.executable, "-m", "tidbbench.report.cli", "--results", str(results)]
    for flag, v in (("--out", a.out), ("--prometheus", a.prometheus), ("--grafana", a.grafana),
                    ("--grafana-password-file", a.grafana_password_file)):
        if v:
            cmd += [flag, v]
    return cmd + runs


def run_sweep(a, workloads, extra, base, argv):
    """One sweep (no --plan) from parse_args' result; tidbbench.sweep.cli.main calls it."""
    results = Path(a.results).resolve()
    results.mkdir(parents=True, exist_ok=True)
    sweep_id = f"sweep-{base}"
    path = results / f"{sweep_id}.json"
    if path.exists():
        print(f"error: sweep '{sweep_id}' exists ({path}); choose another --id", file=sys.stderr)
        return 2
    opts = {}
    for k, flag in (("time", a.time), ("warmup_time", a.warmup_time), ("tables", a.tables),
                    ("table_size", a.table_size), ("mysql_db", a.mysql_db)):
        if flag is not None:
            opts[k] = flag
    opts.update(extra)
    common = [x for k, v in opts.items() for x in ("-e", f"{k}={v}")]
    bad = k6_check(common, workloads, a.threads)
    if bad:
        print(f"error: {bad} (nothing was run)", file=sys.stderr)
        return 2
    tables = int(a.tables or extra.get("tables") or DEFAULTS["tables"])
    manifest = {
        "sweep": sweep_id, "status": "running", "created": now_ms(), "finished": None,
        "command": scrub_argv(["scripts/sweep", *argv]),
        "workloads": workloads, "threads": [int(t) for t in a.threads.split(",")], "repeats": a.repeats,
        "options": {k: ("***" if k == "mysql_password" else v) for k, v in opts.items()},
        "stack": stack_commit(),
        "analyze": a.analyze, "reset": a.reset, "prepare_threads": a.prepare_threads if a.reset else None,
        "runs": [],
    }

    def save():
        save_json(path, manifest)

    save()
    print(f"sweep={sweep_id} workloads={','.join(workloads)} threads={a.threads} repeats={a.repeats}", flush=True)
    cache = {}

    def analyze_target():
        if "t" not in cache:
            cache["t"] = target(extra, a.mysql_db)
        return cache["t"]
    try:
        # repeats round-robin over the workloads, so a drift hits every workload alike
        for rep in range(1, a.repeats + 1):
            for w in workloads:
                entry = {"workload": w, "testid": sample_testid(base, w, rep, a.repeats), "repeat": rep}
                run_sample(entry, common, a.threads, results, a, tables, analyze_target)
                manifest["runs"].append(entry)
                save()
    except (ReportError, KeyboardInterrupt) as e:
        manifest["status"] = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
        manifest["finished"] = now_ms()
        manifest["error"] = str(e) or "interrupted"
        save()
        print(f"error: sweep {sweep_id} {manifest['status']}: {manifest['error']} "
              f"(manifest {path} lists the {len(manifest['runs'])} finished run(s))", file=sys.stderr)
        return 130 if isinstance(e, KeyboardInterrupt) else getattr(e, "code", 1) or 1
    manifest["status"] = "complete"
    manifest["finished"] = now_ms()
    save()
    print(f"sweep {sweep_id} done: {', '.join(r['testid'] for r in manifest['runs'])} (manifest {path})", flush=True)
    if a.no_report:
        return 0
    return subprocess.run(report_cmd(a, results, [a.baseline, sweep_id] if a.baseline else [sweep_id])).returncode

