"""scripts/history: the runs before, their series and where a series changed, with the evidence of
why (docs/history.md).

  scripts/history ingest [PATH ...]     index run manifests (default: results/), then find change points
  scripts/history series                the series: workload x threads x options x target, their runs
  scripts/history runs --series S       one series' runs, their figures and change points
  scripts/history [changes] [--check]   every series' noise (CV, minimum detectable change) and change points with
                                        their evidence; --check fails on a regression and names the series too
                                        noisy to show one of --threshold
  scripts/history rebuild [PATH ...]    the index again from the results files

The index is results/history.sqlite (tidbbench/history/store.py), derived from the results files;
change points come from Apache Otava (tidbbench/history/cp.py), their evidence from the run
manifests on either side (tidbbench/history/evidence.py), each series' noise and what it can see from
tidbbench/history/noise.py."""
import argparse
import datetime
import json
import os
import re
import sys
from dataclasses import asdict
from pathlib import Path

from tidbbench import ReportError, contract
from tidbbench.history import cp as hcp
from tidbbench.history import noise as hnoise
from tidbbench.history import pg as historypg
from tidbbench.history import store
from tidbbench.history.evidence import Manifests, evidence

DEFAULT_THRESHOLD = 3.0  # % for --check
EXIT_REGRESSION = 1

EPILOG = """\
examples:
  scripts/history ingest                          (results/, after a nightly sweep)
  scripts/history ingest /mnt/other-host/results  (another host's results folder)
  scripts/history series
  scripts/history runs --series oltp_point_select/4t
  scripts/history --since 7d --json
  scripts/history --check --threshold 3           (exit 1 when a series' newest runs sit after a regression)
exit codes: 0 fine, 1 --check found a regression, 2 bad input (no index, unknown series, a corrupt file, ...).
"""


def common(ap):
    ap.add_argument("--results", metavar="DIR", default=str(contract.results_dir()),
                    help="the results folder (default: $results_dir or results/)")
    ap.add_argument("--index", metavar="FILE", help="the index (default: <results>/history.sqlite)")


def detection(ap):
    d = hcp.DEFAULTS
    ap.add_argument("--metric", action="append", choices=list(hcp.METRICS),
                    help=f"metric to analyse (repeat; default: {', '.join(hcp.DEFAULT_METRICS)}; a TPC-C series: "
                         f"{', '.join(hcp.TPCC_DEFAULT_METRICS)}; each series gets the ones it has)")
    ap.add_argument("--min-segment", type=int,
                    help=f"runs a level must last on each side of a change point (default {d.min_segment}; "
                         f"{d.paired_min_segment} for {hcp.PAIRED_METRIC}, a paired series' throughput over its "
                         "reference's; given, it applies to every metric)")
    ap.add_argument("--min-magnitude", type=float, default=d.min_magnitude,
                    help=f"smallest change of the segments' means, %% (default {d.min_magnitude:g})")
    ap.add_argument("--max-pvalue", type=float, default=d.max_pvalue,
                    help=f"Otava's significance threshold (default {d.max_pvalue:g})")
    ap.add_argument("--window", type=int, default=d.window, help=f"Otava's window, runs (default {d.window})")


def ingest_opts(ap):
    ap.add_argument("paths", nargs="*", metavar="PATH", help="results folders or run manifests (default: --results)")
    ap.add_argument("--skip-bad", action="store_true",
                    help="leave corrupt files out (named on stderr) instead of stopping with nothing ingested")
    ap.add_argument("--ignore-option", action="append", metavar="NAME",
                    help="a k6 option whose value does not split series (repeat; kept in the index)")
    ap.add_argument("--prometheus", metavar="URL",
                    default=os.environ.get("TBS_PROMETHEUS_URL") or "http://127.0.0.1:9090",
                    help="Prometheus for the server's CPU per query (default: $TBS_PROMETHEUS_URL or :9090)")
    ap.add_argument("--no-prometheus", action="store_true", help="do not ask Prometheus (server CPU left empty)")


