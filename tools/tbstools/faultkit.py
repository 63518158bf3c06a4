"""Fault scenarios for tidb-bench-stack (tools/faults, tests/test_faults.py), each a row of
docs/faults.md's table, on the running local stack (driven by drive.py): the faults are made with the stack's own service commands (`scripts/stack
kill|stop|restart SERVICE`: the stack is the one code that starts servers), a network cut with
a TCP proxy of ours in front of a database, and k6 runs through scripts/k6 exactly as a user
runs it. The runs use a database of their own (sbtest_faults) and a results folder of their own.

    sb = Stack(Path("/tmp/x"))
    run = sb.k6_run("tidb", {"threads": 4, "time": 20}, faults=[At(6, sb.kill, "tidb"), At(11, sb.start, "tidb")])
    sb.close()   # restarts every service a fault left stopped

A fault stops a server other users of the stack share: run them when nobody benchmarks.

Secrets: the stack's password (.stack/secrets/sbtest) reaches k6 and the SQL client in the
environment (never as an argument), sysbench in a mode-600 config file.
"""
import signal
import time
from collections import Counter

from tbstools.cutproxy import HOST, free_port
from tbstools.drive import DB, GRACE_S, At, Stack, connect_s  # noqa: F401 (DB, Stack: for faultkit's callers)


# ====================================================================== scenarios
# Each returns a dict of figures (one row of tools/faults' table) and keeps the raw result
# under "_run" for the tests' own assertions.

# Errors the tools may ignore: k6 with preset=tidb on TiDB (the seeds' list), MariaDB with
# sysbench's default list plus 2013 (lost connection, after which sysbench reconnects).
# sysbench gets at least as much: also 2003 (cannot connect), and on TiDB sysbench's own
# default list besides the seeds' (a TiDB restarted after kill -9 may answer 1213 at first).
K6_IGNORE = {"tidb": "1062,2013,8028,9007", "mariadb": "1213,1020,1205,2013"}
SYSBENCH_IGNORE = {"tidb": "1213,1020,1205,1062,2013,2003,8028,9007", "mariadb": "1213,1020,1205,2013,2003"}


def workload_for(target, kind):
    """The workload of a database fault. A kill -9 of the local stack's TiDB kills its storage
    with it: unistore runs inside tidb-server and keeps its lock table in memory, written out
    only on a clean close. A transaction TiDB has already reported committed may still be
    committing its other keys (async commit, or the secondaries of two-phase commit); the kill
    loses them, and a row is left without its index entry, which a later write meets as error
    8141 "assertion failed" (seen once in CI, in the soak). A real cluster's TiKV keeps its
    locks. So a TiDB kill runs oltp_read_only here; a stop (SIGTERM: unistore writes its locks
    out) and the network cut (the server lives) keep oltp_read_write, as does MariaDB (InnoDB
    recovers from its redo log)."""
    return "oltp_read_only" if (target, kind) == ("tidb", "kill") else "oltp_read_write"


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


def _rows_intact(sb, target, tables, table_size):
    return all(int(sb.sql(target, f"SELECT COUNT(*) FROM sbtest{t}")[0][0]) == table_size for t in range(1, tables + 1))


def k6_qps_between(sb, testid, t0, t1):
    """Queries per second k6 pushed to Prometheus between two epoch seconds (its samples come
    every 2 s, so the window is widened to whole samples)."""
    if t1 - t0 < 2:
        return None
    q0, q1 = sb.queries_at(testid, t0), sb.queries_at(testid, t1)
    if q0 is None or q1 is None:
        return None
    return (q1 - q0) / (t1 - t0)


def _db_faults(sb, target, kind, at, down):
    """The faults of kind at `at` s -> (faults, the cut proxy of a drop or None)."""
    if kind == "drop":
        proxy = sb.proxy(target)
        return [At(at, proxy.drop, down, name=f"network to {target} dropped for {down}s")], proxy
    if kind == "kill":
        return [At(at, sb.kill, target, name=f"kill -9 {target}"), At(at + down, sb.start, target, name=f"start {target}")], None
    if kind == "stop":
        return [At(at, sb.stop, target, name=f"stop {target}")], None
    raise ValueError(kind)


