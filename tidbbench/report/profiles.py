"""Where the database's CPU went: the report's section on the steps' CPU profiles (k6/lib/profiles.js
keeps one per step beside the run's manifest, in pprof's format; tidbbench/report/pprof.py reads it).

One run: per workload, at its highest step with a profile, the top functions by database CPU per
query (µs of CPU per query: the profile's CPU time over the step's queries in the profile's own
duration, queries x profile seconds / measured seconds), flat (in the
function itself) and cumulative (with its callees), the same by package, and a flame graph. Then,
TiDB's first, each other profile of the step (the manifest's component_profiles: TiKV's, PD's,
k6's own with profile_client): its CPU per query and top functions, or why there is none; for k6,
beside the database's, and whether it was CPU-bound (loadgen.SATURATED of its usable cores: the
client may then have set the pace).

A against B, at the highest step both sides profiled: a differential flame graph of the sides'
mean CPU per query; with two or more samples a side, each function and package whose flat CPU is
at least SHARE_MIN of the pooled CPU is compared by the report's exact rank test
(stats.mann_whitney_u) of its per-sample flat µs/query, Holm's adjustment over all tested; the
table lists those that moved significantly. With one sample a side the diff is shown and nothing is
called significant. Functions found on one side only are named (those with SHARE_MIN of that
side's CPU; the rest counted). A profile with fewer than MIN_SAMPLES samples is not ranked: it says
so."""
import math
from collections import defaultdict
from dataclasses import dataclass

from tidbbench.report import flame, loadgen, pprof, stats
from tidbbench.report.fmt import md_table, workload_name

MIN_SAMPLES = 200  # fewer samples (2 s of CPU at Go's 100 Hz) rank noise: a 10% share is +-2% at 200
TOP = 15  # functions (and packages) in a run's tables
SHARE_MIN = 0.02  # A vs B: only functions and packages with at least this share of the pooled CPU (flat) are tested
DIFF_TOP = 15  # functions in a one-sample-a-side diff
ONE_SIDE_MAX = 10  # functions named as found on one side only (those with at least SHARE_MIN of its CPU)
COMPONENT_TOP = 8  # functions in the table of each profile beside TiDB's


@dataclass
class StepProfile:
    """One sample's profile at one step, per query, or why there is none."""
    testid: str
    threads: int
    why: str = ""
    flat: dict = None  # function -> µs/query
    cum: dict = None
    total: float = 0.0  # µs/query, all of the profile's CPU
    samples: int = 0
    stacks: list = None  # [(stack, µs/query)]
    functions: set = None

    @property
    def ok(self):
        return not self.why


def load_step(run, threads, component=None):
    """The StepProfile of run's step `threads` (its manifest's `profile` and file; or, given a
    component such as tikv-1 or client, that one of its `component_profiles`)."""
    step = next((s for s in run.steps if s.get("threads") == threads), None)
    sp = StepProfile(run.testid, threads)
    pr = (step or {}).get("profile") if component is None else ((step or {}).get("component_profiles") or {}).get(component)
    if not pr:
        sp.why = "no profile recorded (the run had profile=false, or its manifest predates profiles)"
        return sp
    if not pr.get("available"):
        sp.why = f"no profile: {pr.get('why') or 'no reason recorded'}"
        return sp
    path = run.path.parent / pr["file"]
    try:
        prof = pprof.read(path)
    except (OSError, pprof.ProfileError) as e:
        sp.why = f"no profile: {pr['file']} cannot be read ({e})"
        return sp
    queries = pr.get("queries") or ((step.get("queries") or {}).get("total"))
    # the queries of the profile's own duration: TiDB's profiles run a little short of the seconds
    # asked (4.6 s of 5, 3.3 of 4, 33.9 of 35 on the local TiDB: its profiler hands out whole 1-s slices), the step's queries span all of it
    measured = step.get("elapsed_s") or step.get("seconds")
    if queries and measured and prof.duration_ns:
        queries *= min(1.0, prof.duration_ns / 1e9 / measured)
    return per_query(sp, prof, queries)


def per_query(sp, prof, queries):
    """Fills sp from a parsed profile and the step's query count."""
    sp.samples = prof.sample_count()
    if not queries:
        sp.why = "no profile to rank: the step ran no query"
        return sp
    if sp.samples < MIN_SAMPLES:
        sp.why = (f"too few samples to rank: {sp.samples} in {prof.duration_ns / 1e9:.0f} s "
                  f"(at least {MIN_SAMPLES} needed; the profiled process was nearly idle)")
        return sp
    i = prof.value_index()
    # cpu/nanoseconds values as they are; counts (an older pprof-rs' cpu/count) times the period
    unit = 1.0 if prof.sample_types[i][1] == "nanoseconds" else float(prof.period or 1)
    scale = unit / 1000.0 / queries  # ns -> µs, per query
    flat, cum, stacks = defaultdict(float), defaultdict(float), []
    for stack, vals in prof.samples:
        v = vals[i] * scale
        if not stack or v == 0:
            continue
        flat[stack[0]] += v
        for name in set(stack):
            cum[name] += v
        stacks.append((stack, v))
    sp.flat, sp.cum, sp.stacks = dict(flat), dict(cum), stacks
    sp.total = sum(flat.values())
    sp.functions = set(prof.functions)
    return sp


