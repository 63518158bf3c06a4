"""What disturbed a run, from its manifest (results/<testid>.json): steps cut by SIGINT/SIGTERM
(`interrupted`), steps during which no event completed for a while (`max_gap_s`,
`max_gap_start`: a server killed or unreachable) with their reconnects, and steps whose
figures come from k6's own summary because Prometheus has no data for them; and threads that ran
far below their share of a step's events (`fairness.warnings`: k6/lib/summary.js)."""
from tidbbench.report.fmt import utc

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


def step_notes(run, figs):
    """Sentences naming the disturbed steps of a run: interrupted, no event for a while,
    figures from k6's summary."""
    out = []
    by_threads = {f.threads: f for f in figs}
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
        notes = step_notes(run, figs.get((i, workload), []))
        if run.manifest.get("interrupted") and not any("interrupted" in n for n in notes):
            notes.insert(0, f"the run was {interrupted_text(run)}")
        if notes:
            who = f"{labels[i]}, " if pair else ""
            lines.append(f"**Disturbances** ({who}testid {run.testid}): " + "; ".join(notes) + ".")
            lines.append("")
    return lines
