"""The statements behind the figures: per thread step, the target's statement digests of the run's
database (k6/lib/statements.js records them in the run manifest, `steps[i].statements`: the
difference of two snapshots of TiDB's statements summary or performance_schema's digest table,
taken at the step's measured window). The report shows, per workload, the top statements of the
highest thread step, and for A vs B, right after "What differs", the statements whose plan or
average latency changed: where the reader looks for why QPS moved.

The A vs B rule, per workload, thread step both sides ran and statement (matched by its digest
text without quotes, case and spaces, so TiDB's and MySQL's texts of one statement match):
- plan: both sides recorded plan digests (TiDB) and the plan that ran most of the statement's
  executions in each sample differs between the sides;
- average latency (the step's total / executions, one value per sample): with 2 or more samples a
  side, the change (Hodges-Lehmann, tidbbench/report/stats.py) is significant (exact Mann-Whitney U,
  Holm-adjusted over all the statement cells of the report) and at least MIN_CHANGE %; with one sample a
  side (no significance possible), at least SINGLE_CHANGE %, marked `n=1`;
- a statement only one side ran (among its top digests) with at least SHARE_ONLY % of that side's
  statement time.
Manifests without statements (runs from before they were recorded) add nothing to the report."""
import math
import re
import statistics

from tidbbench.report import stats
from tidbbench.report.fmt import md_table, num, workload_name

MIN_CHANGE = 10.0  # % of the median average latency: a smaller significant change is not listed
SINGLE_CHANGE = 20.0  # % with one sample a side
SHARE_ONLY = 5.0  # % of a side's statement time, for a statement only that side ran
TABLE_ROWS = 10  # statements per workload table
LISTED = 30  # changed statements listed at most
TEXT = 72  # characters of a statement shown


def norm(text):
    """The matching key of a digest text: lowercase, without quotes and whitespace."""
    return re.sub(r"[\s`\"]", "", (text or "").lower())


def short(text, n=TEXT):
    t = re.sub(r"\s+", " ", (text or "").replace("`", "")).strip()
    t = re.sub(r"\(\s+", "(", re.sub(r"\s+([,)])", r"\1", t))
    return t if len(t) <= n else t[:n - 1] + "…"


def short_plan(pd):
    return pd[:10] if pd else "—"


def recorded(sets):
    """True when any run of the sets carries statements (else the report stays as it was)."""
    return any("statements" in st for s in sets for r in s.runs for st in r.steps)


def step_statements(run, threads):
    st = next((s for s in run.steps if s.get("threads") == threads), None)
    return (st or {}).get("statements"), st


def source_text(st):
    src = (st or {}).get("source") or ""
    if src.startswith("information_schema"):
        return f"TiDB's statements summary (`{src}`)"
    return f"performance_schema's digest table (`{src}`)" if src else "the statement summary"


def why_text(runs):
    """Why statements are missing from these runs' steps ('' when some are there)."""
    whys = []
    for r in runs:
        for s in r.steps:
            st = s.get("statements")
            if st is None:
                w = "not recorded (statements_top=0, or a run from before statements were recorded)"
            elif st.get("available"):
                return ""
            else:
                w = st.get("why") or "not available"
            if w not in whys:
                whys.append(w)
    return "; ".join(whys) or "not recorded"


