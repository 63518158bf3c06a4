"""Does the database or the load generator set the pace? Our k6 against sysbench 1.0.20 on the
same server, tables, threads and duration, the database on one core and the client on another
(as with a dedicated load-generator host), alternating, several rounds: medians with their
spread (min-max) of the ratios ours / sysbench.

Figures (--figures, default runs,tax,scale,setup; prepare and the --soak-rss mode on request):
  runs     QPS and p95 ours/sysbench and client CPU per query, per target, workload and thread
           count (--workloads all: the eleven of k6/contract.json; bulk_insert's cells are rows/s
           and CPU per row, on fresh tables of their own for every run); k6's CPU per query against gofloor's (bin/gofloor, k6/cmd/gofloor: the same
           point select through database/sql and our driver in a plain Go loop, no k6, no
           JavaScript: the floor for a k6 + xk6-sql build; point select only); on TiDB the two
           clients' statements compared (information_schema.statements_summary: sysbench runs
           against <db>_sb, ours against <db>, so SCHEMA_NAME tells them apart).
  tax      the observability tax: QPS with remote write to Prometheus on / off and with k6's web
           dashboard on / off; Prometheus' own CPU over the runs; the series a 3-step run of each
           workload creates; Prometheus storage per hour of run.
  scale    k6 RSS and CPU per thread at --scale-threads threads (1,500: the seeds' top step) against
           sysbench at as many threads, and the time to connect them all.
  setup    memory per thread (peak RSS / threads) and set-up time (from the process' start to
           the step's first measured second) of sysbench and k6 at --setup-threads (100,500,1500),
           point select, --setup-seconds each (benchscale.py).
  prepare  rows/s of prepare, ours/sysbench (4 threads), and the ceiling for a client that costs
           nothing.
  tpcc     TPC-C (k6/tpcc.js) against go-tpc v1.0.7's CLI (bin/go-tpc): prepare rows/s and client
           CPU per transaction, --tpcc-warehouses, --tpcc-threads, --tpcc-seconds (benchtpcc.py).
  --soak-rss [--minutes 10]: only this: k6's RSS (/proc, every --soak-interval s) over a
           full-speed oltp_point_select run: its mean over the minute around minute
           min(2, minutes/3) against its mean over the last minute (RssAnon and RssFile beside).

It prints the command line and the conditions (cores, pinning, GOMAXPROCS, load, and at the end
how much CPU other processes took: a busy machine makes the figures noisy) with its figures.
k6 (oltp.js) and gofloor run with GOMAXPROCS=1 on a host of 4 cores or fewer unless GOMAXPROCS
is set, as scripts/k6 runs oltp.js against a local database (prepare.js keeps every core).
Without remote write unless the figure is about it (tax, soak): the load generator is measured.

  tools/bench [--targets mariadb,tidb] [--workloads oltp_point_select,oltp_read_only,oltp_read_write,oltp_write_only | all]
                [--threads 8,64] [--seconds 15] [--rounds 3] [--figures runs,tax,scale,setup[,prepare][,tpcc]]
                [--scale-threads 1500] [--setup-threads 100,500,1500] [--no-pin | --pin-db 0 --pin-client 1] [--db sbtest_bench]
  tools/bench --soak-rss [--minutes 10] [--targets mariadb]

Needs the local stack (scripts/stack up --target both) and sysbench (apt-get install sysbench).
The database servers' CPU affinity is restored when the bench ends (also on Ctrl-C / SIGTERM).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from tidbbench.k6env import read_k6_env
from tbstools import benchkit as bk
from tbstools.benchkit import PORTS, k6_result, sysbench_queries, verdict
from tbstools import benchscale, benchtpcc

ROOT = Path(__file__).resolve().parents[2]

STATE = Path(os.environ.get("TBS_STATE", ROOT / ".stack"))
SERVER_PID = {"tidb": "tidb.pid", "mariadb": "mariadbd.pid"}
WORKLOADS = ["oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only"]
FIGURES = ["runs", "tax", "scale", "setup", "prepare", "tpcc"]
CONTRACT = json.loads((ROOT / "k6/contract.json").read_text())
DB = "sbtest_bench"  # --db: ours; sysbench's is DB + "_sb"
PIN = None  # bk.Pinning while the database is pinned
SBCFG = None  # bk.SysbenchConfig: sysbench's password file
PROM = os.environ.get("TBS_PROMETHEUS_URL", "http://127.0.0.1:9090")


def password():
    return (STATE / "secrets/sbtest").read_text().strip()


def server_pid(target):
    f = STATE / "run" / SERVER_PID[target]
    try:
        pid = int(f.read_text().split()[0])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, IndexError):
        sys.exit(f"error: the local {target} server is not running ({f}); start it with scripts/stack up --target both")


def run(cmd, env=None, probe=None, interval=1.0, check=True, on_line=None):
    """Popen + wait4 so the rusage is this child's alone; the child on the client core.
    probe(pid) is called every `interval` s while the child runs; on_line(line, time) as each
    line of its output arrives."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT / "k6",
                         preexec_fn=PIN.client_preexec() if PIN else None)
    stop = threading.Event()
    th = None
    if probe:
        def loop():
            while not stop.is_set():
                probe(p.pid)
                stop.wait(interval)
        th = threading.Thread(target=loop, daemon=True)
        th.start()
    if on_line:
        lines = []
        for line in p.stdout:
            on_line(line, time.time())
            lines.append(line)
        out = "".join(lines)
    else:
        out = p.stdout.read()
    stop.set()
    if th:
        th.join()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.time() - t0
    if p.returncode and check:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd[:4])} ...\n{out[-3000:]}")
    return out, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def go_env(env):
    """scripts/k6's policy for a database on this host: one core for k6 on small machines."""
    if not env.get("GOMAXPROCS") and (os.cpu_count() or 1) <= 4:
        env["GOMAXPROCS"] = "1"
    return env


