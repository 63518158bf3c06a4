"""Why a series changed: the evidence of one change point (scripts/history), computed between the
last run before it and the first run after it, ranked, in one list.

1. Settings that differ between the two runs, as the A vs B report's "What differs" finds them
   (tidbbench/report/differs.py: global variables, versions, options, target, the load generator's host,
   the data), plus the build's git hash and TiDB's configuration (the `tidb_config` variable, key
   by key, when the run recorded it). Each is ranked by how well it explains a *step*: its
   consistency is the share of the segment's runs before the change point (up to SEGMENT_RUNS
   nearest) that have the before value, times the share after that have the after value. A
   setting switched with the change scores 1; one that flips back and forth scores low.
2. Statements whose plan or average latency changed between the two runs
   (tidbbench/report/statements.py's A vs B rule, one sample a side), the series' thread step first.
3. The functions whose database CPU per query moved most between the two runs' CPU profiles at
   the series' thread step (tidbbench/report/profiles.py; one run a side: the largest differences,
   not a test), FUNCTIONS of them.
4. The change of server and client CPU per query (the series' points), the run before against
   the run after and the segments' means.
4. Whether the host was disturbed on either side: the series' step of the run before and of the
   run after, by the rule of tidbbench/disturbance.py (steal, the other processes' CPU, the
   canary against the median of the segments' canaries), with their figures.

Order: settings with a consistency of at least CONSISTENT, then statements, then functions, then
resources, then the remaining settings (they differ between the two runs but not as a step)."""
import json
import statistics
from pathlib import Path

from tidbbench import disturbance
from tidbbench.report import differs, profiles, statements
from tidbbench.report.fmt import product_name
from tidbbench.report.manifest import Run, RunSet
from tidbbench.report.disturb import judged_steps

SEGMENT_RUNS = 5  # runs of each segment compared for a setting's consistency
CONSISTENT = 0.5
KIND_ORDER = {"version": 0, "variable": 1, "config": 2, "option": 3, "target": 4, "host": 5, "data": 6, "samples": 7}
SUMMARY_LINES = 12  # lines of the stored evidence summary
FUNCTIONS = 3  # the functions that moved most, from the two runs' CPU profiles


class Manifests:
    """Run manifests by path, each read once, with the sweep entry (the sample's host, the
    sweep's reset/ANALYZE and set_global) from a sweep manifest beside it."""

    def __init__(self):
        self.cache, self.sweeps = {}, {}

    def run(self, point):
        path = Path(point["source_file"])
        if path not in self.cache:
            try:
                m = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                self.cache[path] = None
            else:
                entry, sweep = self._entry(path.parent, m.get("testid") or path.stem)
                self.cache[path] = (Run(testid=m.get("testid") or path.stem, manifest=m, path=path, entry=entry), sweep)
        return self.cache[path]

    def _entry(self, folder, testid):
        if folder not in self.sweeps:
            idx = {}
            for f in sorted(folder.glob("sweep-*.json")):
                try:
                    s = json.loads(f.read_text())
                except (OSError, json.JSONDecodeError):
                    continue
                for e in s.get("runs") or []:
                    if isinstance(e, dict) and e.get("testid"):
                        idx[e["testid"]] = (e, s)
            self.sweeps[folder] = idx
        return self.sweeps[folder].get(testid, (None, None))


def config_items(mb, ma):
    """[(key, before, after)] of TiDB's configuration (`tidb_config`, JSON) that differ."""
    def flat(m):
        raw = (m.get("target_variables") or {}).get("tidb_config")
        try:
            cfg = json.loads(raw) if raw else None
        except (TypeError, json.JSONDecodeError):
            return None
        out = {}

        def walk(x, pre):
            if isinstance(x, dict):
                for k, v in x.items():
                    walk(v, f"{pre}.{k}" if pre else k)
            else:
                out[pre] = json.dumps(x)
        walk(cfg, "")
        return out
    a, b = flat(mb), flat(ma)
    if a is None or b is None:
        return []
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _getter(kind, name):
    """The function reading one setting of a (Run, sweep) as differs.py's row `(kind, name)` shows it."""
    def var(r, s):
        return (r.manifest.get("target_variables") or {}).get(name)
    if kind == "variable":
        return var
    if kind == "option":
        from tidbbench.commands import value_text
        return lambda r, s: value_text(r.options[name]) if name in r.options else None
    if kind == "config":
        return None
    if kind == "version" and name == "git hash":
        from tidbbench.history.store import git_hash
        return lambda r, s: git_hash(r.manifest)
    if kind == "version" and name == "product":
        return lambda r, s: product_name(r.manifest.get("product", ""))
    if kind == "version":
        return lambda r, s: ((r.manifest.get("version_full") or r.manifest.get("version") or "").splitlines() or [""])[0]
    if kind == "target":
        return lambda r, s: "{host}:{port}/{db}".format(
            **{k: (r.manifest.get("target") or {}).get(k, "?") for k in ("host", "port", "db")})
    if kind == "host" and name.startswith("load generator "):
        k = name[len("load generator "):]
        return lambda r, s: (r.manifest.get("load_generator") or {}).get(k)
    if kind == "host" and name.startswith("host "):
        k = name[len("host "):]
        return lambda r, s: differs.sample_host(r).get(k)
    if kind == "data":
        return lambda r, s: (s or {}).get(name, False)
    return None


