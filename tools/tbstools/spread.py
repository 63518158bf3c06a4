"""tools/spread-table: where this host's run-to-run spread comes from, and what each measure buys
(issue #43 item 2; docs/history.md#the-spread-table).

  tools/spread-table collect --lengths 5,10,30 --pin on,off --warmup 1 --runs 8
  tools/spread-table show [--from DIR] [--json FILE]

`collect` runs the same A/A run (one workload, one thread step, the local TiDB) under every
condition asked (measured length x pinned or not x warm-up), interleaved: each round runs every
condition once, in an order shuffled per round (a fixed seed), so the host's drift falls on every
condition alike. Each run's manifest, with its host disturbance (k6/lib/disturb.js), goes to
--out; runs.jsonl there names each run's condition. `show` prints, per condition, the spread (CV)
of QPS and of the database's CPU per query:
  raw          every run, in the order they ran;
  interleaved  the spread a paired comparison sees: consecutive runs' ratios, sd(ln r) / sqrt(2)
               (the drift between two neighbours cancels);
  rejected     without the runs the disturbance rule calls disturbed (tidbbench/disturbance.py);
  canary       QPS times the run's canary over the condition's median canary (a slower host, by
               the calibration, gets its QPS scaled up), and CPU per query divided by the same;
and what the spread is: the drift (the share of the raw variance the interleaved spread does not
have), the host (QPS's correlation with the canary and with the other processes' CPU) and the
database's own variation (its CPU per query's spread). It needs no server (--from DIR).
"""
import argparse
import itertools
import json
import math
import os
import random
import statistics
import subprocess
from pathlib import Path

from tidbbench import ROOT, ReportError, disturbance
from tidbbench.k6env import new_testid
from tbstools import benchkit, historyquality

SEED = 43


def conditions(a):
    return [{"length": n, "pinned": p == "on", "warmup": w}
            for n, p, w in itertools.product(a.lengths, a.pin, a.warmup)]


def one_run(a, cond, testid, out):
    """One k6 run under cond; the database on core 0 and k6 on core 1 when pinned (put back
    after)."""
    pin = benchkit.Pinning(0, 1) if cond["pinned"] else None
    if pin:
        pin.pin_server(historyquality.tidb_pid())
    try:
        args = ["-e", f"mysql_db={a.db}", "-e", f"tables={a.tables}", "-e", f"table_size={a.table_size}",
                "-e", f"workload={a.workload}", "-e", f"threads={a.threads}", "-e", f"time={cond['length']}",
                "-e", f"warmup_time={cond['warmup']}", "-e", f"testid={testid}", "oltp.js"]
        p = subprocess.run([str(ROOT / "scripts/k6"), "run", "-q", *args], cwd=ROOT / "k6",
                           env=dict(os.environ, results_dir=str(out)), capture_output=True, text=True,
                           timeout=cond["length"] + cond["warmup"] + 300,
                           preexec_fn=pin.client_preexec() if pin else None)
    finally:
        if pin:
            pin.restore()
    if p.returncode != 0:
        raise ReportError(f"k6 run {testid} exited {p.returncode}: {(p.stdout + p.stderr)[-1500:]}")
    return json.loads((out / f"{testid}.json").read_text())["steps"][0]