def _u(x):
    return f"{x:,.3f}" if x < 10 else f"{x:,.1f}"


def _pct(part, whole):
    return f"{100 * part / whole:.1f}%" if whole else "—"


def highest(runs_by_side):
    """The highest thread step every side's runs have (None when none is shared)."""
    common = None
    for runs in runs_by_side:
        ts = {s.get("threads") for r in runs for s in r.steps}
        common = ts if common is None else common & ts
    return max(common) if common else None


def one_run(w, run, out, rel_dir):
    threads = highest([[run]])
    if threads is None:
        return []
    sp = load_step(run, threads)
    L = [f"### {workload_name(w)}: where the database's CPU went ({threads} threads)", ""]
    if not sp.ok:
        return L + [f"testid {run.testid}, {threads} threads: {sp.why}.", ""] + components(run, threads, sp)
    L.append(f"testid {run.testid}: {sp.samples:,} samples, {_u(sp.total)} µs of database CPU per query. "
             "Flat: in the function itself; cumulative: with what it calls.")
    L.append("")
    rows = [[f"`{f}`", f"`{flame.package_of(f)}`", _u(v), _pct(v, sp.total), _u(sp.cum.get(f, 0)), _pct(sp.cum.get(f, 0), sp.total)]
            for f, v in sorted(sp.flat.items(), key=lambda kv: -kv[1])[:TOP]]
    L.append(md_table(["Function", "Package", "flat µs/query", "flat %", "cum µs/query", "cum %"], rows, "llrrrr"))
    L.append("")
    pk = defaultdict(float)
    for f, v in sp.flat.items():
        pk[flame.package_of(f)] += v
    rows = [[f"`{p}`", _u(v), _pct(v, sp.total)] for p, v in sorted(pk.items(), key=lambda kv: -kv[1])[:TOP]]
    L.append(md_table(["Package", "flat µs/query", "flat %"], rows, "lrr"))
    L.append("")
    name = f"{w}-t{threads}.svg"
    (out / name).write_text(flame.svg(flame.tree(sp.stacks), f"{workload_name(w)}, {threads} threads: "
                                      f"database CPU per query ({_u(sp.total)} µs)"))
    L += [f"[![flame graph of {workload_name(w)}]({rel_dir}/{name})]({rel_dir}/{name})", ""]
    return L + components(run, threads, sp)


def _component_key(name):
    kind, _, n = name.partition("-")
    return ({"tikv": 0, "pd": 1, "client": 2}.get(kind, 3), int(n) if n.isdigit() else 0, name)


COMPONENT_NAMES = {"tikv": "TiKV", "pd": "PD", "client": "k6"}


def _component_title(name):
    """tikv-2 -> TiKV 2, pd-1 -> PD 1, client -> k6."""
    kind, _, n = name.partition("-")
    return f"{COMPONENT_NAMES.get(kind, kind)} {n}".strip()


def components(run, threads, db):
    """The lines of the step's other profiles (component_profiles), TiKV's, PD's, then k6's; db is
    TiDB's StepProfile (k6's CPU per query is put beside it)."""
    step = next((s for s in run.steps if s.get("threads") == threads), {})
    cps = step.get("component_profiles") or {}
    L = []
    for name in sorted(cps, key=_component_key):
        sp = load_step(run, threads, name)
        title = _component_title(name)
        if not sp.ok:
            # too few samples to rank k6's functions still says whether it was CPU-bound
            more = f" {pace(run, cps[name])}" if name == "client" and cps[name].get("available") else ""
            L += [f"{title}: {sp.why}.{more}", ""]
            continue
        if name == "client":
            beside = f" against {_u(db.total)} µs of TiDB's ({sp.total / db.total:.2f}x)" if db.ok and db.total else ""
            L += [f"k6 (the load generator, its own process): {sp.samples:,} samples, {_u(sp.total)} µs of k6's CPU "
                  f"per query{beside}. {pace(run, cps[name])}", ""]
        else:
            L += [f"{title}: {sp.samples:,} samples, {_u(sp.total)} µs of its CPU per query.", ""]
        rows = [[f"`{f}`", _u(v), _pct(v, sp.total), _u(sp.cum.get(f, 0))]
                for f, v in sorted(sp.flat.items(), key=lambda kv: -kv[1])[:COMPONENT_TOP]]
        L += [md_table([f"{title}: function", "flat µs/query", "flat %", "cum µs/query"], rows, "lrrr"), ""]
    return L