def parser():
    ap = argparse.ArgumentParser(prog="scripts/history", description=__doc__, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb")
    for verb, text in (("ingest", "index run manifests, then find change points"),
                       ("rebuild", "make the index again from the results files")):
        p = sub.add_parser(verb, help=text, description=text)
        common(p)
        ingest_opts(p)
        detection(p)
    p = sub.add_parser("series", help="list the series")
    common(p)
    p.add_argument("--series", metavar="S", help="series key or a part of it")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("runs", help="one series' runs with their figures and change points")
    common(p)
    p.add_argument("--series", metavar="S", required=True, help="series key or a part naming one series")
    p.add_argument("--json", action="store_true")
    detection(p)
    p = sub.add_parser("changes", help="change points with their evidence (the default verb)")
    common(p)
    p.add_argument("--series", metavar="S", help="series key or a part of it")
    p.add_argument("--since", metavar="WHEN", help="change points from then on: 2026-11-20, 2026-11-20T08:00:00Z, 7d, 12h")
    p.add_argument("--json", action="store_true")
    p.add_argument("--check", action="store_true",
                   help="exit 1 when a series' last change point is a regression of at least --threshold; a series "
                        "whose minimum detectable change is above --threshold is named TOO NOISY (not checked, exit 0)")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help=f"%% for --check (default {DEFAULT_THRESHOLD:g})")
    detection(p)
    p = sub.add_parser("push", help="mirror the index into the team's store (PostgreSQL; idempotent, one transaction)")
    common(p)
    p.add_argument("--conninfo", metavar="FILE", default=str(historypg.DEFAULT_CONNINFO),
                   help=f"file with the store's libpq connection string (default: {historypg.DEFAULT_CONNINFO})")
    p = sub.add_parser("schema", help="print the team's store's tables (PostgreSQL DDL)")
    return ap


def do_push(a):
    index = index_path(a)
    n = historypg.push(index, a.conninfo)
    print(f"history store: {n} row(s) written from {index}")
    return 0


def do_schema(a):
    sys.stdout.write(historypg.pg_ddl())
    return 0




def params_of(a):
    d = hcp.DEFAULTS
    return hcp.check_params(hcp.Params(a.min_segment or d.min_segment, a.min_magnitude, a.max_pvalue, a.window,
                                       a.min_segment or d.paired_min_segment))


def index_path(a):
    return Path(a.index) if a.index else store.default_index(a.results)


def since_iso(text):
    if not text:
        return None
    m = re.fullmatch(r"(\d+)([dh])", text)
    now = datetime.datetime.now(datetime.timezone.utc)
    if m:
        delta = datetime.timedelta(days=int(m[1])) if m[2] == "d" else datetime.timedelta(hours=int(m[1]))
        return store.iso((now - delta).timestamp() * 1000)
    try:
        t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ReportError(f"invalid --since {text!r}: a date (2026-11-20), a UTC time (2026-11-20T08:00:00Z) "
                          "or an age (7d, 12h)", code=2)
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return store.iso(t.timestamp() * 1000)


def pick_series(conn, pattern, one=False):
    """Series keys equal to pattern, or containing it; ReportError naming the known ones."""
    all_ = [s["series"] for s in store.series_list(conn)]
    if not all_:
        raise ReportError("the history is empty: no run has been ingested (scripts/history ingest)", code=2)
    if not pattern:
        return all_
    hit = [s for s in all_ if s == pattern] or [s for s in all_ if pattern in s]
    if not hit:
        raise ReportError(f"unknown series '{pattern}' (known: {', '.join(all_[:10])}"
                          + (f", ... {len(all_) - 10} more" if len(all_) > 10 else "") + ")", code=2)
    if one and len(hit) > 1:
        raise ReportError(f"series '{pattern}' names {len(hit)} series ({', '.join(hit[:10])}): give more of one", code=2)
    return hit


def workload_of(conn, series):
    r = conn.execute("SELECT workload FROM points WHERE series = ? LIMIT 1", (series,)).fetchone()
    return r[0] if r else ""


def metrics_of(conn, series, asked):
    """The metrics analysed for the series (hcp.series_metrics): vs_ref first by default when any
    of its runs was paired with a reference."""
    paired = conn.execute("SELECT 1 FROM points WHERE series = ? AND vs_ref IS NOT NULL LIMIT 1",
                          (series,)).fetchone() is not None
    return hcp.series_metrics(workload_of(conn, series), asked, paired)


