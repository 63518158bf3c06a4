"""How noisy a history series is, and what its change-point detection can therefore see
(scripts/history, the History dashboard's noise panel; docs/history.md "Noise").

- **Spread**: the CV (sample SD / |mean|) of the series' current level: its runs since its last
  change point (all its runs when it has none), the last `window` of them at most.
- **Minimum detectable change (MDC)**: the smallest step that the detection, at its settings, could
  report `min_segment` runs after it happened (the earliest it reports a new level): the
  change-point test is Student's two-sample t-test between the level's n runs before and the
  `min_segment` runs after at p < `max_pvalue`, and the change must be at least `min_magnitude`, so

      MDC = max(min_magnitude, t(1 - max_pvalue / 2, n + m - 2) x CV x sqrt(1/n + 1/m))   (m = min_segment)

  It assumes the level after the step varies as the one before (the same CV), and takes the
  segments' means at their expected values: a step of exactly the MDC is found about half the time,
  a larger one more often (tests/test_noise.py measures it on the detection itself).
- **Runs a side** for a given change (5%, 2%): the fewest runs on each side of a step with which its
  MDC, at this CV, is at most that change; none when the change is below `min_magnitude`.

Standard library only: the History dashboard's generator (tidbbench/dash/history.py, run before
the venv exists) takes its table of t quantiles from here (t_quantile: the regularized incomplete
beta function by its continued fraction, as in Numerical Recipes; tests/test_noise.py checks it
against scipy)."""
import math
import statistics
from dataclasses import dataclass, replace

MAX_RUNS = 1000  # the most runs a side the advice considers
# a series paired with a reference (a plan's reference arm) is judged first on its throughput over the
# reference's (tidbbench/history/cp.py), which the host's drift cancels out of (docs/history.md)
PAIRED_METRIC = "vs_ref"


@dataclass(frozen=True)
class Params:
    """The change-point detection's settings (tidbbench/history/cp.py; defined here, standard library
    only, so that the History dashboard's generator reads the same defaults)."""
    min_segment: int = 4  # runs on each side of a change point
    min_magnitude: float = 3.0  # % change of the segments' means
    max_pvalue: float = 0.001  # the t-test's significance threshold
    window: int = 50  # Otava's sliding window (runs); the split step also runs window/2 and 4 x min_segment
    # vs_ref's minimum segment: its points vary less than raw QPS (the host's drift cancels out) and
    # measured on this VM's 40-s duet points, 3 runs found a 5% step within 5 runs in 91.5% of trials
    # against 84.0% with 4, at 0.09 false change points per 100 A/A runs (docs/history.md)
    paired_min_segment: int = 3

    def for_metric(self, metric):
        """The settings `metric` is detected with: vs_ref with paired_min_segment as its minimum segment."""
        return replace(self, min_segment=self.paired_min_segment) if metric == PAIRED_METRIC else self


DEFAULTS = Params()