def _k6_fault_figures(sb, target, workload, faults, port, at, seconds, threads, steps, tables, table_size, k6_opts):
    opts = {"workload": workload, "tables": tables, "table_size": table_size, "threads": steps or threads,
            "time": seconds}
    if target == "tidb":
        opts["preset"] = "tidb"
    else:
        opts["mysql_ignore_errors"] = K6_IGNORE[target]
    opts.update(k6_opts or {})
    r = sb.k6_run(target, opts, faults=faults, port=port)
    st = r.summary.get("steps") or []
    s0 = st[0] if st else {}
    t_fault = r.events[0][0] if r.events else r.started + at
    back = [t for t, n in r.events if n.endswith(" done") and (n.startswith("start") or n.startswith("network"))]
    end = s0.get("window", {}).get("measure_end", 0) / 1000 or r.ended
    if back and s0.get("max_gap_start"):
        # QPS after: from when events completed again (k6's own gap end), not from when
        # `scripts/stack restart` returned (it waits until the server is ready and has
        # its users, seconds after k6 is back)
        back = [min(back[0], s0["max_gap_start"] / 1000 + s0["max_gap_s"])]
    return {
        "exit": r.returncode, "testid": r.testid,
        "wall_s": round(r.ended - r.started, 1),
        "reconnects": sum(s.get("reconnects", 0) for s in st),
        "errors": sum(s.get("errors", 0) for s in st),
        "gap_s": round(max([s.get("max_gap_s", 0) for s in st] or [0]), 1),
        "disturbed": [s["threads"] for s in st if s.get("max_gap_s", 0) >= 1],
        "qps_before": k6_qps_between(sb, r.testid, t_fault - 3, t_fault) if r.testid else None,
        "qps_after": k6_qps_between(sb, r.testid, back[0] + 1, end) if back and r.testid else 0.0,
        "results_file": bool(r.summary),
        "_run": r,
    }


def _sysbench_fault_figures(sb, target, workload, faults, port, at, seconds, threads, tables, table_size):
    r = sb.sysbench_run(target, workload, threads, seconds, SYSBENCH_IGNORE[target], faults=faults,
                        tables=tables, table_size=table_size, port=port)
    iv = r.intervals()
    t_fault = at
    back = [t - r.started for t, n in r.events if n.endswith(" done") and (n.startswith("start") or n.startswith("network"))]
    return {
        "exit": r.returncode, "wall_s": round(r.ended - r.started, 1),
        "reconnects": r.reconnects(), "errors": r.errors(),
        "gap_s": round(r.longest_gap(), 1) if iv else None,
        "qps_before": _mean(q for s, q in iv if t_fault - 4 < s <= t_fault) if iv else None,
        "qps_after": _mean(q for s, q in iv if back and back[0] + 2 < s <= seconds) if back else 0.0,
        "last_report_s": iv[-1][0] if iv else 0,
        "crash": r.returncode < 0 or r.returncode >= 128,
        "tail": "\n".join(r.output.strip().splitlines()[-3:]),
        "_run": r,
    }


def db_fault(sb, target, kind, tool="k6", seconds=20, at=5, down=5, threads=4, workload=None,
             tables=2, table_size=2000, steps=None, k6_opts=None):
    """A database fault during a step: kind = kill (kill -9 at `at`, started again `down` s
    later), drop (the network to it cut and refused for `down` s), stop (stopped at `at` for
    longer than the step; started again after the run). tool = k6 or sysbench (1.0.20).
    workload: workload_for(target, kind) unless given. k6_opts: more k6 options (-e)."""
    workload = workload or workload_for(target, kind)
    faults, proxy = _db_faults(sb, target, kind, at, down)
    port = proxy.port if proxy else None
    nsteps = len(str(steps or threads).split(","))
    planned = seconds * nsteps
    row = {"fault": {"kill": f"{target} killed (-9) at {at}s, started {down}s later",
                     "drop": f"network to {target} cut and refused for {down}s at {at}s",
                     "stop": f"{target} stopped at {at}s of a {seconds}s step, for longer than the step"}[kind]
           + ("" if workload == "oltp_read_write" else f" ({workload})"),
           "tool": tool, "target": target, "kind": kind, "workload": workload}
    try:
        if tool == "k6":
            row.update(_k6_fault_figures(sb, target, workload, faults, port, at, seconds, threads, steps, tables,
                                         table_size, k6_opts))
        else:
            row.update(_sysbench_fault_figures(sb, target, workload, faults, port, at, seconds, threads, tables,
                                               table_size))
        row["planned_s"] = planned
    finally:
        sb.start(target)  # (when a fault left it down)
        if proxy:
            proxy.close()
            sb.proxies.remove(proxy)
    row["rows_intact"] = _rows_intact(sb, target, tables, table_size) if workload == "oltp_read_write" else None
    holds = (row["exit"] == 0 and row["wall_s"] <= planned + (GRACE_S + connect_s(threads) + 3) * nsteps
             and (kind == "stop" or (row["qps_after"] or 0) > 0) and row["rows_intact"] is not False)
    row["verdict"] = "holds" if holds else "fails"
    if holds and tool == "k6" and (row.get("gap_s") or 0) < min(down, seconds - at) - 1.5:
        # the run held, but its results do not show how long no event completed
        row["verdict"] = "run holds; outage missing from max_gap_s"
    return row


