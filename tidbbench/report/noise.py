"""What a comparison cell could have seen (docs/report.md, "Spread and minimum detectable change"):
its spread, its minimum detectable change (MDC) and the samples a side that would detect 5% and 2%.

- **Spread**: each side's CV (sample SD / mean) with 3 or more samples; with 2, the range over
  the median (an SD from two values is their range / sqrt 2: not a CV to compare); with 1, none.
- **MDC**: the smallest change these sample counts and this spread could call significant with the
  report's own test (stats.py's exact Mann-Whitney U) at its level, alpha / cells (Holm's first
  step: what a family's only change must reach). The exact test calls a change when at most
  u_crit of the n1 x n2 pairs (a, b) are out of order (u_crit from the exact null distribution: the
  largest U whose two-sided p is below the level). Model: each side's log(value) varies normally with
  the sides' pooled SD sigma (about the CV), and the candidate is the baseline shifted by d; a pair is
  then out of order with probability Phi(-d / (sigma sqrt 2)). The MDC is the shift at which the
  pairs out of order are expected to be one more than u_crit:

      n1 n2 Phi(-d / (sigma sqrt 2)) = u_crit + 1,   MDC = exp(d) - 1

  Since that count is skewed (its median below its mean), a change of the MDC is called in about
  half of repeated comparisons, a little more (tests/test_report_noise.py measures 40-70% on the
  exact test itself). Beyond the exact test's affordable sizes u_crit is the normal approximation's,
  as the test's p is. Ties (latency percentiles are bucket values) are not in the model: they raise
  the p-values, so a bucketed metric's MDC is rather larger than said.
- **Samples a side** for 5% and 2%: the fewest equal arms whose MDC at this sigma is at most that.
- A cell whose sample counts can never reach the level (its most extreme split, 2 / C(n1 + n2, n1),
  not below alpha / cells) has no MDC: "need >= N samples a side" (stats.samples_needed), as
  benchstat says. Ties between the sides do not count (a change moves the candidate off the
  baseline's values; ties within a side leave the most extreme split's p as it is); when these very
  values cannot reach alpha, stats.out_of_reach says so beside the table."""
import functools
import math
import statistics
from dataclasses import dataclass, field

from tidbbench.report import stats

TARGETS = (5.0, 2.0)  # % changes whose samples a side every cell states
NORMAL = statistics.NormalDist()


def spread(values):
    """("CV", sd / mean) with 3 or more values, ("range", (max - min) / median) with 2, (None, None)."""
    values = list(values)
    if len(values) < 2 or not stats.finite(values):
        return None, None
    if len(values) == 2:
        med = statistics.median(values)
        return "range", (max(values) - min(values)) / med if med else math.inf
    mean = statistics.fmean(values)
    return "CV", statistics.stdev(values) / mean if mean else math.inf


def spread_text(values):
    """`CV 3.10%`, `range 3.92% (2 samples)`, `one sample`."""
    kind, v = spread(values)
    if kind is None:
        return "one sample" if len(values) == 1 else "not a number"
    return f"CV {v * 100:.2f}%" if kind == "CV" else f"range {v * 100:.2f}% (2 samples)"


def log_sd(a, b):
    """The pooled sample SD of the two sides' log(values); None without two values on some side."""
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    df = len(la) + len(lb) - 2
    if len(la) < 2 or len(lb) < 2 or df < 1:
        return None
    ss = sum((x - statistics.fmean(la)) ** 2 for x in la) + sum((x - statistics.fmean(lb)) ** 2 for x in lb)
    return math.sqrt(ss / df)