def _text(v):
    return "—" if v is None else str(v)


def consistency(get, before, after, vb, va):
    """Share of the before runs showing vb times share of the after runs showing va."""
    if get is None:
        return None
    b = [get(r, s) for r, s in before]
    a = [get(r, s) for r, s in after]
    if not b or not a:
        return None
    return (sum(_text(x) == vb for x in b) / len(b)) * (sum(_text(x) == va for x in a) / len(a))


def settings(rb, sb, ra, sa, seg_before, seg_after):
    """Setting items that differ between run rb (sweep sb) and run ra (sweep sa)."""
    sets = [RunSet(id=rb.testid, kind="run", runs=[rb], sweep=sb), RunSet(id=ra.testid, kind="run", runs=[ra], sweep=sa)]
    rows, _varying = differs.rows(sets)
    from tidbbench.history.store import git_hash
    gb, ga = git_hash(rb.manifest), git_hash(ra.manifest)
    if gb != ga:
        rows.insert(0, ("version", "git hash", [gb or "—", ga or "—"]))
    rows += [("config", k, [_text(b), _text(a)]) for k, b, a in config_items(rb.manifest, ra.manifest)]
    items = []
    for kind, name, (vb, va) in rows:
        c = consistency(_getter(kind, name), seg_before, seg_after, vb, va)
        items.append({"kind": kind, "name": name, "before": vb, "after": va, "consistency": c})
    items.sort(key=lambda x: (-(x["consistency"] if x["consistency"] is not None else 0.5),
                              KIND_ORDER.get(x["kind"], 9)))
    return items


def statement_items(rb, ra, threads):
    """Statements whose plan or average latency changed between the two runs (n=1 a side)."""
    if not statements.recorded([RunSet(id="b", kind="run", runs=[rb]), RunSet(id="a", kind="run", runs=[ra])]):
        return []
    if rb.workload != ra.workload:
        return []
    sets = [RunSet(id="b", kind="run", runs=[rb]), RunSet(id="a", kind="run", runs=[ra])]
    changed, _notes, _compared = statements.changes(sets, [rb.workload])
    changed.sort(key=lambda r: r["threads"] != threads)
    out = []
    for r in changed:
        why = ", ".join(r["why"]).replace("only in A", "only before").replace("only in B", "only after")
        a, b = r["a"], r["b"]
        detail = []
        if a and b:
            ma, mb = statistics.median(a["avg"]), statistics.median(b["avg"])
            detail.append(f"avg {ma:.3f} -> {mb:.3f} ms" + (f" ({r['cmp'].change:+.1f}%)" if r["cmp"] else ""))
            if "plan" in r["why"]:
                detail.append(f"plan {statements.short_plan(a['plans'][0])} -> {statements.short_plan(b['plans'][0])}")
        out.append({"kind": "statement", "name": statements.short(r["text"], 60), "threads": r["threads"],
                    "why": why, "before": None, "after": None, "detail": "; ".join(detail), "consistency": None})
    return out


def function_items(rb, ra, threads):
    """The FUNCTIONS functions whose flat database CPU per query moved most between the two runs'
    profiles at step `threads` (none when either has no profile to rank)."""
    a, b = profiles.load_step(rb, threads), profiles.load_step(ra, threads)
    if not (a.ok and b.ok):
        return []
    rows = [r for r in profiles.compare([a], [b])[0] if r[6] == "function"]
    rows.sort(key=lambda r: -abs(r[2] - r[1]))
    return [{"kind": "function", "name": r[0], "threads": threads, "before": f"{r[1]:.2f} µs/query",
             "after": f"{r[2]:.2f} µs/query", "consistency": None,
             "detail": ("new" if r[3] == float("inf") else f"{r[3]:+.1f}%") + "; one run a side, not a test"}
            for r in rows[:FUNCTIONS] if r[2] != r[1]]


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return statistics.fmean(xs) if xs else None