def pace(run, pr):
    """Does the client set the pace? k6's CPU over its profile's window (the manifest's cpu_s and
    seconds) against its usable cores (GOMAXPROCS, else the host's; loadgen.usable_cores)."""
    cores = loadgen.usable_cores(run.manifest.get("load_generator") or {})
    if not pr.get("seconds") or not cores:
        return "Its usable cores are not recorded: whether it was CPU-bound is not known."
    busy = pr.get("cpu_s", 0) / pr["seconds"]
    share = busy / cores
    verdict = ("k6 was CPU-bound: the client may have set the pace" if share >= loadgen.SATURATED else
               f"below {loadgen.SATURATED:.0%}: by its CPU, the client did not set the pace")
    return f"k6 used {busy:.2f} CPU s per second of the window, {share:.0%} of its {cores:g} usable core(s): {verdict}."


def _mean_tree(sps, root, base):
    for sp in sps:
        flame.tree(sp.stacks, 1.0 / len(sps), root, base=base)
    return root


def _median(xs):
    return stats.median(xs) if xs else 0.0


def units(sp):
    """{(kind, name): flat µs/query} of a StepProfile: each function, and each package (the sum of
    its functions: a cost spread over many small functions, as a log encoder's, shows there)."""
    out = defaultdict(float)
    for f, v in sp.flat.items():
        out[("function", f)] += v
        out[("package", flame.package_of(f))] += v
    return out


def compare(a, b):
    """The comparison of samples a and b ([StepProfile] with profiles): rows [name, A median, B median,
    change %, p, p after Holm, kind] for the tested units (functions and packages whose flat CPU is at
    least SHARE_MIN of the pooled CPU; p None with one sample on a side), the number tested, and the
    functions found on one side only with at least SHARE_MIN of that side's CPU
    [(function, side, share)], and how many more there are below it."""
    ua, ub = [units(sp) for sp in a], [units(sp) for sp in b]
    pooled = defaultdict(float)
    for u in ua + ub:
        for k, v in u.items():
            pooled[k] += v / len(ua + ub)
    whole = sum(v for (kind, _), v in pooled.items() if kind == "function")
    tested = sorted(k for k, v in pooled.items() if whole and v / whole >= SHARE_MIN)
    rows = []
    for k in tested:
        va, vb = [u.get(k, 0.0) for u in ua], [u.get(k, 0.0) for u in ub]
        ma, mb = _median(va), _median(vb)
        p = stats.mann_whitney_u(va, vb)[1] if len(a) > 1 and len(b) > 1 else None
        rows.append([k[1], ma, mb, (mb / ma - 1) * 100 if ma > 0 else math.inf, p, None, k[0]])
    for r, p in zip(rows, stats.holm([r[4] for r in rows])):
        r[5] = p
    fa = set().union(*(sp.functions for sp in a))
    fb = set().union(*(sp.functions for sp in b))
    only, below = [], 0
    for f in fa ^ fb:
        side, sps = ("baseline", a) if f in fa else ("candidate", b)
        share = sum(sp.cum.get(f, 0.0) / sp.total for sp in sps if sp.total) / len(sps)
        if share >= SHARE_MIN:
            only.append((f, side, share))
        else:
            below += 1
    only.sort(key=lambda x: (-x[2], x[0]))
    return rows, len(tested), only, below


def _unit(r):
    return f"`{r[0]}`" + (" (package)" if r[6] == "package" else "")