def workload_lines(sets, labels, w, pair):
    """A workload's "### <workload> statements" section: per side, the top statements of its highest
    thread step with statements (first sample), as markdown lines; [] for manifests without them."""
    if not recorded(sets):
        return []
    lines = [f"### {workload_name(w)} statements", ""]
    for i, s in enumerate(sets):
        run = s.samples()[w][0]
        who = f"**{labels[i]}**, " if pair else ""
        have = [(st.get("threads"), st) for st in run.steps if (st.get("statements") or {}).get("available")]
        if not have:
            lines += [f"{who}testid {run.testid}: no statements: {why_text([run])}.", ""]
            continue
        t, step = max(have, key=lambda x: x[0])
        st = step["statements"]
        top = st.get("top") or []
        elapsed = step.get("elapsed_s") or step.get("seconds") or 0
        total = st.get("total_ms") or 0
        head = (f"{who}{t} thread{'s' if t != 1 else ''} (the highest step), testid {run.testid}: the top {min(len(top), TABLE_ROWS)} of {st.get('digests', len(top))} statement digests of database "
                f"`{(run.manifest.get('target') or {}).get('db', '?')}` by total latency in the step's measured "
                f"window, from {source_text(st)} (snapshots at the window's start and after its graceful tail).")
        lines += [head, ""]
        if st.get("partial"):
            lines += [f"> **Partial:** {st['partial']}.", ""]
        if not top:
            lines += ["No statement of the run's database was recorded in the step.", ""]
            continue
        tidb = any(x.get("plan_digest") for x in top)
        p95 = any(x.get("p95_ms") is not None for x in top)
        # rows examined (MySQL) or processed keys (TiDB; none on unistore, the local stack): shown when recorded
        examined = any(x.get("rows_examined") for x in top)
        hdr = ["Statement", "Executions", "exec/s", "avg (ms)"] + (["p95 (ms)"] if p95 else []) + \
              ([("keys" if tidb else "rows") + "/exec"] if examined else []) + ["time share"] + \
              (["plan digest", "plan cache hits"] if tidb else [])
        rows = []
        for x in top[:TABLE_ROWS]:
            n = x.get("executions") or 0
            row = [f"`{short(x.get('text'))}`", str(n), num(n / elapsed) if elapsed else "—", num(x.get("avg_ms") or 0, 3)]
            if p95:
                row.append(num(x["p95_ms"], 3) if x.get("p95_ms") is not None else "—")
            if examined:
                row.append(num((x.get("rows_examined") or 0) / n, 1) if n else "—")
            row.append(f"{(x.get('total_ms') or 0) / total * 100:.1f}%" if total else "—")
            if tidb:
                hits, pd = x.get("plan_cache_hits"), x.get("plan_digest")
                row += [f"`{short_plan(pd)}`" if pd else "—", f"{hits / n * 100:.0f}%" if hits is not None and n and pd else "—"]
            rows.append(row)
        lines += [md_table(hdr, rows, "l" + "r" * (len(hdr) - 1 - 2 * tidb) + "lr" * tidb), ""]
        lines += missing_stats_lines(s.samples()[w], who)
    return lines


# TiDB's plan text names the statistics a plan was made with: `stats:pseudo` (none) or
# `stats:partial[<column or index>:allEvicted, ...]` (some not in memory yet, e.g. right after a
# restart or an ANALYZE: TiDB loads them on first use and may plan before they arrive)
MISSING_STATS = re.compile(r"stats:(pseudo|partial\[[^\]]*\])")


def missing_stats_lines(runs, who=""):
    """A warning per statement whose plan, in any step of the runs, was made without the table's
    statistics: that step measured a plan the others may not have used (a full scan instead of an
    index lookup, say), which a change between steps or runs must not be mistaken for."""
    seen = {}
    for run in runs:
        for step in run.steps:
            for x in ((step.get("statements") or {}).get("top") or []):
                m = MISSING_STATS.search(x.get("plan") or "")
                if m:
                    d = seen.setdefault(short(x.get("text")), {"threads": set(), "stats": m.group(0)})
                    d["threads"].add(step.get("threads"))
    lines = []
    for text, d in seen.items():
        t = ", ".join(str(n) for n in sorted(d["threads"]))
        lines += [f"> **Statistics not loaded:** {who}`{text}` ran at {t} thread{'s' if t != '1' else ''} with a plan "
              f"TiDB made without the table's statistics (`{d['stats']}` in its plan): those steps measure that "
              "plan, which may not be the one the other steps used (the plan digests above). TiDB loads statistics "
              "on first use (after a restart or an ANALYZE); a warm-up run first, or a higher "
              "`tidb_stats_load_sync_wait`, gives the plans the statistics.", ""]
    return lines


# -- A vs B