def prometheus_fault(sb, kind, target="tidb", seconds=12, at=3, down=5, threads=4, workload="oltp_point_select",
                     tables=2, table_size=2000):
    """kind = kill (Prometheus killed -9 at `at`, started `down` s later), unreachable (no
    Prometheus at the remote-write address for the whole run), missed_step (Prometheus down
    from before the run until the first of two steps has ended)."""
    opts = {"workload": workload, "tables": tables, "table_size": table_size, "threads": threads, "time": seconds}
    prom_arg = True
    faults = []
    if kind == "kill":
        faults = [At(at, sb.kill, "prometheus", name="kill -9 prometheus"),
                  At(at + down, sb.start, "prometheus", name="start prometheus")]
        what = f"Prometheus killed (-9) at {at}s, started {down}s later"
    elif kind == "unreachable":
        prom_arg = f"http://{HOST}:{free_port()}"
        what = "Prometheus unreachable for the whole run"
    elif kind == "missed_step":
        opts["threads"] = f"{threads // 2 or 1},{threads}"
        sb.stop("prometheus")
        faults = [At(seconds + GRACE_S + 1, sb.start, "prometheus", name="start prometheus")]
        what = "Prometheus down for the whole first of two steps"
    else:
        raise ValueError(kind)
    try:
        r = sb.k6_run(target, opts, faults=faults, prometheus=prom_arg)
    finally:
        sb.start("prometheus")
    st = r.summary.get("steps") or []
    planned = seconds * len(st or [1])
    totals = []
    if kind != "unreachable":
        for s in st:
            deadline = time.time() + 20
            got = None
            while time.time() < deadline:
                got = sb.step_total(r.testid, s)
                if got == s["queries"]["total"] or (kind == "missed_step" and s is st[0]):
                    break
                time.sleep(1)
            totals.append((s["threads"], got, s["queries"]["total"]))
    row = {"fault": what, "tool": "k6", "target": target, "kind": f"prometheus_{kind}", "exit": r.returncode,
           "testid": r.testid, "wall_s": round(r.ended - r.started, 1), "planned_s": planned,
           "gap_s": round(max([s.get("max_gap_s", 0) for s in st] or [0]), 2),
           "qps": round(_mean(s["qps"] for s in st), 1) if st else None,
           "totals": totals, "results_file": bool(r.summary), "_run": r}
    # each step's total in Prometheus is k6's own (a missed step: none for the first)
    if kind == "kill":
        totals_agree = all(p == k for _, p, k in totals)
    elif kind == "missed_step":
        totals_agree = totals and totals[0][1] is None and all(p == k for _, p, k in totals[1:])
    else:
        totals_agree = True
    row["verdict"] = "holds" if (totals_agree and r.returncode == 0 and row["gap_s"] < 1
                                 and row["wall_s"] <= planned + GRACE_S * len(st or [1]) + 10) else "fails"
    return row


def loki_fault(sb, target="tidb", seconds=12, at=2, down=3, threads=2):
    """Loki killed (-9) mid-run and started `down` s later (it needs ~10 s to be ready): the
    log lines k6 wrote meanwhile reach Loki once it is back. The run logs where every run logs
    (the stack's k6 log, which its log shipper, otelcol, follows); every line appended to that file during
    the run (this run's, and any other run's meanwhile) is looked up in Loki, as often as it was
    written."""
    log = sb.k6_log
    start_offset = log.stat().st_size if log.exists() else 0
    t0 = time.time()
    opts = {"workload": "oltp_point_select", "tables": 2, "table_size": 2000, "threads": threads, "time": seconds,
            "report_interval": 1}
    faults = [At(at, sb.kill, "loki", name="kill -9 loki"), At(at + down, sb.start, "loki", name="start loki")]
    try:
        r = sb.k6_run(target, opts, faults=faults)
    finally:
        sb.start("loki")
    with open(log, "rb") as f:
        f.seek(start_offset)
        written = f.read().decode(errors="replace").split("\n")[:-1]  # whole lines only
    want = Counter(x.rstrip() for x in written if x.strip())
    lines = sum(want.values())
    t_kill = r.event_time("kill -9 loki")
    t_back = r.event_time("start loki done")
    selector = f'{{service="k6",filename="{log}"}}'
    deadline = time.time() + 60
    got = None
    while time.time() < deadline:
        have = sb.loki_lines(selector, t0 - 5, time.time() + 1)
        got = sum(min(n, have[x]) for x, n in want.items())
        if got >= lines:
            break
        time.sleep(2)
    row = {"fault": f"Loki killed (-9) at {at}s, back after {round(t_back - t_kill, 1)}s", "tool": "k6",
           "target": target, "kind": "loki_kill", "exit": r.returncode, "testid": r.testid,
           "wall_s": round(r.ended - r.started, 1), "planned_s": seconds,
           "gap_s": round(max([s.get("max_gap_s", 0) for s in r.summary.get("steps", [])] or [0]), 2),
           "log_lines": lines, "loki_lines": got,
           # stamped by the shipper as it read them (no timestamp is parsed): the lines written while Loki was away
           "loki_lines_during_outage": sb.loki_count(selector, t_kill, t_back),
           "_run": r}
    row["verdict"] = "holds" if (r.returncode == 0 and got == lines and row["gap_s"] < 1) else "fails"
    return row