def pair(w, samples, labels, out, rel_dir):
    threads = highest(samples)
    if threads is None:
        return []
    L = [f"### {workload_name(w)}: what moved in the database's CPU ({threads} threads)", ""]
    sides, notes = [], []
    for i, runs in enumerate(samples):
        sps = [load_step(r, threads) for r in runs]
        for sp in sps:
            if not sp.ok:
                notes.append(f"{labels[i]}, testid {sp.testid}: {sp.why}")
        sides.append([sp for sp in sps if sp.ok])
    a, b = sides
    if notes:
        L += [f"- {n}" for n in notes] + [""]
    if not a or not b:
        return L + ["No comparison: a side has no profile to compare.", ""]
    rows, k, only, below = compare(a, b)
    ta, tb = _median([sp.total for sp in a]), _median([sp.total for sp in b])
    L.append(f"Database CPU per query (median of the samples' profiles): {_u(ta)} µs ({labels[0]}, {len(a)} "
             f"sample{'s' if len(a) > 1 else ''}) against {_u(tb)} µs ({labels[1]}, {len(b)}), {(tb / ta - 1) * 100:+.1f}%.")
    L.append("")
    name = f"{w}-t{threads}-diff.svg"
    root = _mean_tree(b, _mean_tree(a, flame.Node("all"), True), False)
    (out / name).write_text(flame.svg(root, f"{workload_name(w)}, {threads} threads: {labels[1]} against {labels[0]}",
                                      diff=True))
    L += [f"[![differential flame graph of {workload_name(w)}]({rel_dir}/{name})]({rel_dir}/{name})", ""]
    hdr = ["Function or package", f"{labels[0]} µs/query", f"{labels[1]} µs/query", "change"]
    rows.sort(key=lambda r: -abs(r[2] - r[1]))
    if len(a) < 2 or len(b) < 2:
        L.append(f"One sample {'a side' if len(a) == len(b) else 'on a side'}: the largest differences of flat CPU "
                 "per query are shown; nothing is called significant (a rank test needs two or more samples a side; "
                 "`scripts/sweep --plan` repeats them).")
        L.append("")
        L.append(md_table(hdr, [[_unit(r), _u(r[1]), _u(r[2]), _chg(r[3])] for r in rows[:DIFF_TOP]], "lrrr"))
        L.append("")
    else:
        L += tested_lines(rows, k, len(a), len(b), hdr)
    if only:
        named = ", ".join(f"`{f}` ({side} only, {s:.1%})" for f, side, s in only[:ONE_SIDE_MAX])
        more = f" and {len(only) - ONE_SIDE_MAX} more" if len(only) > ONE_SIDE_MAX else ""
        L += [f"Functions found on one side only, with at least {SHARE_MIN:.0%} of that side's CPU (cumulative): "
              f"{named}{more}.", ""]
    if below:
        L += [f"{below} more function{'s' if below != 1 else ''} appear on one side only with less than "
              f"{SHARE_MIN:.0%} of its CPU each (rare enough for the sampling to miss them on the other side).", ""]
    return L


def tested_lines(rows, k, na, nb, hdr):
    """The tested units' sentence and table of significant ones (two or more samples a side)."""
    sig = [r for r in rows if r[5] is not None and r[5] < stats.ALPHA]
    L = [f"{k} functions and packages with at least {SHARE_MIN:.0%} of the pooled CPU (flat) tested, each by "
         f"the exact rank test of its per-sample flat µs/query, Holm's adjustment over the {k}: "
         + (f"{len(sig)} moved significantly (p < {stats.ALPHA:g} after Holm), largest change in µs/query first."
            if sig else f"none moved significantly (p < {stats.ALPHA:g} after Holm)."), ""]
    if stats.min_p(na, nb) * max(k, 1) >= stats.ALPHA:
        need = stats.samples_needed(max(k, 1))
        L += [f"With {na} and {nb} samples the smallest p is {stats.min_p(na, nb):.3f}: after Holm over {k} none can "
              f"be significant" + (f"; use {need} or more samples a side." if need else "."), ""]
    if sig:
        L += [md_table(hdr + ["p (Holm)", "p alone"],
                       [[_unit(r), _u(r[1]), _u(r[2]), _chg(r[3]), stats.fmt_p(r[5]), stats.fmt_p(r[4])] for r in sig],
                       "lrrrrr"), ""]
    return L


def _chg(x):
    return "new" if math.isinf(x) else f"{x:+.1f}%"


def section(rep, out):
    """The section's markdown lines for a report (tidbbench/report/report.py Report), its flame
    graphs written under out/profiles/. Empty when no run has a profile recorded."""
    if not any(s.get("profile") or s.get("component_profiles") for st in rep.sets for r in st.runs for s in r.steps):
        return []
    d = out / "profiles"
    d.mkdir(parents=True, exist_ok=True)
    L = ["## Where the database's CPU went", "",
         "From the database's own CPU profile over each step's measured window (TiDB's status port, kept beside "
         "the run's manifest as `<testid>.profiles/step-<threads>.pb.gz`: `go tool pprof` opens it), and, taken at "
         "once over the same window, TiKV's, PD's and k6's own where the run asked for them "
         "(`step-<threads>.tikv-1.pb.gz`, `.pd-1`, `.client`). µs/query: "
         "the profile's CPU time over the step's queries in the profile's own duration.", ""]
    for w in rep.workloads:
        if rep.pair:
            L += pair(w, [st.samples()[w] for st in rep.sets], rep.labels, d, "profiles")
        else:
            L += one_run(w, rep.sets[0].by_workload()[w], d, "profiles")
    return L
