"""What disturbed a run, from its manifest (results/<testid>.json): steps cut by SIGINT/SIGTERM
(`interrupted`), steps during which no event completed for a while (`max_gap_s`,
`max_gap_start`: a server killed or unreachable) with their reconnects, and steps whose
figures come from k6's own summary because Prometheus has no data for them; and threads that ran
far below their share of a step's events (`fairness.warnings`: k6/lib/summary.js); and the host's
disturbance of every sample (`disturbance`: steal, CPU pressure, the other processes', the
database's and k6's CPU, the canary), with the samples the rule of tidbbench/disturbance.py calls
disturbed and those a plan rejected and reran."""
import json

from tidbbench import disturbance
from tidbbench.report.fmt import md_table, utc

GAP_S = 1.0  # a step where no event completed for this long is named as disturbed
SOURCE_K6 = "k6 summary"


def fallback_figures(cls, step, bucket_factor):
    """StepFigures of a step Prometheus has no data for, from k6's own summary."""
    w = step["window"]
    seconds = step.get("elapsed_s") or (w["measure_end"] - w["measure_start"]) / 1000.0
    q = (step.get("queries") or {}).get("total", 0)
    lat = step.get("latency_ms") or {}
    f = cls(threads=int(step["threads"]), seconds=seconds, queries=q, transactions=step.get("transactions", 0),
            errors=step.get("errors", 0), qps=step.get("qps", q / seconds if seconds else 0.0),
            tps=step.get("tps", 0.0), p95_ms=lat.get("p95", 0.0), avg_ms=lat.get("avg", 0.0),
            count=step.get("transactions", 0), bucket_factor=bucket_factor, k6=step)
    if lat.get("pct_value") is not None:
        f.pct, f.pct_ms = lat.get("pct") or 95, float(lat["pct_value"])
    f.source = SOURCE_K6
    return f


def fallback_note(run, step):
    return (f"{run.workload} (testid {run.testid}): Prometheus has no data for the {step['threads']}-thread step; "
            f"its figures are k6's summary from {run.path.name}")


def interrupted_text(run):
    """'' or why the run is incomplete."""
    m = run.manifest
    if not m.get("interrupted"):
        return ""
    cut = [s for s in run.steps if s.get("interrupted")]
    planned = m.get("options", {}).get("threads")
    planned = planned if isinstance(planned, list) else str(planned or "").split(",")
    ran = len(run.steps)
    parts = []
    if cut:
        parts.append(f"interrupted during the {cut[0]['threads']}-thread step")
    else:
        parts.append("interrupted")
    if planned and ran < len(planned):
        parts.append(f"{ran} of {len(planned)} steps ran")
    return ", ".join(parts)


def judged_steps(run):
    """The run's steps as the disturbance rule judges them: a duet sample's (a plan's `"duet": true`,
    its sweep entry's duet_with) without its partner's database and k6 CPU, which are the pair's own
    load (disturbance.without_partner); any other run's as they are."""
    partner = (getattr(run, "entry", None) or {}).get("duet_with")
    if not partner:
        return run.steps
    try:
        pm = json.loads((run.path.parent / f"{partner}.json").read_text())
    except (OSError, ValueError):
        pm = None
    return disturbance.without_partner(run.manifest, pm).get("steps", [])