def _side(runs, t):
    """{key: {"avg": [per sample], "plans": [dominant plan per sample], "rate": [exec/s], "share": [%],
    "text": str}} for thread step t over the samples; and the samples without statements."""
    out, missing = {}, []
    for r in runs:
        st, step = step_statements(r, t)
        if not (st or {}).get("available"):
            missing.append(r)
            continue
        elapsed = step.get("elapsed_s") or step.get("seconds") or 0
        total = st.get("total_ms") or 0
        per = {}
        texts = {}  # plan digest -> TiDB's plan text
        for x in st.get("top") or []:
            k = norm(x.get("text"))
            d = per.setdefault(k, {"n": 0, "ms": 0.0, "plans": {}, "text": x.get("text")})
            d["n"] += x.get("executions") or 0
            d["ms"] += x.get("total_ms") or 0.0
            if x.get("plan_digest"):
                d["plans"][x["plan_digest"]] = d["plans"].get(x["plan_digest"], 0) + (x.get("executions") or 0)
                if x.get("plan"):
                    texts.setdefault(x["plan_digest"], x["plan"])
        for k, d in per.items():
            if not d["n"]:
                continue
            o = out.setdefault(k, {"avg": [], "plans": [], "rate": [], "share": [], "text": d["text"], "plan_text": {}})
            o["plan_text"].update((p, texts[p]) for p in d["plans"] if p in texts)
            o["avg"].append(d["ms"] / d["n"])
            if d["plans"]:
                o["plans"].append(max(d["plans"], key=d["plans"].get))
            o["rate"].append(d["n"] / elapsed if elapsed else 0.0)
            o["share"].append(d["ms"] / total * 100 if total else 0.0)
    return out, missing


def changes(sets, workloads, family=None):
    """(changed, notes, compared): changed = [dict(workload, threads, text, why, a, b, cmp)] by the
    module's rule, plan changes first; notes = why a step's statements were not compared; compared =
    the (workload, thread step) cells whose statements were compared."""
    found, notes, cells, compared = [], [], [], 0
    for w in workloads:
        runs = [s.samples()[w] for s in sets]
        steps = [{st.get("threads") for r in rs for st in r.steps} for rs in runs]
        for t in sorted(steps[0] & steps[1]):
            sides = [_side(rs, t) for rs in runs]
            if any(not side for side, _ in sides):
                for i, (side, missing) in enumerate(sides):
                    if not side:
                        notes.append((w, t, i, why_text(missing)))
                continue
            compared += 1
            a, b = sides[0][0], sides[1][0]
            for k in list(a) + [k for k in b if k not in a]:
                da, db = a.get(k), b.get(k)
                row = {"workload": w, "threads": t, "text": (da or db)["text"], "a": da, "b": db, "cmp": None,
                       "why": []}
                if not da or not db:
                    d, side = (da, 0) if da else (db, 1)
                    if statistics.median(d["share"]) >= SHARE_ONLY:
                        row["why"].append(f"only in {'AB'[side]}")
                        found.append(row)
                    continue
                if da["plans"] and db["plans"] and set(da["plans"]) != set(db["plans"]):
                    row["why"].append("plan")
                row["cmp"] = stats.compare(da["avg"], db["avg"])
                cells.append(row["cmp"])
                found.append(row)
    stats.adjust(cells)
    if family is not None:  # the caller's list receives the Holm family (its warning, stats.out_of_reach)
        family.extend(cells)
    out = []
    for row in found:
        c = row["cmp"]
        if c is not None:
            if c.reason:
                if c.reason.startswith("n=") and abs(c.change) >= SINGLE_CHANGE:
                    row["why"].append("avg latency (n=1)")
            elif c.significant and abs(c.change) >= MIN_CHANGE:
                row["why"].append("avg latency")
        if row["why"]:
            out.append(row)
    out.sort(key=lambda r: ("plan" not in r["why"],
                            -abs(r["cmp"].change) if r["cmp"] and math.isfinite(r["cmp"].change) else 0))
    return out, notes, compared