@functools.lru_cache(maxsize=8192)
def u_crit(n1, n2, level):
    """The largest U (of the n1 x n2 pairs, out of order) whose two-sided p, exact while
    stats.exact_cost allows (no ties), else the normal approximation with continuity correction (as
    stats.mann_whitney_u), is below level; None when not even U = 0 is."""
    if n1 < 1 or n2 < 1:
        return None
    if stats.exact_cost(n1, n2) <= stats.EXACT_COST:
        counts = stats._rank_sum_counts((1,) * (n1 + n2), min(n1, n2))  # index 2 U
        total = float(math.comb(n1 + n2, n1))
        best, below = None, 0.0
        for u in range(n1 * n2 // 2 + 1):
            below += float(counts[2 * u])
            if 2 * below / total >= level:
                break
            best = u
        return best
    mu, sd = n1 * n2 / 2, math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    u = math.ceil(mu - 0.5 - NORMAL.inv_cdf(1 - level / 2) * sd) - 1
    return u if u >= 0 else None


def factor(n1, n2, level):
    """The MDC's shift of log(value) in units of sigma, d / sigma = sqrt 2 x Phi^-1(1 - (u_crit + 1) /
    (n1 n2)); None when no arrangement reaches the level."""
    u = u_crit(n1, n2, level)
    if u is None:
        return None
    return max(math.sqrt(2) * NORMAL.inv_cdf(1 - (u + 1) / (n1 * n2)), 0.0)


def mdc(n1, n2, sigma, level):
    """The minimum detectable change (a fraction: 0.05 is 5%) of arms of n1 and n2 samples whose
    log(values) have the SD sigma, at this level; None when no arrangement reaches it."""
    f = factor(n1, n2, level)
    if f is None or sigma is None:
        return None
    return math.expm1(sigma * f)


@functools.lru_cache(maxsize=64)
def _equal_arms(level):
    """factor(n, n, level) for n = 0 .. stats.SAMPLES_MAX (None where unreachable)."""
    return tuple(None if n < 2 else factor(n, n, level) for n in range(stats.SAMPLES_MAX + 1))


def samples_a_side(target, sigma, level, start=2):
    """The fewest samples a side (from start on, up to stats.SAMPLES_MAX) whose MDC at sigma is at most
    target (a fraction); None beyond."""
    if sigma is None:
        return None
    fs = _equal_arms(level)
    for n in range(max(2, start), stats.SAMPLES_MAX + 1):
        if fs[n] is not None and math.expm1(sigma * fs[n]) <= target:
            return n
    return None


@dataclass
class CellNoise:
    spread_a: str
    spread_b: str
    mdc: float = None  # a fraction; None: no change can be significant with these sample counts (see need)
    need: int = None  # samples a side its family needs to reach alpha at all, when mdc is None
    samples: dict = field(default_factory=dict)  # target % -> samples a side (None: no spread; inf: beyond SAMPLES_MAX)
    level: float = stats.ALPHA


def cell_noise(c, family=None):
    """CellNoise of a comparison (after stats.adjust, for its family's level); None when the cell has
    no change to speak of (a sample that is not a number, or of 0 or less). family: the cells a
    cell that is not tested (one sample a side) would share Holm's adjustment with (default: its own,
    c.family, which counts the tested cells). Ties between the sides do not count here (a change
    shifts the candidate off the baseline's values; ties within a side leave the most extreme split's
    p as it is): stats.out_of_reach says when these very values cannot reach alpha."""
    if c.reason and not c.reason.startswith("n="):
        return None
    family = max(family or c.family, 1) if not c.testable else max(c.family, 1)
    level = c.alpha / family
    sigma = log_sd(c.a.values, c.b.values)
    cn = CellNoise(spread_text(c.a.values), spread_text(c.b.values), level=level,
                   samples={t: None if sigma is None else samples_a_side(t / 100, sigma, level) or math.inf
                            for t in TARGETS})
    cn.mdc = mdc(c.a.n, c.b.n, sigma, level)
    if cn.mdc is None:
        cn.need = stats.samples_needed(family, c.alpha)
    return cn


def mdc_text(cn):
    """`12.30%`, `any change that moves every sample (no spread)`, `none: need >= 5 samples a side`."""
    if cn.mdc is None:
        return f"none: need >= {cn.need} samples a side"
    if cn.mdc == 0:
        return "any change that moves every sample (no spread)"
    return f"{cn.mdc * 100:.2f}%"


def samples_text(n):
    """`8`, `more than 200`, or `—` (no spread to tell)."""
    if n is None:
        return "—"
    return f"more than {stats.SAMPLES_MAX}" if math.isinf(n) else str(n)
