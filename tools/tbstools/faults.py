"""tools/faults [--targets tidb,mariadb] [--time 20] [--at 5] [--down 5] [--no-sysbench] [--json FILE]
tools/faults soak [--minutes 30] [--threads 8] [--target tidb]

Faults around a run, made on the running local stack with its own commands (scripts/stack
kill|stop|restart SERVICE; a TCP proxy of ours for a network cut), and what the run did. The
runs use a database of their own (sbtest_faults); the servers are the stack's: run it when
nobody else benchmarks on it. Prints the README's table (markdown; docs/faults.md):

  database      the server killed (-9) and started again; the network to it cut and refused;
                the server stopped for longer than the step -- each with our k6 and with
                sysbench 1.0.20 on the same tables and options, side by side
  observability Prometheus killed and restarted mid-step; unreachable for the whole run; down
                during a whole step (the report falls back to k6's summary); Loki killed mid-run
  load generator SIGINT to the process group (Ctrl-C) and SIGTERM to k6 in the middle of a step
  soak          (`soak`) a long run at full speed, TiDB killed in the middle: RSS and file
                descriptors of k6 and of the servers, k6's connections, before and after
The workload is oltp_read_write, oltp_read_only when TiDB is killed (its storage dies with it:
faultkit.workload_for, docs/faults.md).

Needs the local stack running with both targets (scripts/stack up --target both) and, for the
comparison, Debian's sysbench. Takes about 8 minutes (--time 20); `soak` takes --minutes plus a
minute. Every service a fault stopped runs again when it ends (also on an error).
"""
import argparse
import json
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from tbstools import faultkit as fs


def fmt(x, d=0):
    if x is None:
        return "—"
    return f"{x:,.{d}f}"


def did(row):
    """What the run did, in words."""
    if row["tool"] == "sysbench":
        if row.get("crash"):
            sig = -row["exit"] if row["exit"] < 0 else row["exit"] - 128
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
            return f"crashed ({name}, exit {128 + sig}) {fmt(row.get('last_report_s'))} s into the run"
        if row["exit"] != 0:
            return f"stopped with exit {row['exit']} after {fmt(row['wall_s'], 1)} s of {row['planned_s']} s"
        return f"ran to its planned end ({fmt(row['wall_s'], 1)} s), exit 0"
    if row["kind"].startswith("sig"):
        return f"stopped at the signal, exit {row['exit']} (k6's code for an interrupted run)"
    if row["exit"] == 0:
        return f"ran to its planned end, exit 0 ({fmt(row.get('wall_s'), 1)} s wall for {row.get('planned_s')} s measured)"
    return f"ended with exit {row['exit']} after {fmt(row.get('wall_s'), 1)} s"


def figures(row):
    k = row["kind"]
    if k in ("kill", "drop", "stop"):
        gap = None if row.get("crash") else row.get("gap_s")
        f = [f"reconnects {fmt(row.get('reconnects'))}", f"errors {fmt(row.get('errors'))}",
             f"{fmt(gap, 1)} s without events",
             f"QPS {fmt(row.get('qps_before'))} before, {fmt(row.get('qps_after'))} after"]
        if row.get("rows_intact") is not None:
            f.append("rows intact" if row["rows_intact"] else "ROWS LOST OR DUPLICATED")
        return "; ".join(f)
    if k.startswith("prometheus"):
        tot = "; ".join(f"{t} threads: Prometheus {fmt(p)} / k6 {fmt(q)}" for t, p, q in row.get("totals", []))
        return (f"{fmt(row.get('gap_s'), 2)} s longest wait between events; QPS {fmt(row.get('qps'))}"
                + (f"; queries {tot}" if tot else "; nothing reached Prometheus; results file written"))
    if k == "loki_kill":
        return (f"{row['log_lines']} log lines written, {row['loki_lines']} in Loki, {row['loki_lines_during_outage']} of "
                f"them written while Loki was down; {fmt(row.get('gap_s'), 2)} s longest wait between events")
    if k.startswith("sig"):
        steps = ", ".join(f"{t} threads{' INTERRUPTED' if i else ''} ({e} s)" for t, i, e in row["steps"])
        return (f"exit {row['exit']}; results file {'written' if row['results_file'] else 'MISSING'}: "
                f"run interrupted={row.get('interrupted')}, steps {steps}; run_end {'written' if row.get('run_end') else 'MISSING'}")
    if k == "soak":
        parts = [f"{row['samples']} samples, QPS {fmt(row.get('qps'))}, reconnects {fmt(row.get('reconnects'))}, "
                 f"{fmt(row.get('gap_s'), 1)} s without events"]
        for key in sorted(x for x in row if x.endswith("_rss_kb")):
            a, b, peak = row[key]
            parts.append(f"{key[:-7]} RSS {a // 1024} -> {b // 1024} MiB (peak {peak // 1024})")
        for key in sorted(x for x in row if x.endswith("_fds")):
            a, b, _ = row[key]
            parts.append(f"{key[:-4]} fds {a} -> {b}")
        if "k6_conns" in row:
            parts.append(f"k6 TCP connections {row['k6_conns'][0]} -> {row['k6_conns'][1]}")
        return "; ".join(parts)
    return ""