def interrupt(sb, sig, group, target="tidb", seconds=6, at=None, threads="2,4"):
    """SIGINT/SIGTERM in the middle of the second step: to the whole process group, as a
    terminal's Ctrl-C or a CI runner's cancel sends it, or to k6 alone."""
    at = at if at is not None else seconds + GRACE_S + connect_s(4) + seconds / 2
    opts = {"workload": "oltp_point_select", "tables": 2, "table_size": 2000, "threads": threads, "time": seconds}
    r = sb.k6_run(target, opts, signal_at=(at, sig, group))
    st = r.summary.get("steps") or []
    name = signal.Signals(sig).name
    row = {"fault": f"{name} to {'the process group (Ctrl-C)' if group else 'k6'} in step 2 of 2", "tool": "k6",
           "target": target, "kind": f"{name.lower()}_{'group' if group else 'k6'}", "exit": r.returncode,
           "testid": r.testid, "results_file": bool(r.summary), "interrupted": r.summary.get("interrupted"),
           "steps": [(s["threads"], bool(s.get("interrupted")), round(s.get("elapsed_s", 0), 1)) for s in st],
           "run_end": r.summary.get("run_end"), "wall_s": round(r.ended - r.started, 1), "_run": r}
    row["verdict"] = "holds" if (row["results_file"] and row["interrupted"] and len(st) == 2
                                 and not st[0].get("interrupted") and st[1].get("interrupted")) else "fails"
    return row


def soak(sb, minutes, target="tidb", threads=8, workload=None, fault_at=None, down=5, sample_every=10):
    """A long run at full speed with the target killed (-9) in the middle: RSS and file
    descriptors of k6 and of the servers, k6's connections to the database, sampled all along.
    workload: workload_for(target, "kill") unless given."""
    workload = workload or workload_for(target, "kill")
    seconds = int(minutes * 60)
    fault_at = fault_at if fault_at is not None else seconds // 2
    opts = {"workload": workload, "tables": 2, "table_size": 2000, "threads": threads, "time": seconds}
    if target == "tidb":
        opts["preset"] = "tidb"
    else:
        opts["mysql_ignore_errors"] = K6_IGNORE[target]
    pids = {n: (lambda n=n: sb.pid(n)) for n in (target, "prometheus", "loki", "otelcol")}
    r = sb.k6_run(target, opts, faults=[At(fault_at, sb.kill, target, name=f"kill -9 {target}"),
                                        At(fault_at + down, sb.start, target, name=f"start {target}")],
                  sample_every=sample_every, sample_pids=pids, timeout=seconds + 300)
    # samples inside the measured window (after it, k6 closes its connections)
    s = [x for x in r.samples if r.started <= x["t"] <= r.started + seconds - 1]
    db_port = sb.ports[target]
    row = {"fault": f"soak {minutes} min, {workload} {threads} threads, {target} killed (-9) at {fault_at}s",
           "tool": "k6", "target": target, "kind": "soak", "workload": workload, "exit": r.returncode, "testid": r.testid, "samples": len(s),
           "wall_s": round(r.ended - r.started, 1), "planned_s": seconds, "_run": r}
    if len(s) >= 4:
        q = len(s) // 4
        first, last = s[q], s[-1]  # after the first quarter (warm caches, all connections open)
        for key in sorted(k for k in s[0] if k.endswith("_rss_kb") or k.endswith("_fds")):
            row[key] = (first[key], last[key], max(x[key] for x in s[q:]))
        row["k6_conns"] = (first["k6_conns"], last["k6_conns"])
    st = (r.summary.get("steps") or [{}])[0]
    row.update({"reconnects": st.get("reconnects"), "gap_s": round(st.get("max_gap_s", 0), 1),
                "qps": round(st.get("qps", 0), 1), "db_port": db_port})
    # no leak: memory, descriptors and connections at the end as after the first quarter
    steady = r.returncode == 0 and len(s) >= 4
    if steady:
        a, b, _ = row["k6_rss_kb"]
        fa, fb, _ = row["k6_fds"]
        steady = (b <= a * 1.25 + 20 * 1024 and fb <= fa + 4
                  and row["k6_conns"][1] <= row["k6_conns"][0] + 2)
    row["verdict"] = "holds" if steady else "fails"
    return row
