#!/usr/bin/env python3
"""Merges the per-instance summaries of one split k6 run into the run's manifest.

A run split over N k6 processes (`scripts/k6 run --instances N`, k6-operator's parallelism,
or one command per host) leaves results/<testid>.instance-<i>.json per process: the single
run schema (k6/lib/summary.js) plus "instance": {"id", "segment", "sequence"} and, per step,
its counts, measured seconds (elapsed_s) and latency histogram (sysbench 1.0.20's
sb_histogram: 1024 buckets, logarithmic from 0.001 to 100000 ms). This writes
results/<testid>.json, what a single-process run writes, plus "instances": per step the counts
summed, elapsed_s the maximum, qps/tps = sum / elapsed_s, percentiles from the summed histogram
as sysbench computes them (never an average of percentiles), min/max over the instances, and
the instances that counted; per instance its host facts, k6 version, steps completed, exit
status and, for one that did not finish, the step and time from which it is missing. A step
an instance did not finish is not counted for it (nothing twice, nothing invented).

Standard library only, so it runs without the project's venv (from the checkout's root, or
with it on PYTHONPATH, as scripts/lib/common.sh's tbs_py does):
  python3 -m tidbbench.merge [--results DIR] [--exit I=CODE@EPOCH_MS ...] TESTID
(`scripts/k6 merge TESTID` runs it; `scripts/k6 run --instances N` runs it after its processes.)
Exit codes: 0 merged (even with a missing instance: the manifest names it), 2 bad input
(no instance files, files that disagree, a bad TESTID).
"""
import argparse
import json
import math
import re
import sys
from fractions import Fraction
from pathlib import Path

from tidbbench import ROOT, contract, sbhist
from tidbbench.report.fmt import utc
# the histogram's bucket of a latency and its width (tests/test_instances.py reads them here)
bucket, RANGE_MULT = sbhist.bucket, sbhist.RANGE_MULT

# the testid rule: k6/contract.json (this file also runs as a script, outside the package)
ID_RE = re.compile(json.loads((ROOT / "k6/contract.json").read_text())["testid"]["pattern"])
SEGMENT_RE = re.compile(r"^(\d+(?:/\d+)?):(\d+(?:/\d+)?)$")
COUNTS = ("transactions", "errors", "reconnects")


class MergeError(Exception):
    pass


def _check_scheme(h, where):
    want = {"scheme": sbhist.SCHEME, "buckets": sbhist.BUCKETS, "min_ms": sbhist.MIN_MS, "max_ms": sbhist.MAX_MS}
    for k, v in want.items():
        got = h.get(k)
        if got != v and not (isinstance(v, float) and isinstance(got, (int, float)) and math.isclose(got, v)):
            raise MergeError(f"{where}: histogram {k}={got!r}, expected {v!r} (sysbench 1.0.20's sb_histogram)")


def sum_histograms(hists, where):
    """[histogram dict] -> summed histogram dict (same shape)."""
    counts, n, total_ms, lo, hi = {}, 0, 0.0, None, None
    for h in hists:
        _check_scheme(h, where)
        for i, c in h.get("counts", []):
            i, c = int(i), int(c)
            if not 0 <= i < sbhist.BUCKETS:
                raise MergeError(f"{where}: histogram bucket {i} outside 0..{sbhist.BUCKETS - 1}")
            counts[i] = counts.get(i, 0) + c
        n += int(h.get("count", 0))
        total_ms += float(h.get("sum_ms", 0.0))
        if h.get("count"):
            lo = h["min"] if lo is None else min(lo, h["min"])
            hi = h["max"] if hi is None else max(hi, h["max"])
    if n != sum(counts.values()):
        raise MergeError(f"{where}: histogram count {n} is not the sum of its buckets {sum(counts.values())}")
    return {"scheme": sbhist.SCHEME, "buckets": sbhist.BUCKETS, "min_ms": sbhist.MIN_MS, "max_ms": sbhist.MAX_MS,
            "count": n, "sum_ms": total_ms, "min": lo if lo is not None else 0.0,
            "max": hi if hi is not None else 0.0, "counts": [[i, counts[i]] for i in sorted(counts)]}