def analyse(conn, series, asked, params):
    """(change points with evidence, notes); stores them in the index (change_points). `asked`:
    the metrics of --metric (None: each series' defaults, hcp.series_metrics)."""
    man = Manifests()
    cps, notes, cells = [], [], []
    for s in series:
        metrics = metrics_of(conn, s, asked)
        pts = store.series_points(conn, s)
        least = min((params.for_metric(m).min_segment for m in metrics), default=params.min_segment)
        if len(pts) < 2 * least:
            notes.append(f"{s}: {len(pts)} run{'s' if len(pts) != 1 else ''}: too few for a change point (at least "
                         f"{2 * least}: --min-segment {least} a side)")
        for metric in metrics:
            need = 2 * params.for_metric(metric).min_segment
            have = hcp.metric_points(pts, metric)
            cells.append((s, metric))
            bad = hcp.not_numbers(pts, metric)
            if len(have) + len(bad) < len(pts):
                notes.append(f"{s}: {len(pts) - len(have) - len(bad)} of {len(pts)} runs have no {metric} (gaps, left out)")
            if bad:
                notes.append(f"{s}: {len(bad)} of {len(pts)} runs have a {metric} that is not a number "
                             f"({', '.join(sorted({str(v) for v in bad}))}): left out")
            if len(have) < need:
                if len(pts) >= 2 * least:
                    notes.append(f"{s}: {len(have)} runs with {metric}: too few for a change point (at least {need})")
                continue
            for cp in hcp.series_change_points(s, pts, metric, params):
                cp.evidence = evidence(cp, have, man)
                cps.append(cp)
    store.replace_change_points(conn, cells, [c.row() for c in cps], asdict(params))
    return cps, notes


def server_cpu_from(url, notes):
    """A function (manifest, step) -> the server's CPU seconds per query over the step's measured
    window, from Prometheus (tidbbench/report/prom.py's resource query), or None; after the first
    unreachable answer it asks no more (one note)."""
    from tidbbench.report.prom import Prometheus, _scalar, resource_queries
    prom = Prometheus(url)
    state = {"down": False}

    def get(m, step):
        w = step.get("window") or {}
        qps = step.get("qps")
        if state["down"] or not qps or not all(isinstance(w.get(k), (int, float)) for k in ("measure_start", "measure_end")):
            return None
        db, _k6 = resource_queries(m.get("product", ""), m.get("testid", ""), int(w["measure_start"]), int(w["measure_end"]))
        try:
            v = _scalar(prom.query(db, f"{w['measure_end'] / 1000:.3f}"))
        except ReportError as e:
            state["down"] = True
            notes.append(f"server CPU per query left empty: {e}")
            return None
        return v / qps if v is not None and v >= 0 else None
    return get


def do_ingest(a, rebuild=False):
    params = params_of(a)
    notes = []
    cpu = None if a.no_prometheus else server_cpu_from(a.prometheus, notes)
    paths = a.paths or [a.results]
    index = index_path(a)
    if rebuild:
        ignore = a.ignore_option
        if ignore is None and index.is_file():  # the index's own setting, unless given
            ignore = store.meta_get(store.connect(index), "ignore_options", [])
        res = store.rebuild(index, paths, ignore or [], cpu, a.skip_bad)
        conn = store.connect(index)
    else:
        index.parent.mkdir(parents=True, exist_ok=True)
        conn = store.connect(index, create=True)
        old = store.meta_get(conn, "ignore_options", [])
        if a.ignore_option is not None and sorted(set(a.ignore_option)) != old:
            if conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]:
                raise ReportError(f"the index was built with --ignore-option {','.join(old) or '(none)'}; "
                                  "series would change: run `scripts/history rebuild --ignore-option ...`", code=2)
        res = store.ingest(conn, paths, skip_bad=a.skip_bad, ignore=a.ignore_option, server_cpu=cpu)
    for n in res.notes + notes:
        print(f"note: {n}", file=sys.stderr)
    print(f"{'rebuilt' if rebuild else 'ingested'} {index}: {res.added} new run(s), {res.replaced} replaced, "
          f"{res.unchanged} unchanged, {res.skipped} file(s) skipped")
    series = [s["series"] for s in store.series_list(conn)]
    cps, cnotes = analyse(conn, series, a.metric, params)
    print(f"{len(series)} series, {len(cps)} change point(s) "
          f"({sum(c.direction == 'regression' for c in cps)} regression(s)): scripts/history changes")
    return 0


def fmt(v, d=2):
    return "—" if v is None else f"{v:,.{d}f}"