def env_file():
    return read_k6_env(STATE / "k6.env")


def k6_env(prepare=False, remote_write=False, dashboard_port=None):
    env = dict(os.environ) if prepare else go_env(dict(os.environ))
    for k, v in env_file().items():
        env.setdefault(k, v)
    # the load generator is measured, not the remote-write output, unless asked for
    env["K6_OUT"] = env_file().get("K6_OUT", "experimental-prometheus-rw") if remote_write else ""
    env["K6_LOG_FORMAT"] = "raw"
    env["results_dir"] = str(ROOT / "results")
    if dashboard_port:  # as scripts/k6 serves it (no HTML export)
        env.update(K6_WEB_DASHBOARD="true", K6_WEB_DASHBOARD_HOST="127.0.0.1", K6_WEB_DASHBOARD_PORT=str(dashboard_port),
                   K6_WEB_DASHBOARD_PERIOD="2s", K6_WEB_DASHBOARD_TAGS="kind,threads")
        cfg = ROOT / "grafana/k6-web-dashboard/config.json"
        if cfg.exists():
            env["XK6_DASHBOARD_CONFIG"] = str(cfg)
    else:
        env.pop("K6_WEB_DASHBOARD", None)
    return env


def sysbench_cmd(target, workload, extra, command="run", db=None):
    return ["sysbench", workload, f"--config-file={SBCFG.path}", "--db-driver=mysql", "--mysql-host=127.0.0.1",
            f"--mysql-port={PORTS[target]}", "--mysql-user=sbtest", f"--mysql-db={db or DB + '_sb'}", *extra, command]


# --k6-option name=value: more options for every oltp.js run of ours (e.g. threads_per_vu=1)
K6_OPTIONS = {}


def k6_cmd(script, target, opts, db=None):
    cmd = [str(ROOT / "bin/k6"), "run", "--quiet", "--no-usage-report", "-e", f"mysql_port={PORTS[target]}",
           "-e", f"mysql_db={db or DB}"]
    for k, v in {**opts, **(K6_OPTIONS if script == "oltp.js" else {})}.items():
        cmd += ["-e", f"{k}={v}"]
    return cmd + [script]


def gofloor_cmd(threads, seconds, tables, table_size):
    return [str(ROOT / "bin/gofloor"), "-threads", str(threads), "-seconds", str(seconds), "-tables", str(tables),
            "-table-size", str(table_size)]


def gofloor_env(target):
    env = go_env(dict(os.environ))
    env["TBS_GOFLOOR_DSN"] = f"sbtest:{password()}@tcp(127.0.0.1:{PORTS[target]})/{DB}"
    return env


def k6_queries(out):
    step = k6_result(out)["steps"][0]
    return step["queries"]["total"], step["qps"]


def mysql_cmd(target):
    return ["mariadb", "--protocol=tcp", "-h127.0.0.1", f"-P{PORTS[target]}", "-usbtest"]


def sql(target, stmt):
    subprocess.run([*mysql_cmd(target), "-e", stmt], check=True, env=bk.sql_env(password()))


def table_count(target, db):
    return int(subprocess.run([*mysql_cmd(target), "-N", "-e",
                               f"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='{db}'"],
                              capture_output=True, text=True, check=True, env=bk.sql_env(password())).stdout.strip())


def make_tables(target, db, tables, rows, force=False):
    """sbtest1..N in `db` (prepare.js, rows made on the server), unless they are there."""
    if force or table_count(target, db) < tables:
        sql(target, f"DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}")
        run(k6_cmd("prepare.js", target, {"tables": tables, "table_size": rows, "threads": 4}, db=db), k6_env(prepare=True))