def table(rows):
    out = ["| fault | tool | what the run did | figures | verdict |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        out.append(f"| {r['fault']} | {r['tool']} | {did(r)} | {figures(r)} | {r['verdict']} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(prog="tools/faults", description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", nargs="?", default="table", choices=["table", "soak"])
    ap.add_argument("--targets", default="tidb,mariadb", help="database faults on these (tidb, mariadb)")
    ap.add_argument("--only", default="database,observability,loadgen",
                    help="which groups of faults (database, observability, loadgen; default all)")
    ap.add_argument("--time", type=int, default=20, help="seconds per step (default 20)")
    ap.add_argument("--at", type=int, default=5, help="the fault this many seconds into the step (default 5)")
    ap.add_argument("--down", type=int, default=5, help="seconds the server or network stays away (default 5)")
    ap.add_argument("--threads", type=int, default=None, help="threads (default 4; soak 8)")
    ap.add_argument("--minutes", type=float, default=30, help="soak: minutes at full speed (default 30)")
    ap.add_argument("--target", default="tidb", choices=["tidb", "mariadb"], help="soak: the target (default tidb)")
    ap.add_argument("--no-sysbench", action="store_true", help="skip sysbench's side of the database faults")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ap.add_argument("--keep", metavar="DIR", help="keep the runs' results files in DIR (default: a temporary folder, removed)")
    a = ap.parse_args()
    targets = [t.strip() for t in a.targets.split(",") if t.strip()]
    only = [t.strip() for t in a.only.split(",") if t.strip()]
    if not only or any(t not in ("database", "observability", "loadgen") for t in only):
        ap.error(f"--only {a.only}: valid groups are database, observability, loadgen")
    bad = [t for t in targets if t not in ("tidb", "mariadb")]
    if bad or not targets:
        ap.error(f"--targets {a.targets}: valid targets are tidb, mariadb")
    for name, v, lo in (("--time", a.time, 6), ("--at", a.at, 3), ("--down", a.down, 1), ("--minutes", a.minutes, 0.5)):
        if v < lo:
            ap.error(f"{name} {v}: must be >= {lo}")
    if a.mode == "table" and a.at + a.down >= a.time - 2:
        ap.error(f"--at {a.at} + --down {a.down} must end at least 2 s before the step's end (--time {a.time})")
    sysbench = not a.no_sysbench and shutil.which("sysbench")
    if not a.no_sysbench and not sysbench:
        print("note: sysbench is not installed (apt-get install sysbench): its side is skipped", file=sys.stderr)

    base = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="tbs-faults-"))
    loads = targets if a.mode == "table" and "database" in only else []
    if a.mode == "soak":
        loads = [a.target]
    elif {"observability", "loadgen"} & set(only) and "tidb" not in loads:
        loads.append("tidb")  # the observability and load-generator faults run on TiDB
    services = (*loads, "prometheus", "loki", "otelcol")
    try:
        sb = fs.Stack(base, services=services)
    except RuntimeError as e:
        sys.exit(f"error: {e}")
    rows = []

    def add(row):
        rows.append(row)
        print(f"faults: {row['fault']} [{row['tool']}]: {did(row)}; {figures(row)}: {row['verdict']}", file=sys.stderr, flush=True)

    try:
        for t in loads:
            print(f"faults: preparing {fs.DB} on {t}", file=sys.stderr, flush=True)
            sb.prepare(t)
        if a.mode == "soak":
            add(fs.soak(sb, a.minutes, target=a.target, threads=a.threads or 8))
        else:
            th = a.threads or 4
            for t in (targets if "database" in only else []):
                for kind in ("kill", "drop", "stop"):
                    add(fs.db_fault(sb, t, kind, seconds=a.time, at=a.at, down=a.down, threads=th))
                    if sysbench:
                        add(fs.db_fault(sb, t, kind, tool="sysbench", seconds=a.time, at=a.at, down=a.down, threads=th))
            if "observability" in only:
                add(fs.prometheus_fault(sb, "kill", seconds=a.time, at=a.at, down=a.down, threads=th))
                add(fs.prometheus_fault(sb, "unreachable", seconds=a.time, threads=th))
                add(fs.prometheus_fault(sb, "missed_step", seconds=max(6, a.time // 2), threads=th))
                add(fs.loki_fault(sb, seconds=a.time, at=a.at, down=a.down))
            if "loadgen" in only:
                add(fs.interrupt(sb, signal.SIGINT, True, seconds=max(6, a.time // 2)))
                add(fs.interrupt(sb, signal.SIGTERM, False, seconds=max(6, a.time // 2)))
    finally:
        sb.close()
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps([{k: v for k, v in r.items() if k != "_run"} for r in rows], indent=2) + "\n")
    return 0 if all(r["verdict"] == "holds" for r in rows if r["tool"] == "k6") else 1


if __name__ == "__main__":
    sys.exit(main())
