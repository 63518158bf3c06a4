"""Change points of a series (scripts/history): where a metric's level moved, found with Apache Otava's
method (apache-otava, `otava.analysis`: E-divisive means over sliding windows, each candidate kept
when a t-test between the segments on either side of it gives a p-value below `max_pvalue` and the
relative change of their means is at least `min_magnitude`; Fleming et al., "Hunter", ICPE 2023),
its split and merge steps run here with these changes (see `detect`):

- the t-test is Student's two-sample test on the segments (equal variances, the sample SD):
  Otava's tester uses the population SD (ddof=0), whose p-values are 1.2 to 5.2 times too small on
  segments of 4 to 30 runs;
- the magnitude is the change printed, (mean_after - mean_before) / |mean_before|, and the rule is
  |magnitude| >= min_magnitude in both directions (Otava takes the larger of a/b - 1 and b/a - 1,
  which lets drops of -2.92% to -3% through a 3% minimum);
- the split step runs with windows of `window`, `window` / 2 and 4 x `min_segment` runs: a dip
  (a level that comes back) is a step in a window shorter than the series, where the first
  window's segments average it away (a 5% dip of 10 runs in 1% noise: found at both ends in 64
  of 100 series with Otava's one window, in 100 of 100 with the three);
- a minimum segment length (Otava has none): a change point whose segment before or after holds
  fewer than `min_segment` runs is dropped (around the shortest segment, the neighbour with the
  larger p-value first), so one odd run is never a change point, and a new level is reported once
  it has lasted `min_segment` runs;
- its place: each change point moves to the best split (least squares) of its two segments
  within `min_segment` - 1 runs of where E-divisive put it; the places the data fit as well (a
  likelihood ratio below PLACE_LR) are its likely places, and one of them fewer than `min_segment`
  runs from a neighbour or an end drops it until more runs come: a step at run 27 of 30 is not a
  level yet, and is not reported at run 25 or 26 (whose evidence would compare two runs of the
  same level). Where noise leaves the place uncertain, the change point says which other runs fit
  as well as its first run after (ChangePoint.also_likely, printed);
- the statistics of every change point are recomputed on its final segments after each change;
- values that are not numbers (NaN, infinite) are left out (series_change_points' caller says so:
  not_numbers) and the detection runs on the rest.

Each change point carries the segments' means and its p-value; the magnitude is (mean_after -
mean_before) / |mean_before| (%; +-inf from a mean of 0, printed "from 0 to X"), and its 95%
interval is the t interval of the difference of the two segments' means
(scipy.stats.ttest_ind(...).confidence_interval(), the same Student's t-test) over |mean_before|.
Lower QPS/TPS, or higher latency, errors or CPU per query, is a regression. The defaults
(DEFAULTS) are the ones docs/history.md measured with tools/history-quality."""
import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np
from otava.analysis import TTestSignificanceTester, TTestStats
from otava.change_point_divisive.base import ChangePoint as OtavaChangePoint
from otava.change_point_divisive.calculator import PairDistanceCalculator
from otava.change_point_divisive.detector import ChangePointDetector
from scipy import stats as sps

from tidbbench import ReportError
# the settings (cp.Params, cp.DEFAULTS), defined where the History dashboard's generator reads them too
from tidbbench.history.noise import DEFAULTS, PAIRED_METRIC, Params  # noqa: F401
from tidbbench.history.schema import TPCC_TXNS

# metric -> True when higher is better
OLTP_METRICS = {"qps": True, "tps": True, "p95_ms": False, "p99_ms": False, "errors_per_s": False,
                "client_cpu_per_query": False, "server_cpu_per_query": False, "vs_ref": True}
# a TPC-C series' (k6/tpcc.js): tpmC its main figure, tpmTotal, each transaction type's p95/p99; TPS
# and errors as OLTP's; no QPS or per-query figures
TPCC_METRICS = {"tpmc": True, "tpm_total": True, "tps": True, "errors_per_s": False,
                **{f"{t}_{q}_ms": False for t in TPCC_TXNS for q in ("p95", "p99")}, "vs_ref": True}