def cp_text(c):
    ci = f"95% CI {c.ci_low_pct:+.2f}% to {c.ci_high_pct:+.2f}%, " if c.ci_low_pct is not None else ""
    lines = [f"  {c.metric}: {c.direction} {c.change_text()} ({ci}p={c.pvalue:.2g}) at {c.at}",
         f"      mean {fmt(c.mean_before)} -> {fmt(c.mean_after)} ({c.runs_before} runs before, {c.runs_after} after); "
         f"last run before {c.run_key_before}, first run after {c.run_key_after}"]
    if c.also_likely:  # the data fit other places alike: the evidence's two runs may be of one level
        lines.append(f"      its place is uncertain: the data fit {' or '.join(c.also_likely)} as the first run after as "
                 f"well; the evidence compares {c.run_key_before} and {c.run_key_after}")
    lines += ["      evidence:"]
    lines += [f"        {it['rank']}. {it['text']}" for it in (c.evidence or [])] or ["        (none recorded)"]
    return lines


def cp_json(c):
    d = asdict(c)
    return d


def series_noise(conn, series, asked, params, cps):
    """[hnoise.SeriesNoise] of every series and metric: the spread of its current level (the runs
    since its last change point among cps) and its minimum detectable change at these settings."""
    out = []
    for s in series:
        pts = store.series_points(conn, s)
        for metric in metrics_of(conn, s, asked):
            have = hcp.metric_points(pts, metric)
            if have:
                at = [c.index for c in cps if c.series == s and c.metric == metric]
                out.append(hnoise.series_noise(s, metric, have, at, params))
    return out


def check(a, cps, noises, since):
    """(failed, too_noisy) of --check: the series' last change points (from since on) that are
    regressions of at least --threshold, and the series' metrics too noisy to show one that small
    (their minimum detectable change above it; those that failed aside)."""
    last = {}
    for c in cps:
        if not since or c.at >= since:
            k = (c.series, c.metric)
            if k not in last or c.index > last[k].index:
                last[k] = c
    failed = [c for c in last.values() if c.direction == "regression" and abs(c.magnitude_pct) >= a.threshold]
    gone = {(c.series, c.metric) for c in failed}
    noisy = [n for n in noises if (n.series, n.metric) not in gone and n.mdc_pct is not None
             and n.mdc_pct > a.threshold]
    return failed, noisy


def print_check(a, params, failed, noisy, noises):
    print()
    for c in failed:
        print(f"REGRESSION {c.series} {c.metric} {c.change_text()} (threshold {a.threshold:g}%) "
              f"since {c.at}, first run after: {c.run_key_after}")
    for n in noisy:
        print(f"TOO NOISY {hnoise.too_noisy_text(n, a.threshold, params)}")
    if failed:
        return
    if noisy:
        print(f"no regression of {a.threshold:g}% or more found, but not checked: {len(noisy)} of {len(noises)} series "
              f"metric(s) too noisy to show a {a.threshold:g}% change (above)")
    else:
        print(f"check passed: no series' last change point is a regression of {a.threshold:g}% or more")


def paired_text(params):
    """', 3 for vs_ref' when the paired metric's minimum segment differs."""
    m = params.paired_min_segment
    return f", {m} for {hcp.PAIRED_METRIC}" if m != params.min_segment else ""


def print_changes(a, params, series, shown, noises, since):
    print(f"{len(shown)} change point(s) in {len(series)} series" + (f" since {since}" if since else "") +
          f" (Otava: min segment {params.min_segment} runs{paired_text(params)}, min magnitude "
          f"{params.min_magnitude:g}%, p < {params.max_pvalue:g})")
    for s in series:
        ns = [n for n in noises if n.series == s]
        cs = [c for c in shown if c.series == s]
        if not ns and not cs:
            continue
        print(f"\n{s}")
        for n in ns:
            print(f"  noise {hnoise.noise_text(n, params)}")
        for c in cs:
            print("\n".join(cp_text(c)))


def do_changes(a):
    params = params_of(a)
    since = since_iso(a.since)
    conn = store.connect(index_path(a))
    series = pick_series(conn, a.series)
    cps, notes = analyse(conn, series, a.metric, params)
    noises = series_noise(conn, series, a.metric, params, cps)
    shown = [c for c in cps if not since or c.at >= since]
    failed, noisy = check(a, cps, noises, since) if a.check else ([], [])
    if a.json:
        out = {"index": str(index_path(a)), "params": asdict(params), "since": since, "series": series,
               "change_points": [cp_json(c) for c in shown], "noise": [asdict(n) for n in noises], "notes": notes}
        if a.check:
            out["check"] = {"threshold_pct": a.threshold, "failed": [cp_json(c) for c in failed],
                            "too_noisy": [{**asdict(n), "text": hnoise.too_noisy_text(n, a.threshold, params)}
                                          for n in noisy]}
        print(json.dumps(out, indent=2))
    else:
        for n in notes:
            print(f"note: {n}", file=sys.stderr)
        print_changes(a, params, series, shown, noises, since)
        if a.check:
            print_check(a, params, failed, noisy, noises)
    return EXIT_REGRESSION if failed else 0


