"""Statistics of repeated samples, benchstat's way (golang.org/x/perf/cmd/benchstat):

- the median of each side with the distribution-free interval between two order statistics
  (binomial), and the confidence that interval really has: 95% needs 6 or more samples; below
  that the interval is [min, max] and its real confidence (50% for 2 samples, 75%, 87.5%,
  93.75% for 5) is what the report prints;
- a two-sided Mann-Whitney U test (the Wilcoxon rank-sum test) whose p-value is exact, ties
  included: the permutation distribution of the statistic with mid-ranks, counted by dynamic
  programming over the tie groups (as benchstat does; exact up to EXACT_MAX samples a side, the
  normal approximation with tie and continuity correction beyond);
- the change as a ratio, from the same rank procedure: the Hodges-Lehmann estimate of the shift
  of log(value) (the median of the pairwise log ratios) and the interval of the shifts the exact
  test does not reject at ALPHA. The test at shift 0 is the cell's own test, so a cell's interval
  excludes 0 exactly when its p-value is below ALPHA;
- Holm's step-down adjustment of the p-values of a family of cells; a change whose adjusted p is
  not below ALPHA is shown as `~` (the row says when the adjustment made it so);
- what cannot be tested says why: a side with one sample, a sample of 0 or less (nothing
  measured), a family or sample size that can never reach ALPHA.

numpy only (a dependency of matplotlib, pinned with it). scipy is not used: its mannwhitneyu is
exact only without ties, and permutation_test enumerates every split (C(50, 25) for 25 a side)."""
import math
import statistics
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

ALPHA = 0.05
CONFIDENCE = 0.95
EXACT_MAX = 25  # samples a side up to which the p-value is exact (benchstat's limit with ties)
SCAN_MAX = 201  # cells of shifts (2 x pairwise differences + 1) the interval tests one by one; bisection beyond


def median(xs):
    return statistics.median(xs)


def _binom_cdf(k, n):
    """P(B <= k) for B ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(0, k + 1)) / 2 ** n


def median_ci(xs, confidence=CONFIDENCE):
    """(lo, hi, coverage): the order-statistic interval [x(k), x(n-k+1)] with the largest k whose
    coverage 1 - 2 P(B <= k-1) is at least `confidence`; [min, max] (and its smaller coverage)
    when even that one falls short (n < 6 for 95%). One sample: (x, x, 0.0)."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("no samples")
    if n == 1:
        return s[0], s[0], 0.0
    k = 1
    while k + 1 <= n - k and 1 - 2 * _binom_cdf(k, n) >= confidence:
        k += 1
    return s[k - 1], s[n - k], 1 - 2 * _binom_cdf(k - 1, n)


def min_n_for_ci(confidence=CONFIDENCE):
    """The fewest samples whose [min, max] covers the median with `confidence` (6 for 95%)."""
    n = 2
    while 1 - 2 / 2 ** n < confidence:
        n += 1
    return n


# -- the exact rank test, ties included

def _ties(values):
    """Mid-ranks (1-based, doubled: integers) of values, and the tie groups' sizes in rank order."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks2 = [0] * len(values)
    groups = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks2[order[k]] = i + j + 2  # 2 x the mid-rank (i + j) / 2 + 1
        groups.append(j - i + 1)
        i = j + 1
    return ranks2, tuple(groups)


@lru_cache(maxsize=4096)
def _rank_sum_counts(groups, n1):
    """Counts of the doubled rank sum W2 of n1 values drawn from the pooled sample whose tie groups
    (in rank order) have these sizes: index W2 -> number of the C(N, n1) splits giving it. Each group
    of t equal values at doubled mid-rank r2 gives a of its values to the first sample in C(t, a)
    ways, adding a * r2: a dynamic programme over the groups (int64: C(50, 25) < 2^63)."""
    total = sum(groups)
    top = total * (total + 1)
    dist = np.zeros((n1 + 1, top + 1), dtype=np.int64)
    dist[0, 0] = 1
    start = 0
    for t in groups:
        r2 = 2 * start + t + 1
        new = np.zeros_like(dist)
        for a in range(0, min(t, n1) + 1):
            shift = a * r2
            if shift > top:
                break
            new[a:, shift:] += math.comb(t, a) * dist[:n1 + 1 - a, :top + 1 - shift]
        dist = new
        start += t
    return dist[n1]


def mann_whitney_u(x, y, method="auto"):
    """(U of x, two-sided p-value) of the Mann-Whitney U test. method: "auto" (exact with at most
    EXACT_MAX samples a side, ties or not), "exact" or "asymptotic". The exact p is the permutation
    p-value 2 min(P(U <= u), P(U >= u)) over every split of the pooled samples (mid-ranks)."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both sides need samples")
    ranks2, groups = _ties(list(x) + list(y))
    w2 = sum(ranks2[:n1])
    u1 = (w2 - n1 * (n1 + 1)) / 2
    if method == "auto":
        method = "exact" if max(n1, n2) <= EXACT_MAX else "asymptotic"
    if method == "exact":
        counts = _rank_sum_counts(groups, n1)
        total = math.comb(n1 + n2, n1)
        lower = int(counts[:w2 + 1].sum()) / total
        upper = int(counts[w2:].sum()) / total
        return u1, min(1.0, 2 * min(lower, upper))
    n = n1 + n2
    mu = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - sum(t ** 3 - t for t in groups) / (n * (n - 1)))
    if var <= 0:
        return u1, 1.0
    z = max((abs(u1 - mu) - 0.5) / math.sqrt(var), 0.0)
    return u1, min(1.0, math.erfc(z / math.sqrt(2)))