def step_notes(run, figs, median=None):
    """Sentences naming the disturbed steps of a run: interrupted, no event for a while,
    figures from k6's summary, the host disturbed by the rule (median: the set's canary)."""
    out = []
    by_threads = {f.threads: f for f in figs}
    judged = {st.get("threads"): st for st in judged_steps(run)}
    for s in run.steps:
        t = s["threads"]
        planned = s.get("seconds") or run.options.get("time")
        if s.get("interrupted"):
            out.append(f"the {t}-thread step was interrupted after {s.get('elapsed_s', 0):.1f} s of {planned} s "
                       "(SIGINT/SIGTERM); its figures cover the time it ran")
        gap = s.get("max_gap_s") or 0
        if gap >= GAP_S:
            when = f" from {utc(s['max_gap_start'])}" if s.get("max_gap_start") else ""
            rec = s.get("reconnects", 0)
            out.append(f"{t} threads: no event completed for {gap:.1f} s{when}"
                       f" ({rec} reconnect{'s' if rec != 1 else ''}, {s.get('errors', 0)} ignored errors in the step)")
        warn = (s.get("fairness") or {}).get("warnings") or []
        if warn:
            shown = "; ".join(warn[:3]) + (f"; and {len(warn) - 3} more" if len(warn) > 3 else "")
            sliced = (" (select_random_* give each thread its own slice of k: where k is dense, events are slower,"
                      " in sysbench too)" if str(run.workload).startswith("select_random_") else "")
            out.append(f"{t} threads, threads fairness: {shown}{sliced}")
        host = disturbance.step_reasons(judged.get(t, s), median)
        if host:
            out.append(f"{t} threads, the host was disturbed ({'; '.join(host)})")
        f = by_threads.get(t)
        if f is not None and getattr(f, "source", "") == SOURCE_K6:
            out.append(f"Prometheus has no data for the {t}-thread step: its figures are k6's own summary "
                       f"({run.path.name}), not Prometheus'")
    return out


def section(sets, labels, pair, workload, figs):
    """Markdown lines for a workload: 'Disturbances: ...' when any step was disturbed."""
    lines = []
    for i, s in enumerate(sets):
        run = s.by_workload().get(workload)
        if run is None:
            continue
        notes = step_notes(run, figs.get((i, workload), []), report_median(sets))
        if run.manifest.get("interrupted") and not any("interrupted" in n for n in notes):
            notes.insert(0, f"the run was {interrupted_text(run)}")
        if notes:
            who = f"{labels[i]}, " if pair else ""
            lines.append(f"**Disturbances** ({who}testid {run.testid}): " + "; ".join(notes) + ".")
            lines.append("")
    return lines


def report_median(sets):
    """The median canary of every accepted sample of the report (both sides: as a plan judges a
    sample against every arm's samples)."""
    return disturbance.canary_median([r.manifest for s in sets for r in s.runs])


def sample_table(sets, labels, pair, workloads):
    """Markdown lines: the disturbance of every sample's every step (the samples a plan rejected
    too, with why), and which the rule calls disturbed; [] when no sample recorded one."""
    rows = []
    median = report_median(sets)
    for i, s in enumerate(sets):
        runs = [(r, "") for w in workloads for r in s.samples().get(w, [])]
        runs += [(r, f"rejected, rerun: {(r.entry or {}).get('rejected', '')}") for r in s.rejected if r.workload in workloads]
        for r, rejected in runs:
            for st in judged_steps(r):
                cells = disturbance.figures(st)
                if cells is None:
                    continue
                why = disturbance.step_reasons(st, median)
                verdict = rejected or ("disturbed: " + "; ".join(why) if why else "")
                if not rejected and why and (r.entry or {}).get("disturbed"):
                    verdict += " (kept: no rerun left)"
                rows.append(([labels[i]] if pair else []) + [r.testid, str(st.get("threads")), *cells, verdict])
    if not rows:
        return []
    hdr = (["Run"] if pair else []) + ["testid", "threads", *disturbance.HEADERS, "disturbed?"]
    return ["### Host disturbance of each sample", "",
            "Over each step's measured window (k6/lib/disturb.js): CPU steal and the other processes' CPU as "
            "shares of the host's CPU time, CPU pressure (PSI `some`) as a share of the window, the database's "
            "and k6's CPU in cores, and the canary (a fixed CPU calibration, the fastest of "
            f"its timings) just before the load and just after the window. A sample is disturbed when a step's "
            f"steal is above {disturbance.STEAL_SHARE * 100:g}%, the other processes' CPU above "
            f"{disturbance.OTHER_SHARE * 100:g}%, or a canary more than {disturbance.CANARY_SLOWER * 100:g}% slower "
            "than the median canary of the report's samples (docs/report.md, \"Disturbed samples\"); a duet sample's "
            "other processes' CPU leaves out its partner's database and k6, the pair's own load. Rejected "
            "samples are not in the "
            "statistics; their reruns are.", "",
            md_table(hdr, rows), ""]