def prepare(target, tables, rows, threads, rounds):
    """rows/s of prepare, sysbench's oltp_common prepare against ours, alternating; and the
    ceiling for any client: sysbench's rows/s if the server had had the CPU sysbench used."""
    sb, ours, ceiling = [], [], []
    for _ in range(rounds):
        sql(target, f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}")
        b0 = bk.busy_cpu_seconds()
        _, wall, cpu, _ = run(sysbench_cmd(target, "oltp_common", [f"--tables={tables}", f"--table-size={rows}",
                                                                   f"--threads={threads}"], "prepare", db=DB))
        server = bk.busy_cpu_seconds() - b0 - cpu  # the database and everything else
        sb.append(tables * rows / wall)
        # a client costing nothing leaves the server all cores (never more than the wall time allows)
        ceiling.append(sb[-1] * (os.cpu_count() * wall) / max(server, 1e-9))
        sql(target, f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}")
        _, wall, _, _ = run(k6_cmd("prepare.js", target, {"tables": tables, "table_size": rows, "threads": threads}),
                            k6_env(prepare=True))
        ours.append(tables * rows / wall)
    return statistics.median(sb), statistics.median(ours), statistics.median(ceiling)


# ---------------------------------------------------------------- runs


# bulk_insert's event is one row of a multi-row INSERT (sysbench's bulk_insert.lua): its cells
# compare rows/s (sysbench's "transactions") and client CPU per row, not queries; each thread
# writes its own table sbtest<thread>, in databases of their own (<db>_bulk, <db>_bulk_sb), made
# afresh for every run, since sysbench numbers its rows from 1 in every run.
BULK = "bulk_insert"


def bulk_tables(target, threads, tool):
    """Fresh bulk_insert tables for `tool` (sysbench: its own prepare; ours: prepare.js)."""
    if tool == "sysbench":
        db = DB + "_bulk_sb"
        sql(target, f"DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}")
        run(sysbench_cmd(target, BULK, [f"--threads={threads}"], "prepare", db=db))
        return db
    db = DB + "_bulk"
    sql(target, f"DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}")
    run(k6_cmd("prepare.js", target, {"workload": BULK, "threads": threads}, db=db), k6_env(prepare=True))
    return db


def sysbench_rate(workload, out):
    """(count, per second) of a sysbench run: queries, or for bulk_insert its events (rows)."""
    if workload != BULK:
        return sysbench_queries(out)
    m = re.search(r"^\s+transactions:\s+(\d+)\s+\(([\d.]+) per sec", out, re.M)
    return int(m.group(1)), float(m.group(2))


def figure_runs(target, a, threads):
    sb_db = DB + "_sb"
    for workload in a.workloads:
        floor = workload == "oltp_point_select"
        bulk = workload == BULK
        r = {n: {k: [] for k in ("sbq", "ourq", "sbp", "ourp", "sbc", "ourc", "flq", "flc")} for n in threads}
        stmts = {} if target == "tidb" else None  # (schema, digest) -> [execs, ns, plan-cache hits, text]
        snap = lambda: bk.stmt_summary(mysql_cmd(target), bk.sql_env(password()), [sb_db, DB])  # noqa: E731
        for _ in range(a.rounds):
            stmt0 = snap() if stmts is not None else None
            for n in threads:
                db = bulk_tables(target, n, "sysbench") if bulk else None
                size = [] if bulk else [f"--tables={a.tables}", f"--table-size={a.table_size}"]  # bulk_insert.lua has neither
                out, _, cpu, _ = run(sysbench_cmd(target, workload, [*size, f"--threads={n}", f"--time={a.seconds}"], db=db))
                total, qps = sysbench_rate(workload, out)
                r[n]["sbq"].append(qps)
                r[n]["sbc"].append(cpu / total)
                r[n]["sbp"].append(bk.sysbench_p95(out))
            db = bulk_tables(target, max(threads), "ours") if bulk else None
            out, _, cpu, _ = run(k6_cmd("oltp.js", target, {"workload": workload, "tables": a.tables,
                                                            "table_size": a.table_size, "threads": ",".join(map(str, threads)),
                                                            "time": a.seconds}, db=db), k6_env())
            if stmts is not None:  # sysbench's and ours only: gofloor (below) also uses our schema
                for k, v in bk.stmt_delta(stmt0, snap()).items():
                    acc = stmts.setdefault(k, [0, 0, 0, v[3]])
                    acc[0] += v[0]
                    acc[1] += v[1]
                    acc[2] += v[2]
            steps = {s["threads"]: s for s in k6_result(out)["steps"]}
            count = (lambda s: s["transactions"]) if bulk else (lambda s: s["queries"]["total"])  # noqa: E731
            all_q = sum(count(s) for s in steps.values())
            for n in threads:
                s = steps[n]
                total = max(count(s), 1)
                # the step's own CPU (k6/x/tbs marks); else its share of the process' CPU
                c = s.get("client_cpu_s")
                r[n]["ourq"].append(s["tps"] if bulk else s["qps"])
                r[n]["ourp"].append(s["latency_ms"]["pct_value"])
                r[n]["ourc"].append((c if c is not None else cpu * total / max(all_q, 1)) / total)
            if floor:
                for n in threads:
                    out, _, cpu, _ = run(gofloor_cmd(n, a.seconds, a.tables, a.table_size), gofloor_env(target))
                    total, qps = sysbench_queries(out)
                    r[n]["flq"].append(qps)
                    r[n]["flc"].append(cpu / total)
        print_runs(target, workload, threads, r, bulk, floor)
        if stmts is not None:
            print_statements(target, workload, stmts, sb_db)