def min_p(n1, n2, pooled=None):
    """The smallest two-sided p-value samples of these sizes can give: the most extreme split
    (every value of one side below every value of the other), 2 / C(n1 + n2, n1) without ties;
    with `pooled` (the cell's pooled values) for its tie structure, which can only raise it."""
    if n1 < 2 or n2 < 2:
        return 1.0
    if pooled is None:
        return min(1.0, 2 / math.comb(n1 + n2, n1))
    s = sorted(pooled)
    return min(mann_whitney_u(s[:n1], s[n1:])[1], mann_whitney_u(s[n2:], s[:n2])[1])


def samples_needed(cells, alpha=ALPHA):
    """The fewest samples a side with which the smallest p, times Holm's factor for a family of
    `cells`, is below alpha (no ties)."""
    n = 2
    while min_p(n, n) * cells >= alpha:
        n += 1
    return n


# -- the change and its interval: Hodges-Lehmann on logs, by inverting the exact test

def _p_at(la, lb, d):
    """The exact test's p of log b - d against log a (a shifted value within rounding of a value of
    a is that value: at d = a pairwise difference the two tie, as they do in exact arithmetic)."""
    shifted = []
    for v in lb:
        s = v - d
        near = [p for p in la if abs(s - p) <= 1e-9 * max(1.0, abs(p))]
        shifted.append(near[0] if near else s)
    return mann_whitney_u(shifted, la)[1]


def shift_interval(a, b, alpha=ALPHA):
    """(estimate, lo, hi, lo_open, hi_open) of the shift d of log(b) against log(a): the
    Hodges-Lehmann estimate (median of the pairwise differences) and the set of shifts the test
    does not reject at alpha (its hull; open ends are the differences where the test rejects
    while just inside it does not). lo/hi are -inf/inf where no shift is rejected on that side."""
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    diffs = sorted({q - p for p in la for q in lb})
    est = median([q - p for p in la for q in lb])
    # the cells between and at the pairwise differences: on each, the test's ranks are constant
    cells = []  # (representative shift, lower end, upper end, is_point)
    cells.append((diffs[0] - 1.0, -math.inf, diffs[0], False))
    for i, dv in enumerate(diffs):
        cells.append((dv, dv, dv, True))
        nxt = diffs[i + 1] if i + 1 < len(diffs) else None
        cells.append(((dv + nxt) / 2 if nxt is not None else dv + 1.0, dv, nxt if nxt is not None else math.inf,
                      False))
    memo = {}

    def ok(i):
        if i not in memo:
            memo[i] = _p_at(la, lb, cells[i][0]) >= alpha
        return memo[i]
    h = next(i for i, c in enumerate(cells) if c[1] <= est <= c[2])
    if len(cells) <= SCAN_MAX or not ok(h):
        # every cell: the set of shifts not rejected, whatever its shape
        acc = [i for i in range(len(cells)) if ok(i)]
        if not acc:
            return est, None, None, False, False
        i_lo, i_hi = acc[0], acc[-1]
    else:
        # many cells: the p-value falls off monotonically on either side of the estimate (checked
        # against the full scan in tests/test_compare.py), so bisect for the first and last accepted
        lo_i, hi_i = 0, h
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            lo_i, hi_i = (lo_i, mid) if ok(mid) else (mid + 1, hi_i)
        i_lo = lo_i
        lo_i, hi_i = h, len(cells) - 1
        while lo_i < hi_i:
            mid = (lo_i + hi_i + 1) // 2
            lo_i, hi_i = (mid, hi_i) if ok(mid) else (lo_i, mid - 1)
        i_hi = lo_i
    lo_cell, hi_cell = cells[i_lo], cells[i_hi]
    return est, lo_cell[1], hi_cell[2], not lo_cell[3] and i_lo > 0, not hi_cell[3] and i_hi < len(cells) - 1


