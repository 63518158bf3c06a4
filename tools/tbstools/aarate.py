"""tools/aa-rate: the report's measured false-positive rate. N A/A pairs on the local stack: the
same configuration twice, run as one interleaved plan (scripts/sweep --plan) whose two identical
arms take the plan's usual samples per pair; then every pair compared by the report's own code
(tidbbench.report.report.Report: the exact Mann-Whitney test, Holm over each metric's cells), counting
the cells called a change. By the definition of the level, at most about 5% of a family's
comparisons, and fewer cells, may be called a change by chance.

  tools/aa-rate [--pairs 20] [--plan plans/local-aab.json] [--arms a,a2] [--workloads oltp_point_select]
                [--threads 1,2] [--time 1] [--db sbtest_stats_aa] [--id ID] [--results DIR] [--count-only]
                [--profiles]

The plan's two arms (default a and a2 of plans/local-aab.json: no set_global, same options) run
pairs x the plan's repeats rounds, interleaved in the plan's seeded order, on their own database
(created and prepared by the tool: the plan's tables and rows, `"prepare": true`); the samples of
rounds 1-5 form pair 1, 6-10 pair 2, and so on (5 = the plan's repeats). Each pair is written as
two sweep manifests (results/sweep-<id>-<arm>-pNN.json), so `scripts/report sweep-<id>-a-p01
sweep-<id>-a2-p01` shows any pair's report. Run again with the same --id, an interrupted plan
resumes (scripts/sweep's own resume); --count-only counts what is there. The database is dropped
at the end. Needs the local stack (scripts/stack up). --profiles also counts, per pair, the functions
of the steps' CPU profiles the report's profile comparison calls a change (issue #44: a pair with one
is a false positive; at most 5% of pairs by the level, Holm over each pair's functions)."""
import argparse
import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tidbbench import ROOT, ReportError, contract
from tidbbench.k6env import new_testid


