"""Change points of a series (scripts/history): where a metric's level moved, found by Apache Otava
(apache-otava, `otava.analysis.compute_change_points`: E-divisive means over sliding windows, each
candidate kept when Student's t-test between the segments on either side of it gives a p-value
below `max_pvalue` and the relative change of their means is above `min_magnitude`; Fleming et al.,
"Hunter", ICPE 2023). Otava has no minimum segment length: this module adds it (a change point
whose segment before or after holds fewer than `min_segment` runs is dropped, the weaker of the two
around a short segment first, then Otava's own merge step filters again, its statistics recomputed
on the final segments: see `find`), so one odd run is never a
change point, and a new level is reported once it has lasted `min_segment` runs.

Each change point carries Otava's means of the two segments and its p-value; the magnitude is
mean_after / mean_before - 1 (%), and its 95% interval is the t interval of the difference of the
two segments' means (scipy.stats.ttest_ind(...).confidence_interval(), the same equal-variance
t-test Otava applies) over mean_before. Lower QPS/TPS, or higher latency, errors or CPU per query, is
a regression. The defaults (DEFAULTS) are the ones docs/history.md measured with
tools/history-quality."""
import math
from dataclasses import asdict, dataclass

from otava.analysis import TTestSignificanceTester, compute_change_points, merge
from scipy import stats as sps

from tidbbench import ReportError

# metric -> True when higher is better
METRICS = {"qps": True, "tps": True, "p95_ms": False, "p99_ms": False, "errors_per_s": False,
           "client_cpu_per_query": False, "server_cpu_per_query": False}
DEFAULT_METRICS = ("qps", "p95_ms")


@dataclass(frozen=True)
class Params:
    min_segment: int = 4  # runs on each side of a change point
    min_magnitude: float = 3.0  # % change of the segments' means
    max_pvalue: float = 0.001  # Otava's significance threshold
    window: int = 50  # Otava's sliding window (runs)


DEFAULTS = Params()


def check_params(p):
    if p.min_segment < 2:
        raise ReportError(f"invalid --min-segment {p.min_segment}: at least 2 runs (a t-test needs two a side)", code=2)
    if not 0 <= p.min_magnitude < 100:
        raise ReportError(f"invalid --min-magnitude {p.min_magnitude}: a % in [0, 100)", code=2)
    if not 0 < p.max_pvalue < 1:
        raise ReportError(f"invalid --max-pvalue {p.max_pvalue}: in (0, 1)", code=2)
    if p.window < 2 * p.min_segment:
        raise ReportError(f"invalid --window {p.window}: at least 2 x --min-segment ({2 * p.min_segment})", code=2)
    return p


def _segments(cps, n):
    bounds = [0] + [c.index for c in cps] + [n]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def _recompute(cps, series, tester):
    intervals = tester.get_intervals(cps)
    return [tester.change_point(c.to_candidate(), series, intervals) for c in cps]


def _min_segment(cps, series, min_segment, tester):
    """Drops change points until every segment holds at least min_segment runs: around the
    shortest segment, the neighbouring change point with the larger p-value goes first."""
    cps = sorted(cps, key=lambda c: c.index)
    while cps:
        segs = _segments(cps, len(series))
        short = [i for i, (a, b) in enumerate(segs) if b - a < min_segment]
        if not short:
            break
        i = min(short, key=lambda k: segs[k][1] - segs[k][0])
        around = [j for j in (i - 1, i) if 0 <= j < len(cps)]
        drop = max(around, key=lambda j: cps[j].stats.pvalue)
        del cps[drop]
        cps = _recompute(cps, series, tester)
    return cps


def find(values, params=DEFAULTS):
    """[(index, TTestStats)] of the change points of a list of floats: index is the first value
    after the change."""
    n = len(values)
    if n < 2 * params.min_segment:
        return []
    # a list, not an array: Otava's window detector slices only lists (an array is taken whole)
    series = [float(v) for v in values]
    cps, _weak = compute_change_points(series, window_len=params.window, max_pvalue=params.max_pvalue,
                                       min_magnitude=params.min_magnitude / 100)
    tester = TTestSignificanceTester(params.max_pvalue)
    cps = _min_segment(cps, series, params.min_segment, tester)
    # Otava 0.8.0's merge step, after dropping a change point, recomputes the two to its right but
    # not the one to its left, whose segment after it has just grown: every point's statistics are
    # recomputed on its final segments and the merge step is repeated until nothing more goes
    while True:
        cps = _recompute(cps, series, tester)
        n = len(cps)
        cps = merge(cps, series, params.max_pvalue, params.min_magnitude / 100)
        if len(cps) == n:
            break
    return [(c.index, c.stats) for c in sorted(cps, key=lambda c: c.index)]


@dataclass
class ChangePoint:
    series: str
    metric: str
    index: int  # the first run after the change, in the series' runs (oldest first)
    run_key_before: str
    run_key_after: str
    at: str  # started_at of the first run after
    mean_before: float
    mean_after: float
    magnitude_pct: float
    ci_low_pct: float
    ci_high_pct: float
    pvalue: float
    direction: str  # "regression" or "improvement"
    runs_before: int  # runs in the segment before (to the previous change point)
    runs_after: int
    evidence: list = None  # [historyevidence item dicts], ranked

    def row(self):
        from tidbbench.history.evidence import summary
        d = asdict(self)
        d["evidence"] = summary(self.evidence or [])
        return d


def _f(x):
    x = float(x)
    return x if math.isfinite(x) else None


def interval_pct(before, after, mean_before):
    """The 95% t interval of mean(after) - mean(before), in % of mean_before (None with fewer than
    two runs a side or a zero baseline)."""
    if len(before) < 2 or len(after) < 2 or not mean_before:
        return None, None
    ci = sps.ttest_ind(after, before).confidence_interval(0.95)
    lo, hi = _f(ci.low), _f(ci.high)
    if lo is None or hi is None:
        return None, None
    return lo / mean_before * 100, hi / mean_before * 100


def metric_points(points, metric):
    """The points that have the metric (a point without it is a gap, left out, not a zero)."""
    return [p for p in points if p.get(metric) is not None]


def series_change_points(series, points, metric, params=DEFAULTS):
    """[ChangePoint] of one metric over a series' points (oldest first; points without the
    metric are left out: a gap, not a zero)."""
    have = metric_points(points, metric)
    values = [float(p[metric]) for p in have]
    out = []
    found = find(values, params)
    bounds = [0] + [i for i, _ in found] + [len(values)]
    for k, (i, st) in enumerate(found):
        before, after = values[bounds[k]:i], values[i:bounds[k + 2]]
        mb, ma = float(st.mean_1), float(st.mean_2)
        mag = (ma / mb - 1) * 100 if mb else math.inf
        lo, hi = interval_pct(before, after, mb)
        worse = (mag < 0) if METRICS[metric] else (mag > 0)
        i = int(i)
        out.append(ChangePoint(series=series, metric=metric, index=i, run_key_before=have[i - 1]["run_key"],
                               run_key_after=have[i]["run_key"], at=have[i]["started_at"], mean_before=mb,
                               mean_after=ma, magnitude_pct=mag, ci_low_pct=lo, ci_high_pct=hi,
                               pvalue=float(st.pvalue), direction="regression" if worse else "improvement",
                               runs_before=len(before), runs_after=len(after)))
    return out