def holm(pvalues):
    """Holm's step-down adjusted p-values (same order as given; None stays None)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    m = len(idx)
    out = list(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


@dataclass
class Summary:
    """One side of one cell: its samples, median and the median's interval with its real coverage."""
    values: list
    median: float
    lo: float
    hi: float
    coverage: float

    @property
    def n(self):
        return len(self.values)


def summarize(values):
    lo, hi, cov = median_ci(values)
    return Summary(list(values), median(values), lo, hi, cov)


def _pct(d):
    return (math.exp(d) - 1) * 100 if math.isfinite(d) else d


@dataclass
class Comparison:
    """Baseline a against candidate b in one cell."""
    a: Summary
    b: Summary
    change: float  # % of b against a: Hodges-Lehmann on logs (the ratio of the values with one a side)
    lo: float  # the change's interval in % (None: no interval; -inf/inf: unbounded at 1 - alpha)
    hi: float
    p: float  # two-sided exact Mann-Whitney p-value (None when not testable: see reason)
    p_adj: float = None  # after Holm's adjustment over the family (set by adjust())
    alpha: float = ALPHA
    lo_open: bool = False
    hi_open: bool = False
    family: int = 1  # the size of the Holm family it was adjusted in
    why: str = ""  # why no change can be computed or tested, or ''

    @property
    def testable(self):
        return self.p is not None

    @property
    def significant(self):
        p = self.p_adj if self.p_adj is not None else self.p
        return p is not None and p < self.alpha

    @property
    def held_by_holm(self):
        """Significant alone, not after Holm's adjustment over its family."""
        return self.p is not None and self.p < self.alpha and not self.significant

    @property
    def reason(self):
        """Why no change can be claimed, or ''."""
        return self.why

    @property
    def min_p(self):
        return min_p(self.a.n, self.b.n, self.a.values + self.b.values)

    @property
    def reachable(self):
        """Whether any arrangement of these samples could be significant in this family."""
        return self.p is not None and self.min_p * self.family < self.alpha


def compare(a, b, alpha=ALPHA):
    a, b = list(a), list(b)
    sa, sb = summarize(a), summarize(b)
    if min(a + b) <= 0:
        zero = "the baseline" if min(a) <= 0 else "the candidate"
        why = (f"{zero} has a sample of {min(a) if min(a) <= 0 else min(b):g} (nothing measured): "
               "no change in % can be given")
        return Comparison(sa, sb, math.nan, None, None, None, alpha=alpha, why=why)
    if sa.n < 2 or sb.n < 2:
        ch = (median(b) / median(a) - 1) * 100
        return Comparison(sa, sb, ch, None, None, None, alpha=alpha, why=f"n={min(sa.n, sb.n)}: no significance")
    p = mann_whitney_u(b, a)[1]
    est, lo, hi, lo_open, hi_open = shift_interval(a, b, alpha)
    return Comparison(sa, sb, _pct(est), None if lo is None else _pct(lo), None if hi is None else _pct(hi), p,
                      alpha=alpha, lo_open=lo_open, hi_open=hi_open)


def adjust(comparisons):
    """Holm-adjusts the p-values of a family of comparisons (in place)."""
    adj = holm([c.p for c in comparisons])
    m = sum(1 for c in comparisons if c.p is not None)
    for c, p in zip(comparisons, adj):
        c.p_adj = p
        c.family = max(m, 1)
    return comparisons