def latency_from_histogram(h, pct):
    counts = {int(i): int(c) for i, c in h["counts"]}
    out = {"min": h["min"], "avg": h["sum_ms"] / h["count"] if h["count"] else 0.0, "max": h["max"],
           "p50": sbhist.percentile(counts, 50), "p95": sbhist.percentile(counts, 95),
           "p99": sbhist.percentile(counts, 99)}
    out["pct"] = pct
    out["pct_value"] = sbhist.percentile(counts, pct)
    return out


def _fraction(x):
    a, _, b = x.partition("/")
    return Fraction(int(a), int(b or 1))


def parse_segment(seg, where):
    """k6's execution segment -> (position 0..N-1, N). scripts/k6 writes i/N:(i+1)/N, k6-operator
    0:1/N ... (N-1)/N:1; a process without a segment ran the whole test (0:1)."""
    m = SEGMENT_RE.match(str(seg or "0:1"))
    a, b = (_fraction(m.group(1)), _fraction(m.group(2))) if m else (None, None)
    if not m or not 0 <= a < b <= 1 or (b - a).numerator != 1 or (a / (b - a)).denominator != 1:
        raise MergeError(f"{where}: instance.segment {seg!r} is not one of N equal execution segments "
                         "(i/N:(i+1)/N, or 0:1/N ... (N-1)/N:1 as k6-operator writes them)")
    n = (b - a).denominator
    return int(a * n), n


def load_instances(results, testid):
    """{id: (path, doc)} of results/<testid>.instance-<i>.json (i: the process's instance_id tag,
    0..N-1 from scripts/k6, 1..N from k6-operator)."""
    out = {}
    for p in sorted(Path(results).glob(f"{testid}.instance-*.json")):
        m = re.fullmatch(re.escape(testid) + r"\.instance-(\d+)\.json", p.name)
        if not m:
            continue
        try:
            doc = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise MergeError(f"{p} is not valid JSON ({e}); the process that wrote it may have died while writing")
        inst = doc.get("instance") or {}
        if str(inst.get("id")) != m.group(1):
            raise MergeError(f"{p}: instance.id {inst.get('id')!r} does not match the file name")
        if doc.get("testid") != testid:
            raise MergeError(f"{p}: testid {doc.get('testid')!r}, expected {testid!r}")
        out[int(m.group(1))] = (p, doc)
    return out


def _step_done(s):
    return not s.get("interrupted") and isinstance((s.get("window") or {}).get("measure_start"), (int, float))


def merge(testid, files, exits=None, expected=None):
    """files: {id: (path, doc)}; exits: {id: (exit code, ended epoch ms)} from the launcher.
    -> the merged manifest (dict)."""
    exits = exits or {}
    if not files:
        raise MergeError(f"no instance files results/{testid}.instance-<i>.json: did any instance start? "
                         "(on other hosts, copy their files into results/ first)")
    by_lane, n, seqs, offset = _by_lane(testid, files)
    if expected is not None and expected != n:
        raise MergeError(f"the instance files split {testid} in {n} parts, expected {expected}")
    ids = sorted(by_lane)
    base = by_lane[ids[0]][1]
    _check_one_run(by_lane, ids)
    opts = base.get("options", {})
    thread_steps = opts.get("threads") or [s["threads"] for s in base.get("steps", [])]
    steps = _merged_steps(testid, by_lane, ids, thread_steps, opts.get("percentile", 95))
    instances = [_instance_entry(i, n, offset, by_lane, exits, thread_steps, steps) for i in range(n)]

    out = {k: v for k, v in base.items() if k not in ("instance", "steps")}
    out["testid"] = testid
    out["run_start"] = min((d.get("run_start") for _, d in by_lane.values() if d.get("run_start")), default=None)
    out["run_end"] = max((d.get("run_end") for _, d in by_lane.values() if d.get("run_end")), default=None)
    out["load_generator"] = base.get("load_generator", {})
    out["steps"] = steps
    out.pop("interrupted", None)
    if any(e["status"] != "complete" for e in instances) or len(steps) < len(thread_steps):
        out["interrupted"] = True
    out["instances"] = instances
    out["instances_split"] = {"count": n, "sequence": next(iter(seqs), ""),
                              "merged_by": "tidbbench/merge.py"}
    return out