METRICS = {**OLTP_METRICS, **TPCC_METRICS}
DEFAULT_METRICS = ("qps", "p95_ms")
TPCC_DEFAULT_METRICS = ("tpmc", "new_order_p95_ms")
TPCC_WORKLOAD = "tpcc"  # the workload of k6/tpcc.js's manifests (k6/lib/tpccsummary.js)


def series_metrics(workload, asked=None, paired=False):
    """The metrics analysed for a series of `workload`: the ones asked for (--metric) that such a
    series has, or its defaults (OLTP: QPS and p95; TPC-C: tpmC and New-Order's p95; a series
    paired with a reference: vs_ref first)."""
    tpcc = workload == TPCC_WORKLOAD
    if not asked:
        return ((PAIRED_METRIC,) if paired else ()) + (TPCC_DEFAULT_METRICS if tpcc else DEFAULT_METRICS)
    have = TPCC_METRICS if tpcc else OLTP_METRICS
    return tuple(m for m in asked if m in have)


PLACE_LR = 3.84  # a change point's places the data cannot tell apart: a likelihood ratio (chi2, 1 df, 95%) below
MAX_ROUNDS = 20  # rounds of merge, minimum segment and placement (each only removes or moves points)




def check_params(p):
    for v in (p.min_segment, p.paired_min_segment):
        if v < 2:
            raise ReportError(f"invalid --min-segment {v}: at least 2 runs (a t-test needs two a side)", code=2)
    if not 0 <= p.min_magnitude < 100:
        raise ReportError(f"invalid --min-magnitude {p.min_magnitude}: a % in [0, 100)", code=2)
    if not 0 < p.max_pvalue < 1:
        raise ReportError(f"invalid --max-pvalue {p.max_pvalue}: in (0, 1)", code=2)
    most = max(p.min_segment, p.paired_min_segment)
    if p.window < 2 * most:
        raise ReportError(f"invalid --window {p.window}: at least 2 x --min-segment ({2 * most})", code=2)
    return p


def rel_change(before, after):
    """(after - before) / |before|: the change printed, in both directions the same rule; +-inf
    from 0 (0 when both are 0)."""
    if before == 0:
        return 0.0 if after == 0 else math.copysign(math.inf, after)
    return (after - before) / abs(before)


def student_p(left, right):
    """Two-sided p of Student's two-sample t-test (equal variances, sample SDs): scipy's
    ttest_ind, without its warnings on constant segments (equal means: 1; different: 0)."""
    n1, n2 = len(left), len(right)
    if n1 + n2 < 3:
        return 1.0
    m1, m2 = float(np.mean(left)), float(np.mean(right))
    v1 = float(np.var(left, ddof=1)) if n1 > 1 else 0.0
    v2 = float(np.var(right, ddof=1)) if n2 > 1 else 0.0
    df = n1 + n2 - 2
    se = math.sqrt(((n1 - 1) * v1 + (n2 - 1) * v2) / df * (1 / n1 + 1 / n2))
    if se == 0:
        return 1.0 if m1 == m2 else 0.0
    return float(2 * sps.t.sf(abs(m2 - m1) / se, df))


class StudentTester(TTestSignificanceTester):
    """Otava's t-test tester with Student's test (the sample SD, ddof=1) in place of its
    population-SD variant."""

    def compare(self, left, right):
        if len(left) == 0 or len(right) == 0:
            raise ValueError
        sd = [float(np.std(x, ddof=1)) if len(x) >= 2 else 0.0 for x in (left, right)]
        return TTestStats(mean_1=float(np.mean(left)), mean_2=float(np.mean(right)), std_1=sd[0], std_2=sd[1],
                          pvalue=student_p(left, right))


def _first_pass(max_pvalue):
    """Otava's threshold for the split step's weak change points (10 x, 2 x or as is)."""
    return max_pvalue * 10 if max_pvalue < 0.05 else (max_pvalue * 2 if max_pvalue < 0.5 else max_pvalue)