def out_of_reach(comparisons, alpha=ALPHA):
    """'' or the sentence saying that no cell of this family can be significant: the smallest p
    its samples allow, times Holm's factor, is not below alpha."""
    cs = [c for c in comparisons if c.p is not None]
    if not cs or any(c.reachable for c in cs):
        return ""
    m = cs[0].family
    ns = sorted({(c.a.n, c.b.n) for c in cs})
    sizes = " or ".join(f"{x} and {y}" if x != y else f"{x}" for x, y in ns)
    best = min(c.min_p for c in cs)
    need = samples_needed(m, alpha)
    fam = f" and Holm's adjustment over {m} cells (p below {alpha / m:.3g} needed)" if m > 1 else ""
    return (f"With {sizes} samples a side{fam} no change can be significant at {alpha:g}: the smallest p these "
            f"samples allow is {best:.3f}; use {need} or more samples a side.")


# -- text, benchstat's conventions

def fmt_p(p):
    return f"p={p:.3f}" if p >= 0.001 else "p<0.001"


def p_text(c):
    """The p column of a cell: `p=0.008`, `~ (p=0.421)`, `~ (p=0.120 after Holm over 6 cells; p=0.020
    alone)`, or why it is not tested."""
    if c.reason:
        return c.reason
    p = c.p_adj if c.p_adj is not None else c.p
    if c.significant:
        return fmt_p(p)
    if c.held_by_holm:
        return f"~ ({fmt_p(p)} after Holm over {c.family} cells; {fmt_p(c.p)} alone)"
    return f"~ ({fmt_p(p)})"


def _end(x, d, is_open, side):
    """One end of a change's interval; an end at 0 the interval does not include is marked (`> +0.00%`),
    so that an interval of a significant change never reads as if it held 0."""
    if math.isinf(x):
        return "-inf" if x < 0 else "+inf"
    s = f"{x:+.{d}f}%" if x == 0 or abs(x) >= 0.5 * 10 ** -d else f"{x:+.1e}%"
    return ((">" if side == "lo" else "<") + " " + s) if is_open and x == 0 else s


def interval_text(c, d=2):
    """`+8.10% to +15.02%` (`> +0.00%`: an open end at 0)."""
    if c.lo is None:
        return ""
    return f"{_end(c.lo, d, c.lo_open, 'lo')} to {_end(c.hi, d, c.hi_open, 'hi')}"


def change_text(c, d=2):
    """The change column: `+12.34% (+8.10% to +15.02%)` when significant, else `~`."""
    if c.reason or not c.significant:
        return "~"
    return f"{c.change:+.{d}f}% ({interval_text(c, d)})"


def coverage_text(cov):
    """A coverage as the report prints it: 95% and up as `95%`, otherwise its value (`93.75%`)."""
    if cov >= CONFIDENCE:
        return f"{CONFIDENCE * 100:g}%"
    return f"{cov * 100:.4g}%"


def median_text(s, d=2, show_cov=False):
    """`1234.56 (1200.00 to 1250.00)`, with `; 93.75%` when show_cov and the interval falls short of
    95%; a single sample as itself."""
    if s.n == 1:
        return f"{s.median:.{d}f}"
    cov = f"; {coverage_text(s.coverage)}" if show_cov and s.coverage < CONFIDENCE else ""
    return f"{s.median:.{d}f} ({s.lo:.{d}f} to {s.hi:.{d}f}{cov})"


def ci_label(summaries):
    """The header words of a column of medians with intervals: `95% CI` when every interval reaches
    95%, `min to max: 93.75% CI` when all share one smaller coverage, else `interval; ...` (each cell then
    states its own)."""
    covs = {s.coverage for s in summaries if s.n > 1}
    if not covs or min(covs) >= CONFIDENCE:
        return f"{CONFIDENCE * 100:g}% CI", False
    if len(covs) == 1:
        return f"min to max: {coverage_text(covs.pop())} CI", False
    return "interval; its confidence where below 95%", True


def ci_note(summaries):
    """'' or the sentence under a table whose intervals fall short of 95%."""
    short = sorted({s.n for s in summaries if 1 < s.n < min_n_for_ci()})
    if not short:
        return ""
    parts = [f"{coverage_text(1 - 2 / 2 ** n)} with {n}" for n in short]
    parts = ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else parts[0]
    return (f"With fewer than {min_n_for_ci()} samples no interval of the median reaches "
            f"{CONFIDENCE * 100:g}%: the ranges shown are min to max, which hold the true median with "
            f"probability {parts} samples; {min_n_for_ci()} or more samples give {CONFIDENCE * 100:g}% intervals.")