def _betacf(a, b, x):
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betai(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t, df):
    """P(T > t) for Student's t with df degrees of freedom, t >= 0."""
    return 0.5 * _betai(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(q, df):
    """The q-quantile (q in (0.5, 1)) of Student's t with df degrees of freedom, by bisection."""
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > 1 - q:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_sf(mid, df) > 1 - q else (lo, mid)
        if hi - lo < 1e-12 * hi:
            break
    return (lo + hi) / 2


def t_factor(n_before, n_after, max_pvalue):
    """The step, in units of the runs' SD, that Student's t-test between n_before and n_after runs
    calls significant at p < max_pvalue (two-sided): t(1 - p/2, n - 2) x sqrt(1/n_before + 1/n_after)."""
    return t_quantile(1 - max_pvalue / 2, n_before + n_after - 2) * math.sqrt(1 / n_before + 1 / n_after)


def level(values, change_indexes, window):
    """The series' current level: its values from its last change point on, the last `window`."""
    start = max(change_indexes, default=0)
    return list(values[start:])[-window:]


def cv(values):
    """The sample SD over |mean| (a fraction); None with fewer than 2 values or a mean of 0."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / abs(mean) if mean else None


def mdc_pct(cv_, n_before, params):
    """The minimum detectable change in %, for a level of n_before runs with this CV (a fraction),
    found min_segment runs after it happened; None when the CV is unknown."""
    if cv_ is None or n_before < 2:
        return None
    return max(params.min_magnitude, 100 * t_factor(n_before, params.min_segment, params.max_pvalue) * cv_)


def runs_a_side(target_pct, cv_, params):
    """The fewest runs on each side of a step (at least min_segment) with which a step of target_pct
    is detectable at this CV; None when target_pct is below min_magnitude, the CV unknown, or more
    than MAX_RUNS would be needed. (t_factor(n, n) falls as n grows: the first n found by bisection.)"""
    if cv_ is None or target_pct < params.min_magnitude:
        return None

    def ok(n):
        return 100 * t_factor(n, n, params.max_pvalue) * cv_ <= target_pct
    lo, hi = params.min_segment, MAX_RUNS
    if ok(lo):
        return lo
    if not ok(hi):
        return None
    while hi - lo > 1:  # ok(hi), not ok(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def cv_needed_pct(target_pct, n_before, params):
    """The largest CV (%) at which a step of target_pct is detectable min_segment runs after it, with
    n_before runs before; None when target_pct is below min_magnitude (no CV will do)."""
    if target_pct < params.min_magnitude or n_before < 2:
        return None
    return target_pct / t_factor(n_before, params.min_segment, params.max_pvalue)


@dataclass
class SeriesNoise:
    """The noise of one metric of one series (scripts/history: text and --json)."""
    series: str
    metric: str
    runs: int  # runs of its current level used (since its last change point, the last `window`)
    since: str  # the run key its level starts at (its last change point's first run after), or ''
    mean: float
    cv_pct: float  # None with fewer than 2 runs
    mdc_pct: float  # None with fewer than 2 runs
    runs_a_side_5pct: int  # None: see runs_a_side
    runs_a_side_2pct: int


def series_noise(series, metric, points, change_indexes, params):
    """SeriesNoise of one metric over its points (oldest first, the metric a number in each) and the
    indexes of its change points among them."""
    params = params.for_metric(metric)
    values = [float(p[metric]) for p in points]
    lv = level(values, change_indexes, params.window)
    start = max(change_indexes, default=0)
    c = cv(lv)
    return SeriesNoise(series=series, metric=metric, runs=len(lv),
                       since=points[start]["run_key"] if change_indexes else "",
                       mean=statistics.fmean(lv) if lv else None,
                       cv_pct=None if c is None else c * 100, mdc_pct=mdc_pct(c, len(lv), params),
                       runs_a_side_5pct=runs_a_side(5.0, c, params), runs_a_side_2pct=runs_a_side(2.0, c, params))


def side_text(target_pct, n, params):
    if n is not None:
        return f"{target_pct:g}%: {n} runs a side"
    if target_pct < params.min_magnitude:
        return f"{target_pct:g}%: never, below --min-magnitude {params.min_magnitude:g}%"
    return f"{target_pct:g}%: more than {MAX_RUNS} runs a side"


def noise_text(nz, params):
    """One line: `qps: CV 1.52% over the last 30 runs; MDC 3.00% (4 runs after a step); 5%: 4 runs a
    side, 2%: never, below --min-magnitude 3%`."""
    params = params.for_metric(nz.metric)
    if nz.cv_pct is None:
        return f"{nz.metric}: {nz.runs} run{'s' if nz.runs != 1 else ''} of its level: no spread, no MDC"
    since = f" since its last change point ({nz.since})" if nz.since else ""
    return (f"{nz.metric}: CV {nz.cv_pct:.2f}% over the last {nz.runs} runs{since}; minimum detectable change "
            f"{nz.mdc_pct:.2f}% ({params.min_segment} runs after a step); "
            f"{side_text(5.0, nz.runs_a_side_5pct, params)}, {side_text(2.0, nz.runs_a_side_2pct, params)}")


def too_noisy_text(nz, threshold, params):
    """'' or why this series cannot be checked at threshold %: its MDC is above it; what spread or
    runs would do."""
    params = params.for_metric(nz.metric)
    if nz.mdc_pct is None or nz.mdc_pct <= threshold:
        return ""
    head = (f"{nz.series} {nz.metric}: too noisy to check at {threshold:g}%: CV {nz.cv_pct:.2f}% over its last "
            f"{nz.runs} runs, so the smallest change it can show {params.min_segment} runs after a step is "
            f"{nz.mdc_pct:.2f}%")
    if threshold < params.min_magnitude:
        return f"{head}; {threshold:g}% is below --min-magnitude {params.min_magnitude:g}%: lower it to check that."
    need_cv = cv_needed_pct(threshold, nz.runs, params)
    n = runs_a_side(threshold, nz.cv_pct / 100, params)
    runs = f"{n} runs on each side of a step at this CV" if n else f"more than {MAX_RUNS} runs a side at this CV"
    return f"{head}; {threshold:g}% needs a CV of at most {need_cv:.2f}%, or {runs}."