def do_series(a):
    conn = store.connect(index_path(a))
    names = set(pick_series(conn, a.series))
    rows = [s for s in store.series_list(conn) if s["series"] in names]
    if a.json:
        print(json.dumps({"index": str(index_path(a)), "series": rows}, indent=2))
        return 0
    print(f"{len(rows)} series in {index_path(a)}")
    for s in rows:
        print(f"  {s['series']}  {s['runs']} run(s), {s['first']} .. {s['last']}")
    return 0


def print_oltp_runs(pts, marks):
    print(f"{'started (UTC)':20} {'testid':36} {'QPS':>10} {'TPS':>10} {'p95 ms':>8} {'p99 ms':>8} {'err/s':>6} "
          f"{'k6 µs/q':>8} {'db µs/q':>8}")
    for p in pts:
        us = [fmt(p[k] * 1e6 if p[k] is not None else None, 1) for k in ("client_cpu_per_query", "server_cpu_per_query")]
        print(f"{p['started_at']:20} {p['testid'][:36]:36} {fmt(p['qps']):>10} {fmt(p['tps']):>10} "
              f"{fmt(p['p95_ms'], 3):>8} {fmt(p['p99_ms'], 3):>8} {fmt(p['errors_per_s']):>6} {us[0]:>8} {us[1]:>8} "
              + " ".join(marks.get(p["run_key"], [])))


def print_tpcc_runs(pts, marks):
    """A TPC-C series' runs: tpmC, tpmTotal, and New-Order's and Payment's latency (--json: every type's)."""
    print(f"{'started (UTC)':20} {'testid':36} {'tpmC':>10} {'tpmTotal':>10} {'NO p95':>8} {'NO p99':>8} "
          f"{'Pay p95':>8} {'Pay p99':>8} {'err/s':>6}")
    for p in pts:
        print(f"{p['started_at']:20} {p['testid'][:36]:36} {fmt(p['tpmc'], 1):>10} {fmt(p['tpm_total'], 1):>10} "
              f"{fmt(p['new_order_p95_ms'], 2):>8} {fmt(p['new_order_p99_ms'], 2):>8} {fmt(p['payment_p95_ms'], 2):>8} "
              f"{fmt(p['payment_p99_ms'], 2):>8} {fmt(p['errors_per_s']):>6} " + " ".join(marks.get(p["run_key"], [])))


def do_runs(a):
    params = params_of(a)
    conn = store.connect(index_path(a))
    (s,) = pick_series(conn, a.series, one=True)
    pts = store.series_points(conn, s)
    cps, notes = analyse(conn, [s], a.metric, params)
    marks = {}
    for c in cps:
        marks.setdefault(c.run_key_after, []).append(f"<- {c.metric} {c.direction} {c.change_text(1)}")
    noises = series_noise(conn, [s], a.metric, params, cps)
    if a.json:
        print(json.dumps({"series": s, "runs": pts, "change_points": [cp_json(c) for c in cps],
                          "noise": [asdict(n) for n in noises], "notes": notes}, indent=2))
        return 0
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    print(s)
    if workload_of(conn, s) == hcp.TPCC_WORKLOAD:
        print_tpcc_runs(pts, marks)
    else:
        print_oltp_runs(pts, marks)
    print()
    for n in noises:
        print(f"noise {hnoise.noise_text(n, params)}")
    for c in cps:
        print()
        print("\n".join(cp_text(c)))
    return 0


# the verbs: name -> function(args) -> exit code
VERBS = {
    "ingest": do_ingest,
    "rebuild": lambda a: do_ingest(a, rebuild=True),
    "series": do_series,
    "runs": do_runs,
    "changes": do_changes,
    "push": do_push,
    "schema": do_schema,
}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in VERBS and argv[0] not in ("-h", "--help")):
        argv.insert(0, "changes")
    a = parser().parse_args(argv)
    try:
        return VERBS[a.verb](a)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code


if __name__ == "__main__":  # scripts/history runs it with python -m
    sys.exit(main())