def _by_lane(testid, tagged):
    """The instance files by their lane (the segment's position), checked to be one split:
    -> ({lane: (path, doc)}, parts, sequences, the offset of the launcher's ids from the lanes)."""
    parts, seqs, by_lane, offsets = set(), set(), {}, set()
    for tag, (p, d) in sorted(tagged.items()):
        inst = d["instance"]
        lane, n = parse_segment(inst.get("segment"), p)
        if "lane" in inst and "instances" in inst and (int(inst["lane"]), int(inst["instances"])) != (lane, n) \
                and inst.get("segment"):
            raise MergeError(f"{p}: instance lane {inst['lane']} of {inst['instances']} disagrees with its "
                             f"segment {inst['segment']}")
        if lane in by_lane:
            raise MergeError(f"{p} and {by_lane[lane][0]} ran the same segment {inst.get('segment')}")
        by_lane[lane] = (p, d)
        offsets.add(tag - lane)
        parts.add(n)
        if inst.get("sequence"):
            seqs.add(inst["sequence"])
    # instance ids by position: scripts/k6 counts from 0, k6-operator from 1
    offset = offsets.pop() if len(offsets) == 1 else 0
    if len(parts) != 1 or len(seqs) > 1:
        raise MergeError(f"instance files of {testid} disagree on the split: segments of {sorted(parts)} parts, "
                         f"sequences {sorted(map(str, seqs))}")
    return by_lane, parts.pop(), seqs, offset


def _check_one_run(by_lane, ids):
    base = by_lane[ids[0]][1]
    for i in ids[1:]:
        p, d = by_lane[i]
        for k in ("workload", "version", "target"):
            if d.get(k) != base.get(k):
                raise MergeError(f"{p}: {k} {d.get(k)!r} differs from instance {ids[0]}'s {base.get(k)!r}")
        for k in ("threads", "time", "warmup_time"):
            if d.get("options", {}).get(k) != base.get("options", {}).get(k):
                raise MergeError(f"{p}: option {k} differs from instance {ids[0]}'s")


def _merged_steps(testid, by_lane, ids, thread_steps, pct):
    steps = []
    for t in thread_steps:
        per = {}
        for i in ids:
            s = next((s for s in by_lane[i][1].get("steps", []) if s.get("threads") == t), None)
            if s is not None and _step_done(s):
                per[i] = dict(s, _id=by_lane[i][1]["instance"]["id"])
        if per:
            steps.append(merge_step(t, per, pct, testid))
    return steps


def _instance_entry(i, n, offset, by_lane, exits, thread_steps, steps):
    """The merged manifest's entry of lane i: its file, the steps it completed, where it stopped."""
    code, ended = exits.get(i + offset, (None, None))
    entry = {"id": str(i + offset), "segment": f"{i}/{n}:{i + 1}/{n}", "exit_status": code}
    if ended is not None:
        entry["ended_at"] = ended
    if i in by_lane:
        p, d = by_lane[i]
        load_generator = d.get("load_generator") or {}
        entry.update(id=str(d["instance"]["id"]), file=p.name, segment=d["instance"].get("segment") or "0:1",
                     load_generator=load_generator, k6=load_generator.get("k6", ""))
        done = [s["threads"] for s in d.get("steps", []) if _step_done(s)]
        entry["steps_completed"] = done
        entry["client_cpu_s"] = {str(s["threads"]): s["client_cpu_s"] for s in d.get("steps", [])
                                 if _step_done(s) and s.get("client_cpu_s") is not None}
        missing = [t for t in thread_steps if t not in done]
        if missing:
            first = next((s for s in d.get("steps", []) if s.get("threads") == missing[0]), None)
            w = (first or {}).get("window") or {}
            entry["missing_from"] = {"threads": missing[0],
                                     "at": ended or w.get("step_start") or _last_end(d) or d.get("run_end"),
                                     "steps": missing}
    else:
        # no file (killed before its summary): nothing of it is counted; it ended during the
        # step whose window holds its end time, as far as the launcher saw it
        during = next((s["threads"] for s in steps if ended is not None and ended <= s["window"]["measure_end"]),
                      None)
        entry.update(file=None, steps_completed=[], load_generator={}, k6="",
                     missing_from={"threads": during, "at": ended, "steps": list(thread_steps), "no_file": True})
    entry["status"] = "complete" if ("missing_from" not in entry and code in (0, None)) else "failed"
    return entry


def _last_end(d):
    ends = [s["window"]["measure_end"] for s in d.get("steps", []) if _step_done(s)]
    return max(ends) if ends else None