def section(sets, labels, workloads):
    """Markdown lines of the A vs B "Statements that changed" section; [] without statements."""
    if not recorded(sets):
        return []
    family = []
    changed, notes, compared = changes(sets, workloads, family)
    lines = ["## Statements that changed", ""]
    lines.append("The statement digests of each side's database per thread step (their executions and latency in the "
             "step's measured window: `steps[].statements` of the run manifests), matched by their text. Listed: a "
             "different plan digest (the plan that ran most of the statement's executions), an average latency that "
             f"changed significantly by {MIN_CHANGE:g}% or more (Mann-Whitney U on the samples, Holm-adjusted over "
             f"the report's statement cells; with one sample a side, {SINGLE_CHANGE:g}% or more, marked n=1: no "
             f"significance), or a statement only one side ran with {SHARE_ONLY:g}% or more of its statement time.")
    lines.append("")
    for w, t, i, why in notes:
        lines.append(f"- {workload_name(w)} at {t} threads: not compared, {labels[i]} has no statements: {why}.")
    if notes:
        lines.append("")
    warn = stats.out_of_reach(family)
    if warn:
        tested = sum(1 for c in family if c.testable)  # the cells Holm adjusts (stats.adjust)
        rest = len(family) - tested
        more = f" ({rest} more cannot be tested: a side with one sample, or no usable figure)" if rest else ""
        lines += [f"> **Warning:** the average latencies are compared in one family of {tested} statement cells{more}. "
              f"{warn} Only a plan change or a statement one side alone ran can be listed.", ""]
    if not changed:
        lines.append("No statement's plan or average latency changed by this rule." if compared else
                 "No statements to compare.")
        lines.append("")
        return lines
    rows = []

    def median_text(d, k, digits=3):
        return num(statistics.median(d[k]), digits) if d else "—"

    def plans(d):
        return " / ".join(f"`{short_plan(p)}`" for p in dict.fromkeys(d["plans"])) if d and d["plans"] else "—"
    for r in changed[:LISTED]:
        c = r["cmp"]
        change = f"{c.change:+.1f}%" if c and math.isfinite(c.change) else "—"
        p = stats.p_text(c) if c else ""
        rows.append([workload_name(r["workload"]), str(r["threads"]), f"`{short(r['text'], 60)}`",
                     ", ".join(r["why"]).replace("only in A", f"only in {labels[0]}").replace(
                         "only in B", f"only in {labels[1]}"),
                     median_text(r["a"], "avg"), median_text(r["b"], "avg"), change, p, plans(r["a"]), plans(r["b"]),
                     median_text(r["a"], "rate", 1), median_text(r["b"], "rate", 1)])
    a, b = labels
    lines.append(md_table(["Workload", "Threads", "Statement", "Changed", f"{a} avg (ms)", f"{b} avg (ms)", "avg change",
                       "p", f"{a} plan", f"{b} plan", f"{a} exec/s", f"{b} exec/s"], rows, "lrllrrrlllrr"))
    lines.append("")
    if len(changed) > LISTED:
        lines.append(f"... and {len(changed) - LISTED} more (all are in the run manifests).")
        lines.append("")
    lines.extend(plan_lines(changed[:LISTED], labels))
    return lines


def plan_lines(changed, labels):
    """The plans (TiDB's PLAN text, as the run manifests recorded them) of the statements whose plan
    changed, each side's, once per statement and pair of plans."""
    lines, seen = [], set()
    for r in changed:
        if "plan" not in r["why"]:
            continue
        pair = (norm(r["text"]), tuple(r["a"]["plans"]), tuple(r["b"]["plans"]))
        if pair in seen:
            continue
        seen.add(pair)
        texts = [[(p, d["plan_text"].get(p)) for p in dict.fromkeys(d["plans"])] for d in (r["a"], r["b"])]
        if not any(t for side in texts for _, t in side):
            continue
        if not lines:
            lines += ["The plans that changed (TiDB's `PLAN` column of the statements summary, as the runs recorded it):", ""]
        lines += [f"**{workload_name(r['workload'])}, {r['threads']} threads: `{short(r['text'], 60)}`**", ""]
        for label, side in zip(labels, texts):
            for p, t in side:
                t = "\n".join(ln[1:] if ln.startswith("\t") else ln for ln in (t or "(not recorded)").splitlines())
                lines += [f"{label}, plan `{short_plan(p)}`:", "", "```text", t.rstrip(), "```", ""]
    return lines