def windows(params):
    """The split step's window lengths: window, window / 2 and 4 x min_segment, each at least
    2 x min_segment and at most window."""
    ws = {params.window, params.window // 2, 4 * params.min_segment}
    return sorted((w for w in ws if 2 * params.min_segment <= w <= params.window), reverse=True)


def _segments(cps, n):
    bounds = [0] + [c.index for c in cps] + [n]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def _recompute(cps, series, tester):
    cps = sorted(cps, key=lambda c: c.index)
    intervals = tester.get_intervals(cps)
    return [tester.change_point(c.to_candidate(), series, intervals) for c in cps]


def _split(series, window, tester):
    """Otava's split step (otava.analysis.split) with this tester: E-divisive in windows of `window`
    runs sliding by half a window; the weak change points of every window."""
    start, step, out = 0, max(1, window // 2), []
    while start < len(series):
        end = min(start + window, len(series))
        new = ChangePointDetector(significance_tester=tester, calculator=PairDistanceCalculator).get_change_points(
            series, start, end)
        last = new[-1].index if new else 0
        start = max(last, start + step)
        out += [c for c in new if c not in out]
    return out


def _magnitude(c):
    return abs(rel_change(float(c.stats.mean_1), float(c.stats.mean_2))) * 100


def _merge(cps, series, params, tester):
    """Otava's merge step (otava.analysis.merge) with the symmetric magnitude: the change point
    with the largest p-value goes while it is not below max_pvalue, then the one with the smallest
    |magnitude| while that is below min_magnitude; every point's statistics recomputed after each."""
    cps = _recompute(cps, series, tester)
    while cps:
        weakest = max(cps, key=lambda c: c.stats.pvalue)
        if weakest.stats.pvalue < params.max_pvalue:
            weakest = min(cps, key=_magnitude)
            if _magnitude(weakest) >= params.min_magnitude:
                return cps
        cps = _recompute([c for c in cps if c is not weakest], series, tester)
    return cps


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


def _fit(series, csum, lo, at, hi, min_segment):
    """(best, likely) places of a change point now at `at` between its neighbours lo and hi: the
    best split of series[lo:hi] (the largest between-segments sum of squares) within min_segment - 1
    runs of `at`, and the places the data cannot tell from it (a likelihood ratio below PLACE_LR,
    with the variance within the two segments), in order."""
    def gain(j):
        n1, n2 = j - lo, hi - j
        return n1 * n2 / (n1 + n2) * ((csum[j] - csum[lo]) / n1 - (csum[hi] - csum[j]) / n2) ** 2
    near = range(max(lo + 1, at - min_segment + 1), min(hi - 1, at + min_segment - 1) + 1)
    best = max(near, key=lambda j: (gain(j), j == at))
    seg = np.asarray(series[lo:hi])
    var = max(float(np.sum((seg - seg.mean()) ** 2)) - gain(best), 0.0) / max(hi - lo - 2, 1)
    return best, [k for k in near if gain(best) - gain(k) <= PLACE_LR * var]


def _place(cps, series, min_segment, tester):
    """(change points, whether any moved or went): each at its best split (_fit); one that could as
    well be fewer than min_segment runs from a neighbour or an end is dropped (not a level yet)."""
    cps = sorted(cps, key=lambda c: c.index)
    csum = np.concatenate([[0.0], np.cumsum(series)])
    out, changed = [], False
    for k, c in enumerate(cps):
        lo = out[-1].index if out else 0
        hi = cps[k + 1].index if k + 1 < len(cps) else len(series)
        best, likely = _fit(series, csum, lo, c.index, hi, min_segment)
        if any(j - lo < min_segment or hi - j < min_segment for j in likely):
            changed = True
            continue
        if best != c.index:
            changed = True
            c = OtavaChangePoint(index=best, qhat=c.qhat, stats=c.stats)
        out.append(c)
    return _recompute(out, series, tester), changed


def detect(values, params=DEFAULTS):
    """[(index, TTestStats, likely)] of the change points of a list of floats: index is the first
    value after the change, in `values`; likely, the indexes the first value after could as well be
    (the data fit them alike: index among them). Values that are not numbers (NaN, infinite) are
    left out."""
    keep = [i for i, v in enumerate(values) if math.isfinite(float(v))]
    # a list, not an array: Otava's window detector slices only lists (an array is taken whole)
    series = [float(values[i]) for i in keep]
    if len(series) < 2 * params.min_segment:
        return []
    tester = StudentTester(params.max_pvalue)
    weak = StudentTester(_first_pass(params.max_pvalue))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # E-divisive on constant stretches
        cps = []
        for w in windows(params):
            cps += [c for c in _split(series, w, weak) if c not in cps]
    for _ in range(MAX_ROUNDS):
        cps = _merge(cps, series, params, tester)
        cps = _min_segment(cps, series, params.min_segment, tester)
        cps, moved = _place(cps, series, params.min_segment, tester)
        if not moved:
            break
    cps = _merge(cps, series, params, tester)
    csum = np.concatenate([[0.0], np.cumsum(series)])
    bounds = [0] + [c.index for c in cps] + [len(series)]
    out = []
    for k, c in enumerate(cps):
        likely = _fit(series, csum, bounds[k], c.index, bounds[k + 2], params.min_segment)[1]
        out.append((keep[c.index], c.stats, [keep[j] for j in sorted(set(likely) | {c.index})]))
    return out


def find(values, params=DEFAULTS):
    """[(index, TTestStats)] of the change points of a list of floats (detect's, without where else
    they could be)."""
    return [(i, st) for i, st, _ in detect(values, params)]


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
    also_likely: list = None  # run keys that fit as well as the first run after (the place is uncertain), or []

    def row(self):
        from tidbbench.history.evidence import summary
        d = asdict(self)
        d["evidence"] = summary(self.evidence or [])
        return d

    def change_text(self, d=2):
        """The change as printed: `-5.12%`, or `from 0 to 3.40` from a mean of 0 (no % from 0)."""
        if self.mean_before == 0:
            return f"from 0 to {self.mean_after:,.{d}f}"
        return f"{self.magnitude_pct:+.{d}f}%"


def _finite_or_none(x):
    x = float(x)
    return x if math.isfinite(x) else None


def interval_pct(before, after, mean_before):
    """The 95% t interval of mean(after) - mean(before), in % of |mean_before| (None with fewer than
    two runs a side or a zero baseline)."""
    if len(before) < 2 or len(after) < 2 or not mean_before:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = sps.ttest_ind(after, before).confidence_interval(0.95)
    lo, hi = _finite_or_none(ci.low), _finite_or_none(ci.high)
    if lo is None or hi is None:
        return None, None
    return lo / abs(mean_before) * 100, hi / abs(mean_before) * 100


def _number(v):
    return v is not None and math.isfinite(float(v))


def metric_points(points, metric):
    """The points that have the metric as a number (a point without it is a gap, left out, not a
    zero; one whose value is not a number, NaN or infinite, is left out too: not_numbers)."""
    return [p for p in points if _number(p.get(metric))]


def not_numbers(points, metric):
    """The values of the metric that are not numbers (NaN, infinite): left out of the detection."""
    return [float(p[metric]) for p in points if p.get(metric) is not None and not _number(p[metric])]


def series_change_points(series, points, metric, params=DEFAULTS):
    """[ChangePoint] of one metric over a series' points (oldest first; points without the
    metric are left out: a gap, not a zero; so are values that are not numbers: not_numbers), with
    the metric's settings (params.for_metric: vs_ref's minimum segment)."""
    have = metric_points(points, metric)
    values = [float(p[metric]) for p in have]
    out = []
    found = detect(values, params.for_metric(metric))
    bounds = [0] + [i for i, _, _ in found] + [len(values)]
    for k, (i, st, likely) in enumerate(found):
        before, after = values[bounds[k]:i], values[i:bounds[k + 2]]
        mb, ma = float(st.mean_1), float(st.mean_2)
        mag = rel_change(mb, ma) * 100
        lo, hi = interval_pct(before, after, mb)
        worse = (ma < mb) if METRICS[metric] else (ma > mb)
        i = int(i)
        out.append(ChangePoint(series=series, metric=metric, index=i, run_key_before=have[i - 1]["run_key"],
                               run_key_after=have[i]["run_key"], at=have[i]["started_at"], mean_before=mb,
                               mean_after=ma, magnitude_pct=mag, ci_low_pct=lo, ci_high_pct=hi,
                               pvalue=float(st.pvalue), direction="regression" if worse else "improvement",
                               runs_before=len(before), runs_after=len(after),
                               also_likely=[have[j]["run_key"] for j in likely if j != i]))
    return out