def print_runs(target, workload, threads, r, bulk, floor):
    """figure_runs' lines of one workload: ours against sysbench (and gofloor), step by step."""
    median = statistics.median
    for n in threads:
        x = r[n]
        qr = [o / s for o, s in zip(x["ourq"], x["sbq"])]
        pr = [o / s for o, s in zip(x["ourp"], x["sbp"]) if s]
        cr = [o / s for o, s in zip(x["ourc"], x["sbc"])]
        what, per = ("rows/s", "row") if bulk else ("QPS", "query")
        print(f"runs: {target} {workload} {n} threads: {what} ours/sysbench {bk.fmt_spread(qr)} "
              f"(sysbench {median(x['sbq']):.0f}, ours {median(x['ourq']):.0f}); "
              f"p95 ours/sysbench {bk.fmt_spread(pr)} (sysbench {median(x['sbp']):.2f} ms, ours {median(x['ourp']):.2f} ms); "
              f"CPU/{per} ours/sysbench {bk.fmt_spread(cr)} (sysbench {median(x['sbc']) * 1e6:.1f} us, ours {median(x['ourc']) * 1e6:.1f} us); "
              f"targets {what} >= 1.0 {verdict(median(qr) >= 1.0)}, p95 within one bucket (<= {bk.SYSBENCH_BUCKET:.3f}) "
              f"{verdict(median(pr) <= bk.SYSBENCH_BUCKET) if pr else 'n/a'}", flush=True)
        if floor:
            fr = [o / f for o, f in zip(x["ourc"], x["flc"])]
            fq = [f / s for f, s in zip(x["flq"], x["sbq"])]
            print(f"floor: {target} {workload} {n} threads: k6 CPU/query / gofloor's {bk.fmt_spread(fr)} "
                  f"(gofloor {median(x['flc']) * 1e6:.1f} us; target <= 1.2 {verdict(median(fr) <= 1.2)}); "
                  f"gofloor QPS/sysbench {bk.fmt_spread(fq)}", flush=True)
        else:
            print(f"floor: {target} {workload} {n} threads: no gofloor figure (gofloor runs oltp_point_select only); "
                  f"k6 CPU/query {median(x['ourc']) * 1e6:.1f} us, {median(cr):.2f}x sysbench's", flush=True)