def collect(a):
    if (os.cpu_count() or 1) < 2 and "on" in a.pin:
        raise ReportError("pinning needs 2 cores (this machine has 1): use --pin off", code=2)
    historyquality.tidb_pid()  # first: no TiDB stops it before anything is written
    out = Path(a.out or ROOT / f"results/spread-{new_testid()}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    historyquality.prepare(a.db, a.workload, a.tables, a.table_size, out)
    conds, rng, stamp = conditions(a), random.Random(SEED), new_testid()
    for r in range(a.runs):
        order = list(range(len(conds)))
        rng.shuffle(order)
        for k in order:
            c = conds[k]
            testid = f"spr-{stamp}-{c['length']}s-{'pin' if c['pinned'] else 'free'}-w{c['warmup']}-{r:03d}"
            s = one_run(a, c, testid, out)
            with open(out / "runs.jsonl", "a") as f:
                f.write(json.dumps({"testid": testid, "round": r, **c}) + "\n")
            print(f"round {r + 1}/{a.runs} {testid}: {s['qps']:.1f} QPS", flush=True)
    print(f"{a.runs} rounds of {len(conds)} conditions in {out}; tools/spread-table show --from {out}")
    return 0


# -- the figures

def cv(xs):
    xs = [x for x in xs if x is not None]
    if len(xs) < 2 or statistics.fmean(xs) == 0:
        return None
    return statistics.stdev(xs) / abs(statistics.fmean(xs)) * 100


def paired_cv(xs):
    """The spread of consecutive runs' ratios, per run: sd(ln(x[i+1]/x[i])) / sqrt(2), in %."""
    xs = [x for x in xs if x is not None and x > 0]
    r = [math.log(b / a) for a, b in zip(xs, xs[1:])]
    return statistics.stdev(r) / math.sqrt(2) * 100 if len(r) >= 2 else None


def corr(xs, ys):
    pairs = [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]
    if len(pairs) < 3:
        return None
    try:
        return statistics.correlation(*zip(*pairs))
    except statistics.StatisticsError:  # a constant column
        return None


def sample(step):
    """(QPS, the database's CPU per query in µs, the canary in ns, the other processes' CPU share)."""
    d = step.get("disturbance") or {}
    queries = step["qps"] * (d.get("window_s") or step.get("elapsed_s") or 0)
    db = d.get("db_cpu_s")
    cpq = db / queries * 1e6 if db is not None and queries > 0 else None
    canaries = [c for c in (d.get("canary_before_ns"), d.get("canary_after_ns")) if c]
    return step["qps"], cpq, statistics.fmean(canaries) if canaries else None, d.get("other_share")


def load(folder):
    folder = Path(folder)
    f = folder / "runs.jsonl"
    if not f.is_file():
        raise ReportError(f"{f} is not there: tools/spread-table collect --out {folder} makes it", code=2)
    groups = {}
    for line in f.read_text().splitlines():
        e = json.loads(line)
        m = folder / f"{e['testid']}.json"
        if m.is_file():
            key = (e["length"], e["pinned"], e["warmup"])
            groups.setdefault(key, []).append((e["round"], json.loads(m.read_text())))
    return {k: [m for _, m in sorted(v, key=lambda x: x[0])] for k, v in sorted(groups.items())}


def figures(manifests):
    """The row of one condition (its runs in the order they ran)."""
    steps = [m["steps"][0] for m in manifests]
    qps, cpq, canary, other = (list(col) for col in zip(*(sample(s) for s in steps)))
    median = disturbance.canary_median(manifests)
    kept = [s for s in steps if not disturbance.step_reasons(s, median)]
    known = [c for c in canary if c]
    mid = statistics.median(known) if known else None
    norm = [q * c / mid if c and mid else None for q, c in zip(qps, canary)]
    norm_cpq = [x / (c / mid) if x is not None and c and mid else None for x, c in zip(cpq, canary)]
    raw, pair = cv(qps), paired_cv(qps)
    drift = (1 - (pair / raw) ** 2) * 100 if raw and pair is not None and pair < raw else 0.0
    return {"runs": len(steps), "mean_qps": statistics.fmean(qps), "cv_qps": raw, "cv_qps_interleaved": pair,
            "cv_qps_rejected": cv([s["qps"] for s in kept]), "kept": len(kept), "cv_qps_canary": cv(norm),
            "cv_cpq": cv(cpq), "cv_cpq_interleaved": paired_cv(cpq), "cv_cpq_canary": cv(norm_cpq),
            "cv_canary": cv(canary), "drift_share": drift, "corr_qps_canary": corr(qps, canary),
            "corr_qps_other": corr(qps, other), "corr_qps_cpq": corr(qps, cpq)}


def pct(x):
    return "n/a" if x is None else f"{x:.1f}%"


def num(x):
    return "n/a" if x is None else f"{x:+.2f}"


def show(a):
    folder = Path(a.from_ or max(ROOT.glob("results/spread-*"), default=ROOT / "results/spread"))
    groups = load(folder)
    if not groups:
        raise ReportError(f"no run of {folder}/runs.jsonl has its manifest in {folder}", code=2)
    rows = {f"{k[0]}s {'pinned' if k[1] else 'free'} w{k[2]}": figures(v) for k, v in groups.items()}
    print(f"runs in {folder}\n")
    print("| condition | runs | QPS | CV QPS raw | interleaved | disturbed rejected (kept) | canary-normalized "
          "| CV CPU/query raw | interleaved | canary | CV canary | drift share | r(QPS, canary) "
          "| r(QPS, other CPU) | r(QPS, CPU/query) |")
    print("| --- |" + " ---: |" * 14)
    for name, f in rows.items():
        print(f"| {name} | {f['runs']} | {f['mean_qps']:,.0f} | {pct(f['cv_qps'])} | {pct(f['cv_qps_interleaved'])} "
              f"| {pct(f['cv_qps_rejected'])} ({f['kept']}) | {pct(f['cv_qps_canary'])} | {pct(f['cv_cpq'])} "
              f"| {pct(f['cv_cpq_interleaved'])} | {pct(f['cv_cpq_canary'])} | {pct(f['cv_canary'])} "
              f"| {f['drift_share']:.0f}% | {num(f['corr_qps_canary'])} | {num(f['corr_qps_other'])} "
              f"| {num(f['corr_qps_cpq'])} |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def csv_of(kind, valid=None):
    def parse(text):
        try:
            vals = [kind(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of {kind.__name__}") from None
        bad = [v for v in vals if (valid is not None and v not in valid) or (kind is int and v < 0)]
        if bad or not vals:
            raise argparse.ArgumentTypeError(f"'{text}': valid values are {', '.join(valid) if valid else 'whole numbers >= 0'}")
        return vals
    return parse


def parser():
    p = argparse.ArgumentParser(prog="tools/spread-table", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="verb", required=True)
    c = sub.add_parser("collect", help="A/A runs under each condition, interleaved")
    c.add_argument("--lengths", type=csv_of(int), default=[5, 10, 30], help="measured seconds (default 5,10,30)")
    c.add_argument("--pin", type=csv_of(str, ("on", "off")), default=["on", "off"], help="on, off or on,off")
    c.add_argument("--warmup", type=csv_of(int), default=[1], help="warm-up seconds (default 1)")
    c.add_argument("--runs", type=int, default=8, help="rounds: runs per condition (default 8)")
    c.add_argument("--workload", default="oltp_point_select")
    c.add_argument("--threads", type=int, default=4)
    c.add_argument("--tables", type=int, default=1)
    c.add_argument("--table-size", type=int, default=10000)
    c.add_argument("--db", default="sbtest_spread")
    c.add_argument("--out", help="results folder for the runs (default results/spread-<testid>)")
    s = sub.add_parser("show", help="the table, from a collection")
    s.add_argument("--from", dest="from_", metavar="DIR", help="a collection (default: the newest results/spread-*)")
    s.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    return p


def main(argv=None):
    a = parser().parse_args(argv)
    if a.verb == "collect" and a.runs < 2:
        raise SystemExit(f"error: --runs {a.runs}: at least 2 rounds make a spread")
    try:
        return collect(a) if a.verb == "collect" else show(a)
    except ReportError as e:
        print(f"error: {e}")
        return e.code


if __name__ == "__main__":
    raise SystemExit(main())