def args_of(argv):
    ap = argparse.ArgumentParser(prog="tools/aa-rate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=20, help="A/A pairs (default 20)")
    ap.add_argument("--plan", default=str(ROOT / "plans/local-aab.json"), help="the plan (default plans/local-aab.json)")
    ap.add_argument("--arms", default="a,a2", help="its two identical arms (default a,a2)")
    ap.add_argument("--workloads", default="oltp_point_select", help="workloads (default oltp_point_select)")
    ap.add_argument("--threads", default="1,2", help="thread steps (default 1,2)")
    ap.add_argument("--time", type=int, default=1, help="seconds measured per step (default 1)")
    ap.add_argument("--db", default="sbtest_stats_aa", help="its own database (default sbtest_stats_aa)")
    ap.add_argument("--id", default=None, help="plan id (default aa-<timestamp>); the same id resumes")
    ap.add_argument("--results", default=str(contract.results_dir()),
                    help="results folder (default: $results_dir or results/)")
    ap.add_argument("--count-only", action="store_true", help="count the pairs already run, run nothing")
    ap.add_argument("--keep-db", action="store_true", help="do not drop the database at the end")
    ap.add_argument("--profiles", action="store_true",
                    help="also count the functions of the steps' CPU profiles called a change (issue #44)")
    a = ap.parse_args(argv)
    if a.pairs < 1:
        ap.error(f"invalid --pairs {a.pairs}: must be >= 1")
    if a.time < 1:
        ap.error(f"invalid --time {a.time}: must be >= 1")
    return a


def derived_plan(a):
    """The plan with only the two arms, the workloads, threads and time asked, pairs x repeats
    rounds, its own database, prepared once. ReportError (exit 2) when the arms are not identical."""
    from tidbbench.sweep import plan as planmod
    plan = planmod.load(a.plan)
    names = [n.strip() for n in a.arms.split(",")]
    arms = {arm["name"]: arm for arm in plan["arms"]}
    if len(names) != 2 or any(n not in arms for n in names):
        raise ReportError(f"--arms {a.arms}: two of the plan's arms (valid: {', '.join(arms)})", code=2)
    x, y = ({k: v for k, v in arms[n].items() if k not in ("name", "description")} for n in names)
    if x != y:
        raise ReportError(f"--arms {a.arms}: the arms differ ({x} vs {y}); an A/A needs the same configuration",
                          code=2)
    p = copy.deepcopy(plan)
    p["arms"] = [arms[n] for n in names]
    p["workloads"] = [w.strip() for w in a.workloads.split(",")]
    p["threads"] = [int(t) for t in a.threads.split(",")]
    p["options"] = dict(p.get("options", {}), time=a.time, mysql_db=a.db, connect_time=1, grace_time=1)
    p["per_pair"] = p.get("repeats", 1)
    p["repeats"] = p["per_pair"] * a.pairs
    p["prepare"] = True
    p["description"] = (f"A/A false-positive count (tools/aa-rate): arms {names[0]} and {names[1]} of {a.plan}, "
                        f"{a.pairs} pairs of {p['per_pair']} samples a side")
    return p, names


def connect(db=None):
    import pymysql
    from tidbbench.sweep.sweep import target
    t = target({}, None)
    return pymysql.connect(host=t["mysql_host"], port=t["mysql_port"], user=t["mysql_user"],
                           password=t["mysql_password"], database=db, autocommit=True, connect_timeout=10)


def run_plan(a, p, pid, results):
    f = results / f"aa-{pid}.plan.json"
    per_pair = p.pop("per_pair")
    f.write_text(json.dumps(p, indent=1))
    p["per_pair"] = per_pair
    cmd = sweep_command(f, pid, results)
    print("aa-rate: " + " ".join(cmd).replace(str(ROOT) + "/", ""), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def sweep_command(plan, pid, results):
    """scripts/sweep on the derived plan, run as the executable it is (a bash entry point since
    the package layout of issue #45: under the Python interpreter it was a SyntaxError)."""
    return [str(ROOT / "scripts/sweep"), "--plan", str(plan), "--id", pid, "--results", str(results), "--no-report"]


def pair_sweeps(results, pid, names, per_pair, pairs):
    """Writes sweep-<pid>-<arm>-pNN.json (each arm's runs of the pair's rounds); [(a id, b id)]."""
    out = []
    for k in range(pairs):
        rounds = range(k * per_pair + 1, (k + 1) * per_pair + 1)
        ids = []
        for n in names:
            src = json.loads((results / f"sweep-{pid}-{n}.json").read_text())
            sid = f"sweep-{pid}-{n}-p{k + 1:02d}"
            runs = [r for r in src["runs"] if r.get("repeat") in rounds]
            if len({r["repeat"] for r in runs}) < per_pair:
                return out  # this pair is not complete (an interrupted plan)
            m = dict(src, sweep=sid, runs=runs, repeats=per_pair, status="complete")
            (results / f"{sid}.json").write_text(json.dumps(m, indent=1))
            ids.append(sid)
        out.append(tuple(ids))
    return out


def count(results, pairs):
    """Per pair: the cells compared and those called a change, by the report's own statistics."""
    from tidbbench.report.manifest import resolve
    from tidbbench.report.prom import Prometheus
    from tidbbench.report.report import Report
    url = os.environ.get("TBS_PROMETHEUS_URL") or "http://127.0.0.1:9090"
    rows = []
    for ia, ib in pairs:
        rep = Report([resolve(results, ia), resolve(results, ib)], Prometheus(url))
        rep.collect()  # the report's own figures and statistics (compute_stats: the test, Holm per metric)
        cells = [(k, c) for k, c in rep.cmp.items() if c.testable]
        called = [(k, c) for k, c in cells if c.significant]
        alone = [(k, c) for k, c in cells if c.p < 0.05]
        rows.append((ia, ib, len(cells), called, alone, [k for k, _ in cells]))
    return rows


def count_profiles(results, pairs):
    """Per pair: (functions tested, [functions called a change]) at each workload's highest step, by the
    report's own profile comparison (tidbbench/report/profiles.py)."""
    from tidbbench.report import profiles
    from tidbbench.report.manifest import resolve
    rows = []
    for ia, ib in pairs:
        sa, sb = resolve(results, ia).samples(), resolve(results, ib).samples()
        tested, called = 0, []
        for w in sa:
            runs = [sa[w], sb.get(w, [])]
            t = profiles.highest(runs)
            sides = [[sp for sp in (profiles.load_step(r, t) for r in rs) if sp.ok] for rs in runs]
            if t is None or min(len(x) for x in sides) < 2:
                continue
            fn_rows, k = profiles.compare(*sides)[:2]
            tested += k
            called += [f"{w} {r[0]} {r[3]:+.1f}% p={r[5]:.3f}" for r in fn_rows if r[5] is not None and r[5] < 0.05]
        rows.append((ia, ib, tested, called))
    return rows


def print_profiles(rows):
    print("| pair | functions tested | called a change |")
    print("| --- | ---: | --- |")
    for ia, ib, k, c in rows:
        print(f"| {ia} vs {ib} | {k} | {len(c)}{' (' + '; '.join(c) + ')' if c else ''} |")
    with_change = sum(1 for r in rows if r[3])
    print(f"aa-rate: profiles: {len(rows)} A/A pairs, {with_change} with a function called a change "
          f"({with_change / len(rows) * 100:.0f}% of pairs; at most 5% by the level of Holm's family), "
          f"{sum(len(r[3]) for r in rows)} of {sum(r[2] for r in rows)} function tests")


def main(argv=None):
    a = args_of(sys.argv[1:] if argv is None else argv)
    results = Path(a.results).resolve()
    results.mkdir(parents=True, exist_ok=True)
    try:
        try:
            pid = a.id or "aa-" + new_testid()  # the launcher core makes every id (k6/ext/launch)
        except RuntimeError as e:
            raise ReportError(f"no plan id: {e}", code=2) from e
        p, names = derived_plan(a)
        if not a.count_only:
            with connect() as c, c.cursor() as cur:
                cur.execute(f"CREATE DATABASE IF NOT EXISTS {a.db}")
            t0 = time.time()
            rc = run_plan(a, p, pid, results)
            print(f"aa-rate: plan {pid} ended with exit {rc} after {time.time() - t0:.0f} s", flush=True)
        pairs = pair_sweeps(results, pid, names, p["per_pair"], a.pairs)
        if not pairs:
            raise ReportError(f"no complete pair in plan {pid} ({results})", code=1)
        rows = count(results, pairs)
        prof_rows = count_profiles(results, pairs) if a.profiles else None
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return getattr(e, "code", 1) or 1
    finally:
        if not a.count_only and not a.keep_db:
            try:
                with connect() as c, c.cursor() as cur:
                    cur.execute(f"DROP DATABASE IF EXISTS {a.db}")
            except Exception as e:  # the stack may be gone: say so, do not hide the result
                print(f"warning: could not drop {a.db}: {e}", file=sys.stderr)
    total = sum(r[2] for r in rows)
    called = sum(len(r[3]) for r in rows)
    alone = sum(len(r[4]) for r in rows)
    fams = sum(len({k[2] for k, _ in r[3]}) for r in rows)
    nfams = sum(len({k[2] for k in r[5]}) for r in rows)
    print("| pair | cells | called a change | p < 0.05 before Holm |")
    print("| --- | ---: | ---: | ---: |")
    for ia, ib, n, c, al, _ in rows:
        what = ", ".join(f"{k[0]} {k[1]} threads {k[2]} {x.change:+.2f}% p={x.p_adj:.3f}" for k, x in c)
        print(f"| {ia} vs {ib} | {n} | {len(c)}{' (' + what + ')' if c else ''} | {len(al)} |")
    print(f"aa-rate: {len(rows)} A/A pairs, {total} cells: {called} called a change ({called / total * 100:.1f}%), "
          f"{alone} with p < 0.05 before Holm ({alone / total * 100:.1f}%); families (pair x metric) with a change: "
          f"{fams} of {nfams}")
    if prof_rows is not None:
        print_profiles(prof_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