def fixed(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def print_statements(target, workload, stmts, sb_db):
    """figure_runs' lines of the TiDB statement summary: sysbench's statements against ours."""
    rows = bk.stmt_compare(stmts, sb_db, DB)
    top = max((max(r[1], r[2]) for r in rows), default=0)
    busy = [r for r in rows if max(r[1], r[2]) >= top / 100]  # the workload's own, not set-up queries
    tot = lambda i, j: sum((r[i] or 0) * (r[j] or 0) for r in busy)  # noqa: E731
    sn_all, on_all = sum(r[1] for r in busy), sum(r[2] for r in busy)
    if busy and sn_all and on_all:
        print(f"stmt: {target} {workload} all: execs sysbench {sn_all} ours {on_all}; server time per statement, "
              f"mean ms sysbench {tot(1, 3) / sn_all:.3f} ours {tot(2, 4) / on_all:.3f}; "
              f"plan-cache hits % sysbench {tot(1, 5) / sn_all:.1f} ours {tot(2, 6) / on_all:.1f}", flush=True)
    for text, sn, on, sl, ol, sh, oh in busy[:12]:
        print(f"stmt: {target} {workload}: execs sysbench {sn} ours {on}; avg ms sysbench {fixed(sl)} ours {fixed(ol)}; "
              f"plan-cache hits % sysbench {fixed(sh, 1)} ours {fixed(oh, 1)}; {text[:90]}", flush=True)
    if not rows:
        print(f"stmt: {target} {workload}: no statement summary rows (tidb_enable_stmt_summary off?)", flush=True)


# ---------------------------------------------------------------- observability tax


def figure_tax(target, a, threads):
    n = threads[0]
    opts = {"workload": "oltp_point_select", "tables": a.tables, "table_size": a.table_size, "threads": n, "time": a.seconds}
    data = STATE / "data/prometheus"
    modes = ["off", "rw", "dash"]
    qps = {m: [] for m in modes}
    cost = {m: [0.0, 0.0, 0.0] for m in modes}  # prometheus CPU s, data dir bytes, wall s
    for i in range(a.rounds):
        for m in modes[i % 3:] + modes[:i % 3]:  # rotate the order
            env = k6_env(remote_write=m == "rw", dashboard_port=bk.free_port() if m == "dash" else None)
            c0, _ = bk.prom_self(PROM)
            d0 = bk.dir_bytes(data)
            out, wall, _, _ = run(k6_cmd("oltp.js", target, opts), env)
            c1, _ = bk.prom_self(PROM)
            d1 = bk.dir_bytes(data)
            qps[m].append(k6_queries(out)[1])
            cost[m][0] += c1 - c0
            cost[m][1] += d1 - d0
            cost[m][2] += wall
    rw = [x / y for x, y in zip(qps["rw"], qps["off"])]
    da = [x / y for x, y in zip(qps["dash"], qps["off"])]
    print(f"tax: {target} oltp_point_select {n} threads: QPS remote write on/off {bk.fmt_spread(rw, 3)}, "
          f"web dashboard on/off {bk.fmt_spread(da, 3)} (target >= 0.97: remote write {verdict(statistics.median(rw) >= 0.97)}, "
          f"dashboard {verdict(statistics.median(da) >= 0.97)})", flush=True)
    per_min = {m: 60 * cost[m][0] / cost[m][2] for m in modes}
    print(f"prometheus-cpu: {target}: Prometheus' own CPU {per_min['rw']:.2f} s per minute of run with remote write, "
          f"{per_min['off']:.2f} s per minute without (scrapes and other clients): {per_min['rw'] - per_min['off']:+.2f} s/min "
          f"({(per_min['rw'] - per_min['off']) / 60 * 100:+.1f}% of a core) for one run", flush=True)
    # the series a 3-step run of each workload creates, and what the runs add to the storage
    steps = "1,2,4"
    grow, secs = 0, 0.0
    for workload in a.workloads:
        d0 = bk.dir_bytes(data)
        _, h0 = bk.prom_self(PROM)
        t0 = time.time()
        out, wall, _, _ = run(k6_cmd("oltp.js", target, {**opts, "workload": workload, "threads": steps}),
                              k6_env(remote_write=True))
        d1 = bk.dir_bytes(data)
        _, h1 = bk.prom_self(PROM)
        grow += d1 - d0
        secs += wall
        res = k6_result(out)
        count = bk.prom_series_count(PROM, res["testid"], t0 - 60, time.time() + 60)
        print(f"series: {target} {workload} 3 steps (threads {steps}, {a.seconds} s each): {count} series with its testid; "
              f"head series {h1 - h0:+.0f}", flush=True)
    base = cost["off"][1] / max(cost["off"][2], 1e-9) * 3600
    withrw = (grow + cost["rw"][1]) / max(secs + cost["rw"][2], 1e-9) * 3600
    print(f"storage: Prometheus data dir grew {withrw / 2**20:.1f} MiB per hour of run with remote write, "
          f"{base / 2**20:.1f} MiB per hour during runs without (scrapes, other clients): "
          f"{(withrw - base) / 2**20:+.1f} MiB per hour of run", flush=True)


# ---------------------------------------------------------------- soak


def soak(target, a):
    """k6's resident memory over a --minutes full-speed point select. The figure compares two
    one-minute means (the samples within 30 s of minute min(2, minutes/3), and the last minute
    of the load), not two samples: Go's collector makes a sawtooth of several MiB that two
    samples can catch anywhere (docs/bench.md). VmRSS is the figure; RssAnon (what the process
    allocated) and RssFile (the binary's pages, filled in as code runs) say which part moved."""
    secs = max(1, round(a.minutes * 60))
    early = min(2.0, a.minutes / 3) * 60
    half = min(30.0, early / 2)
    samples = []

    def probe(pid):
        m = bk.mem_mib(pid)
        if "VmRSS" in m:
            samples.append((time.time(), m))
    out, _, _, peak = run(k6_cmd("oltp.js", target, {"tables": a.tables, "table_size": a.table_size,
                                                     "threads": a.threads[0], "time": secs}),
                          k6_env(remote_write=True), probe=probe, interval=a.soak_interval)
    step = k6_result(out)["steps"][0]
    m0 = step["window"]["measure_start"] / 1000
    m1 = step["window"]["measure_end"] / 1000
    load = [(t - m0, m) for t, m in samples if m0 <= t <= m1 + a.soak_interval / 2]
    first = [m for t, m in load if abs(t - early) <= half]
    end = load[-1][0] if load else 0
    last = [m for t, m in load if t >= end - 2 * half and t > early + half]
    if not first or not last:
        sys.exit(f"error: too few memory samples in the run's load window ({len(load)} every {a.soak_interval:g} s, "
                 f"{len(first)} around minute {early / 60:.2f} and {len(last)} in the last minute): "
                 f"use more --minutes or a shorter --soak-interval")

    def mean(ms, k):
        v = [m[k] for m in ms if k in m]
        return sum(v) / len(v) if v else float("nan")
    r1, r2 = mean(first, "VmRSS"), mean(last, "VmRSS")
    g = (r2 / r1 - 1) * 100
    parts = ", ".join(f"{k} {mean(first, k):.1f} -> {mean(last, k):.1f} MiB" for k in ("RssAnon", "RssFile"))
    print(f"soak-rss: {target} oltp_point_select {a.threads[0]} threads, {secs} s at full speed (QPS {step['qps']:.0f}, "
          f"remote write on), RSS sampled every {a.soak_interval:g} s: mean {r1:.1f} MiB over minute "
          f"{(early - half) / 60:.2f}-{(early + half) / 60:.2f} ({len(first)} samples), {r2:.1f} MiB over minute "
          f"{(end - 2 * half) / 60:.2f}-{end / 60:.2f} ({len(last)}): growth {g:+.1f}% (target <= 10%: {verdict(g <= 10)}); "
          f"{parts}; peak {peak:.1f} MiB", flush=True)


# ---------------------------------------------------------------- main


# the clients as benchscale's figures run them: this module's functions, with the pinning, the
# sysbench config file and the database main sets up
CLIENTS = benchscale.Clients(run=run, sysbench_cmd=sysbench_cmd, k6_cmd=k6_cmd, k6_env=k6_env)


def parse_args():
    ap = argparse.ArgumentParser(prog="tools/bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", default="mariadb,tidb")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--threads", default="8,64")
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--table-size", type=int, default=50000)
    ap.add_argument("--figures", default="runs,tax,scale,setup", help=f"any of {','.join(FIGURES)}")
    ap.add_argument("--scale-threads", type=int, default=1500)
    ap.add_argument("--scale-target", default="", help="target of the scale and setup figures (default: the first of --targets)")
    ap.add_argument("--setup-threads", default="100,500,1500", help="thread counts of the setup figure")
    ap.add_argument("--setup-seconds", type=int, default=10, help="measured seconds of each setup figure run")
    ap.add_argument("--setup-rounds", type=int, default=1, help="runs of each client per thread count (medians)")
    ap.add_argument("--prepare-table-size", type=int, default=200000,
                    help="rows per table for the prepare comparison (k6's start-up is part of its time)")
    ap.add_argument("--tpcc-warehouses", type=int, default=1, help="warehouses of the tpcc figure")
    ap.add_argument("--tpcc-threads", type=int, default=2, help="threads of the tpcc figure's prepare and run")
    ap.add_argument("--tpcc-seconds", type=int, default=20, help="seconds of the tpcc figure's runs")
    ap.add_argument("--soak-rss", action="store_true", help="only the RSS soak: a --minutes long oltp_point_select run")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--soak-interval", type=float, default=3.0, help="seconds between RSS samples")
    ap.add_argument("--no-pin", action="store_true", help="leave the database and the client on every core")
    ap.add_argument("--pin-db", type=int, default=0)
    ap.add_argument("--pin-client", type=int, default=1)
    ap.add_argument("--db", default=DB, help="database of ours; sysbench's is <db>_sb (both made by prepare.js)")
    ap.add_argument("--k6-option", action="append", default=[], metavar="NAME=VALUE",
                    help="an option (k6/contract.json) for every oltp.js run of ours, e.g. threads_per_vu=1; repeatable")
    return ap.parse_args()


def checked_args():
    """The arguments, each checked (a clear error naming the bad value and the valid ones)
    -> (args, targets, figures, the target of the scale and setup figures)."""
    a = parse_args()
    for kv in a.k6_option:
        name, eq, value = kv.partition("=")
        if not eq or name not in CONTRACT["options"]:
            sys.exit(f"error: --k6-option '{kv}' must be NAME=VALUE with NAME an option of k6/contract.json "
                     f"(e.g. threads_per_vu=1)")
        K6_OPTIONS[name] = value
    targets = [t for t in a.targets.split(",") if t]
    for t in targets:
        if t not in PORTS:
            sys.exit(f"error: unknown target '{t}' (valid: {', '.join(PORTS)})")
    a.workloads = list(CONTRACT["workloads"]) if a.workloads == "all" else [w for w in a.workloads.split(",") if w]
    for w in a.workloads:
        if w not in CONTRACT["workloads"]:
            sys.exit(f"error: unknown workload '{w}' (valid: all, or any of {', '.join(CONTRACT['workloads'])})")
    figures = [f for f in a.figures.split(",") if f]
    for f in figures:
        if f not in FIGURES:
            sys.exit(f"error: unknown figure '{f}' (valid: {', '.join(FIGURES)})")
    for name in ("threads", "setup_threads"):
        try:
            setattr(a, name, [int(x) for x in getattr(a, name).split(",")])
            assert all(x > 0 for x in getattr(a, name))
        except (ValueError, AssertionError):
            sys.exit(f"error: --{name.replace('_', '-')} '{getattr(a, name)}' must be positive integers separated by commas")
    for name in ("seconds", "rounds", "tables", "table_size", "scale_threads", "setup_seconds", "setup_rounds",
                 "tpcc_warehouses", "tpcc_threads", "tpcc_seconds"):
        if getattr(a, name) < 1:
            sys.exit(f"error: --{name.replace('_', '-')} {getattr(a, name)} must be at least 1")
    if a.minutes <= 0 or a.soak_interval <= 0:
        sys.exit(f"error: --minutes {a.minutes:g} and --soak-interval {a.soak_interval:g} must be above 0")
    if not re.fullmatch(r"sbtest[A-Za-z0-9_]{0,40}", a.db):
        sys.exit(f"error: --db '{a.db}' must be sbtest followed by letters, digits or _ (the sbtest user owns sbtest*)")
    scale_target = a.scale_target or targets[0]
    if scale_target not in PORTS:
        sys.exit(f"error: unknown --scale-target '{scale_target}' (valid: {', '.join(PORTS)})")
    needs_sysbench = not a.soak_rss and bool({"runs", "scale", "setup", "prepare"} & set(figures))
    if needs_sysbench and not shutil.which("sysbench"):
        sys.exit("error: sysbench is not installed (the runs, scale and prepare figures compare with sysbench 1.0.20): "
                 "apt-get install sysbench, or --figures tax")
    if "tpcc" in figures and not benchtpcc.GOTPC.exists():
        sys.exit(f"error: {benchtpcc.GOTPC} is missing (go-tpc v1.0.7's CLI, the tpcc figure's reference): scripts/build gotpc")
    if (os.cpu_count() or 1) < 2 and not a.no_pin:
        sys.exit("error: pinning needs 2 cores (this machine has 1): use --no-pin")
    return a, targets, figures, scale_target


def print_setup(a):
    git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    k6v = subprocess.run([str(ROOT / "bin/k6"), "version"], capture_output=True, text=True).stdout.split("\n")[0]
    print("command: tools/bench " + shlex.join(sys.argv[1:]), flush=True)
    print(f"setup: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, commit {git}, {os.cpu_count()} cores, "
          f"{'no pinning' if a.no_pin else f'database threads on core {a.pin_db}, client on core {a.pin_client}'}, "
          f"k6 and gofloor GOMAXPROCS={go_env(dict(os.environ)).get('GOMAXPROCS', 'Go default')}, {k6v}, "
          f"load average {os.getloadavg()[0]:.2f}; tables {a.tables} x {a.table_size} rows", flush=True)


def main():
    global PIN, SBCFG, DB
    a, targets, figures, scale_target = checked_args()
    DB = a.db
    PIN = None if a.no_pin else bk.Pinning(a.pin_db, a.pin_client)
    pids = {t: server_pid(t) for t in set(targets) | {scale_target}}
    bk.exit_on_signals()
    print_setup(a)
    cond = bk.Conditions(list(pids.values()) + [int((STATE / "run/prometheus.pid").read_text().split()[0])]
                         if (STATE / "run/prometheus.pid").exists() else list(pids.values()))
    SBCFG = bk.SysbenchConfig(STATE, password())
    try:
        if a.soak_rss:
            make_tables(targets[0], DB, a.tables, a.table_size)
            if PIN:
                PIN.pin_server(pids[targets[0]])
            soak(targets[0], a)
            return
        for target in targets:
            figures_of_target(target, targets, figures, pids, a)
        for name, figure in (("scale", benchscale.figure_scale), ("setup", benchscale.figure_setup)):
            if name in figures:  # both clients' tables on the scale target, its server pinned
                make_tables(scale_target, DB, a.tables, a.table_size)
                make_tables(scale_target, DB + "_sb", a.tables, a.table_size)
                if PIN:
                    PIN.pin_server(pids[scale_target])
                figure(CLIENTS, scale_target, a)
    finally:
        if PIN:
            PIN.restore()
        SBCFG.close()
        print(cond.summary(), flush=True)


def figures_of_target(target, targets, figures, pids, a):
    """The tpcc, prepare, runs and tax figures of one target (the tables made and the server pinned first)."""
    if "tpcc" in figures:
        clients = benchtpcc.Clients(run=run, k6_cmd=k6_cmd, k6_env=k6_env, go_env=go_env,
                                    pin=lambda t: PIN and PIN.pin_server(pids[t]), unpin=lambda: PIN and PIN.restore())
        benchtpcc.figure_tpcc(clients, STATE, target, a)
    if not {"prepare", "runs", "tax"} & set(figures):
        return
    if "prepare" in figures:
        sb, ours, ceiling = prepare(target, a.tables, a.prepare_table_size, 4, a.rounds)
        print(f"prepare: {target} (rows/s, 4 threads): sysbench {sb:.0f} rows/s, ours {ours:.0f} rows/s, ratio {ours / sb:.2f}; "
              f"ceiling for a client that costs nothing: {ceiling:.0f} rows/s ({ceiling / sb:.2f}x sysbench)", flush=True)
    resized = "prepare" in figures and a.prepare_table_size != a.table_size
    make_tables(target, DB, a.tables, a.table_size, force=resized)
    if "runs" in figures:
        make_tables(target, DB + "_sb", a.tables, a.table_size)
    if PIN:
        PIN.pin_server(pids[target])
    if "runs" in figures:
        figure_runs(target, a, a.threads)
    if "tax" in figures and target == targets[0]:
        figure_tax(target, a, a.threads)
    if PIN:
        PIN.restore()


def instances_compare(argv):
    """`tools/bench --instances-compare [--target tidb] [--threads 8] [--seconds 15] [--rounds 2]`:
    the QPS of one oltp_point_select run split over 2 k6 processes (`scripts/k6 run --instances 2`)
    against the same run in 1 (`--instances 1`), alternately, remote write off; prints each run,
    the medians and the ratio (2 instances / 1)."""
    ap = argparse.ArgumentParser(prog="tools/bench --instances-compare")
    ap.add_argument("--instances-compare", action="store_true")
    ap.add_argument("--target", default="tidb", choices=sorted(PORTS))
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--table-size", type=int, default=50000)
    ap.add_argument("--db", default=DB)
    a = ap.parse_args(argv)
    if a.threads < 2 or a.seconds < 1 or a.rounds < 1:
        sys.exit(f"error: --threads {a.threads} (2 or more), --seconds {a.seconds} and --rounds {a.rounds} (1 or more)")
    make_tables(a.target, a.db, a.tables, a.table_size)
    env = dict(os.environ, K6_OUT="")  # measure the load generators, not remote write
    qps = {1: [], 2: []}
    for r in range(a.rounds):
        for n in (1, 2):
            p = subprocess.run([str(ROOT / "scripts/k6"), "run", "--instances", str(n),
                                "-e", f"mysql_port={PORTS[a.target]}", "-e", f"mysql_db={a.db}",
                                "-e", f"tables={a.tables}", "-e", f"table_size={a.table_size}",
                                "-e", f"threads={a.threads}", "-e", f"time={a.seconds}", "oltp.js"],
                               cwd=ROOT / "k6", env=env, capture_output=True, text=True)
            if p.returncode:
                sys.exit(f"scripts/k6 run --instances {n} failed ({p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
            testid = re.search(r"testid=(\S+) split over", p.stderr).group(1)
            q = json.loads((ROOT / "results" / f"{testid}.json").read_text())["steps"][0]["qps"]
            qps[n].append(q)
            print(f"round {r + 1}: {n} instance(s), {a.threads} threads on {a.target}: {q:.0f} QPS (testid {testid})",
                  flush=True)
    one, two = statistics.median(qps[1]), statistics.median(qps[2])
    print("\n| target | threads | 1 instance QPS | 2 instances QPS | 2 / 1 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| {a.target} | {a.threads} | {one:.0f} | {two:.0f} | {two / one:.2f} |")


if __name__ == "__main__":
    if "--instances-compare" in sys.argv[1:]:
        instances_compare(sys.argv[1:])
    else:
        main()