def merge_step(t, per, pct, testid):
    where = f"{testid}, {t} threads"
    ss = list(per.values())
    kinds = ("read", "write", "other", "total")
    q = {k: sum(int((s.get("queries") or {}).get(k, 0)) for s in ss) for k in kinds}
    elapsed = max(float(s.get("elapsed_s") or s.get("seconds") or 0) for s in ss)
    m = {"threads": t, "seconds": ss[0].get("seconds"), "elapsed_s": elapsed, "queries": q}
    for k in COUNTS:
        m[k] = sum(int(s.get(k) or 0) for s in ss)
    m["qps"] = q["total"] / elapsed if elapsed else 0.0
    m["tps"] = m["transactions"] / elapsed if elapsed else 0.0
    if all("histogram" in s for s in ss):
        m["histogram"] = sum_histograms([s["histogram"] for s in ss], where)
        m["latency_ms"] = latency_from_histogram(m["histogram"], pct)
    else:
        lacking = [i for i, s in per.items() if "histogram" not in s]
        raise MergeError(f"{where}: instance(s) {lacking} have no latency histogram: percentiles of a split run "
                         "come only from the summed histograms")
    if any("response_histogram" in s for s in ss):
        if not all("response_histogram" in s for s in ss):
            raise MergeError(f"{where}: only some instances have a response_histogram")
        m["response_histogram"] = sum_histograms([s["response_histogram"] for s in ss], where + " (response)")
        m["response_latency_ms"] = latency_from_histogram(m["response_histogram"], pct)
    cpu = [s.get("client_cpu_s") for s in ss]
    if all(c is not None for c in cpu):
        m["client_cpu_s"] = sum(cpu)
    wins = [s["window"] for s in ss]
    m["window"] = {k: (min if k not in ("measure_end", "step_end") else max)(w[k] for w in wins if k in w)
                   for k in ("step_start", "measure_start", "measure_end", "step_end") if any(k in w for w in wins)}
    m["instances"] = [str(s["_id"]) for _, s in sorted(per.items())]
    fair = [s["fairness"] for _, s in sorted(per.items()) if "fairness" in s]
    if fair:
        m["fairness"] = merge_fairness(fair)
    # the step's statement digests: only the first load generator reads them (k6/lib/statements.js)
    st = [s["statements"] for _, s in sorted(per.items()) if "statements" in s]
    if st:
        m["statements"] = st[0]
    # the host's disturbance: each load generator measures its own host (k6/lib/disturb.js); the
    # merged step keeps the first instance's
    dist = [s["disturbance"] for _, s in sorted(per.items()) if s.get("disturbance")]
    if dist:
        m["disturbance"] = dist[0]
    # the step's CPU profile: the first load generator takes it (k6/lib/profiles.js); per query of them all
    pr = [s["profile"] for _, s in sorted(per.items()) if "profile" in s]
    if pr:
        m["profile"] = {**pr[0], "queries": q["total"]} if pr[0].get("available") else pr[0]
    # and TiKV's, PD's and k6's own (component_profiles), taken with it
    cp = [s["component_profiles"] for _, s in sorted(per.items()) if s.get("component_profiles")]
    if cp:
        m["component_profiles"] = {k: {**v, "queries": q["total"]} if v.get("available") else v for k, v in cp[0].items()}
    return m


def _spread(xs):
    n = len(xs)
    if not n:
        return {"avg": 0, "stddev": 0, "min": 0, "max": 0}
    avg = sum(xs) / n
    return {"avg": avg, "stddev": (sum((x - avg) ** 2 for x in xs) / n) ** 0.5, "min": min(xs), "max": max(xs)}


def merge_fairness(parts):
    """The threads fairness of a split step (k6/lib/summary.js fairnessOf over every instance's
    threads): their per-thread figures joined, the spreads and the warnings made again over all."""
    from tidbbench import contract
    ids, events, time_s = [], [], []
    for f in parts:
        pt = f.get("per_thread") or {}
        ids += list(pt.get("ids", []))
        events += [float(e) for e in pt.get("events", [])]
        time_s += [float(t) for t in pt.get("time_s", [])]
    order = sorted(range(len(ids)), key=lambda i: ids[i])
    ids, events, time_s = [ids[i] for i in order], [events[i] for i in order], [time_s[i] for i in order]
    f = {"threads": len(ids), "events": _spread(events), "time_s": _spread(time_s),
         "per_thread": {"ids": ids, "events": events, "time_s": time_s}}
    avg = f["events"]["avg"]
    low = avg * contract.timing()["fair_share"]
    warnings = [f"thread {i} ran {e:.0f} event{'' if e == 1 else 's'} ({100 * e / avg if avg else 0:.1f}% of the threads' average, {avg:.1f})"
                for i, e in zip(ids, events) if e == 0 or e < low]
    f["warnings"] = warnings
    return f