def resource_items(seg_before_pts, seg_after_pts):
    out = []
    for col, what in (("server_cpu_per_query", "server CPU per query"), ("client_cpu_per_query", "client CPU per query")):
        b, a = seg_before_pts[-1].get(col), seg_after_pts[0].get(col)
        mb, ma = _mean(p.get(col) for p in seg_before_pts), _mean(p.get(col) for p in seg_after_pts)
        if b is None or a is None:
            out.append({"kind": "resource", "name": what, "before": None, "after": None, "consistency": None,
                        "detail": "not recorded" + (" (Prometheus gave no figure at ingest: not reachable, or the step was shorter than two scrapes)" if col.startswith("server") else "")})
            continue
        ch = (a / b - 1) * 100 if b else None
        seg = f"; segments' means {mb * 1e6:.1f} -> {ma * 1e6:.1f} µs ({(ma / mb - 1) * 100:+.1f}%)" if mb and ma else ""
        out.append({"kind": "resource", "name": what, "before": f"{b * 1e6:.1f} µs", "after": f"{a * 1e6:.1f} µs",
                    "change_pct": ch, "consistency": None,
                    "detail": (f"{ch:+.1f}%" if ch is not None else "") + seg})
    return out


def host_item(rb, ra, threads, runs_b, runs_a):
    """Whether the host was disturbed in the series' step of the run before and the run after."""
    median = disturbance.canary_median([r.manifest for r, _ in runs_b + runs_a] + [rb.manifest, ra.manifest])
    sides = []
    for r in (rb, ra):
        st = next((s for s in judged_steps(r) if s.get("threads") == threads), None) or {}
        if not st.get("disturbance"):
            sides.append(("not recorded", None))
            continue
        why = disturbance.step_reasons(st, median)
        sides.append((disturbance.summary(st), "; ".join(why) if why else ""))
    (sb, wb), (sa, wa) = sides
    if wb is None and wa is None:
        verdict = "not recorded on either side (runs of a build without k6/lib/disturb.js)"
    else:
        named = [f"the run {side} was disturbed ({w})" for side, w in (("before", wb), ("after", wa)) if w]
        verdict = "; ".join(named) if named else "neither side was disturbed by the rule"
    return {"kind": "host", "name": f"host disturbance at {threads} threads", "before": sb, "after": sa,
            "consistency": None, "detail": verdict, "disturbed": bool(wb or wa)}


def evidence(cp, pts, manifests):
    """The ranked evidence items of ChangePoint cp; pts = the metric's points of its series
    (oldest first), as historycp.series_change_points saw them."""
    i = cp.index
    seg_b = pts[max(i - cp.runs_before, i - SEGMENT_RUNS):i]
    seg_a = pts[i:i + min(cp.runs_after, SEGMENT_RUNS)]
    before, after = manifests.run(pts[i - 1]), manifests.run(pts[i])
    items = []
    if before is None or after is None:
        gone = [p["source_file"] for p, m in ((pts[i - 1], before), (pts[i], after)) if m is None]
        items.append({"kind": "missing", "name": "run manifest", "before": None, "after": None, "consistency": None,
                      "detail": f"not readable: {', '.join(gone)} (settings and statements not compared)"})
        sets = []
    else:
        runs_b = [x for x in (manifests.run(p) for p in seg_b) if x]
        runs_a = [x for x in (manifests.run(p) for p in seg_a) if x]
        sets = settings(before[0], before[1], after[0], after[1], runs_b, runs_a)
    first = [s for s in sets if s["consistency"] is None or s["consistency"] >= CONSISTENT]
    rest = [s for s in sets if s not in first]
    stmts = statement_items(before[0], after[0], pts[i].get("threads")) if before and after else []
    funcs = function_items(before[0], after[0], pts[i].get("threads")) if before and after else []
    host = [host_item(before[0], after[0], pts[i].get("threads"), runs_b, runs_a)] if before and after else []
    # a disturbed host is said before the settings: the change may be the machine's
    items += (host if any(h["disturbed"] for h in host) else []) + first + stmts + funcs + resource_items(seg_b, seg_a) \
        + (host if not any(h["disturbed"] for h in host) else []) + rest
    for n, it in enumerate(items, 1):
        it["rank"] = n
        it["text"] = line(it)
    return items


def line(it):
    k = it["kind"]
    if k == "statement":
        return f"statement `{it['name']}` at {it['threads']} threads: {it['why']}" + \
            (f" ({it['detail']})" if it["detail"] else "")
    if k == "host":
        return f"{it['name']}: {it['detail']} (before: {it['before']}; after: {it['after']})"
    if k == "function":
        return f"function `{it['name']}` at {it['threads']} threads: {it['before']} -> {it['after']} ({it['detail']})"
    if k in ("resource", "missing"):
        if it.get("before") is None:
            return f"{it['name']}: {it['detail']}"
        return f"{it['name']}: {it['before']} -> {it['after']} ({it['detail']})"
    c = it.get("consistency")
    cons = f" (consistency {c:.2f})" if c is not None else ""
    return f"{k} {it['name']}: {it['before']} -> {it['after']}{cons}"


def summary(items):
    """The stored evidence: one line per item, ranked, at most SUMMARY_LINES."""
    lines = [f"{it['rank']}. {it['text']}" for it in items[:SUMMARY_LINES]]
    if len(items) > SUMMARY_LINES:
        lines.append(f"... and {len(items) - SUMMARY_LINES} more (scripts/history changes --json)")
    return "\n".join(lines)