def summary_table(m):
    lines = [f"merged {len(m['instances'])} instance(s) of testid {m['testid']}:"]
    for e in m["instances"]:
        load_generator = e.get("load_generator") or {}
        what = f"steps {','.join(map(str, e['steps_completed'])) or 'none'}"
        if "missing_from" in e:
            mf = e["missing_from"]
            what += f"; missing from the {mf['threads']}-thread step"
            what += " (no results file)" if mf.get("no_file") else ""
        lines.append(f"  instance {e['id']} ({e['segment']}) on {load_generator.get('hostname', '?')}: exit "
                     f"{e['exit_status'] if e['exit_status'] is not None else 'unknown'}, {what}")
    lines.append("")
    lines.append("| Threads | QPS | TPS | 95% latency (ms) | avg latency (ms) | errors | instances |")
    lines.append("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for s in m["steps"]:
        lines.append(f"| {s['threads']} | {s['qps']:.2f} | {s['tps']:.2f} | {s['latency_ms']['p95']:.2f} | "
                     f"{s['latency_ms']['avg']:.2f} | {s['errors']} | {','.join(s['instances'])} |")
    return "\n".join(lines)


def died_text(e):
    """One sentence on an instance that did not finish (the report uses it too)."""
    code = e.get("exit_status")
    text = f"instance {e['id']} ({e['segment']}) did not finish (exit status {code if code is not None else 'unknown'})"
    mf = e.get("missing_from")
    if mf and mf.get("no_file"):
        text += (f": it ended at {utc(mf.get('at'), 'an unknown time')}"
                 + (f", during the {mf['threads']}-thread step" if mf.get("threads") is not None else "")
                 + ", and left no results file, so none of its counts are known; "
                 f"steps without it: {', '.join(map(str, mf['steps']))}; their figures are of the other instances")
    elif mf:
        text += (f": missing from the {mf['threads']}-thread step on, from {utc(mf.get('at'), 'an unknown time')}; "
                 f"steps without it: {', '.join(map(str, mf['steps']))}; their figures are of the other instances")
    return text


def parse_exit(v):
    m = re.fullmatch(r"(\d+)=(\d+)(?:@(\d+))?", v)
    if not m:
        raise argparse.ArgumentTypeError(f"--exit {v!r}: expected INSTANCE=CODE or INSTANCE=CODE@EPOCH_MS")
    return int(m.group(1)), (int(m.group(2)), int(m.group(3)) if m.group(3) else None)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/k6 merge", description=__doc__.split("\n\n")[0])
    ap.add_argument("testid", metavar="TESTID")
    ap.add_argument("--results", default=str(contract.results_dir()),
                    help="folder of the instance files (default: $results_dir or results/)")
    ap.add_argument("--exit", action="append", type=parse_exit, default=[], metavar="I=CODE@MS",
                    help="an instance's exit status and end time (epoch ms), as the launcher saw it")
    ap.add_argument("--expect", type=int, help="the number of instances the run was split into")
    ap.add_argument("--quiet", action="store_true", help="print nothing but errors")
    a = ap.parse_args(argv)
    if not ID_RE.match(a.testid):
        print(f"error: bad TESTID {a.testid!r}: letters, digits, '.', '_' and '-'", file=sys.stderr)
        return 2
    try:
        files = load_instances(a.results, a.testid)
        m = merge(a.testid, files, exits=dict(a.exit), expected=a.expect)
    except MergeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    dest = Path(a.results) / f"{a.testid}.json"
    tmp = dest.with_name(f".{dest.name}.tmp")
    tmp.write_text(json.dumps(m, indent=2) + "\n")
    tmp.replace(dest)
    if not a.quiet:
        print(summary_table(m))
        print(f"\nwrote {dest}")
    for e in m["instances"]:
        if e["status"] != "complete":
            print(f"warning: {died_text(e)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
