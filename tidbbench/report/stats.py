"""Statistics of repeated samples, benchstat's way (golang.org/x/perf/cmd/benchstat):

- the median of each side with the distribution-free interval between two order statistics
  (binomial), and the confidence that interval really has: 95% needs 6 or more samples; below
  that the interval is [min, max] and its real confidence (50% for 2 samples, 75%, 87.5%,
  93.75% for 5) is what the report prints;
- a two-sided Mann-Whitney U test (the Wilcoxon rank-sum test) whose p-value is exact, ties
  included: the permutation distribution of the statistic with mid-ranks, counted by dynamic
  programming over the tie groups (as benchstat does), whatever the two arms' sizes as long as the
  programme is affordable (exact_cost() up to EXACT_COST: any cell up to 25 a side, 3 against up to
  ~290, 10 against ~80), the normal approximation with tie and continuity correction beyond;
- the change as a ratio, from the same rank procedure: the Hodges-Lehmann estimate of the shift
  of log(value) (the median of the pairwise log ratios) and the interval of the shifts the exact
  test does not reject at ALPHA. The test at shift 0 is the cell's own test, so a cell's interval
  excludes 0 exactly when its p-value is below ALPHA; values within TIE_REL of each other are ties
  for both (the test and the interval);
- Holm's step-down adjustment of the p-values of a family of cells; a change whose adjusted p is
  not below ALPHA is shown as `~` (the row says when the adjustment made it so). The interval is
  the cell's own (not adjusted): the report says so where it prints both;
- what cannot be tested says why: a side with one sample, a sample of 0 or less (nothing
  measured), a sample that is not a number (NaN, infinite), a family or sample size that can never
  reach ALPHA (with the samples a side that could, ties counted, or that none can).

numpy only (a dependency of matplotlib, pinned with it). scipy is not used: its mannwhitneyu is
exact only without ties, and permutation_test enumerates every split (C(50, 25) for 25 a side)."""
import bisect
import math
import statistics
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
CONFIDENCE = 0.95
EXACT_MAX = 25  # equal arms up to which the p-value is exact (benchstat's limit); EXACT_COST sets it for others
SCAN_MAX = 201  # cells of shifts (2 x pairwise differences + 1) the interval tests one by one; bisection beyond
TIE_REL = 1e-9  # values closer than this (relative, absolute below 1) are ties, for the test and the interval
CACHE_BYTES = 16 << 20  # the exact distributions kept for reuse, at most this many bytes


def exact_cost(n1, n2):
    """The work of the exact distribution for arms of these sizes, in units of its dynamic programme's
    table cells x passes: (small + 1) rows x 2 small x large columns x (n1 + n2) passes, about."""
    m, big = sorted((n1, n2))
    return m * m * big * (m + big)


EXACT_COST = exact_cost(EXACT_MAX, EXACT_MAX)  # 25 a side: about 3 ms
SCAN_COST = exact_cost(8, 8)  # cells up to this cost scan SCAN_MAX shifts one by one; costlier ones fewer


def finite(xs):
    """Whether every value is a number (not NaN, not infinite)."""
    return all(math.isfinite(v) for v in xs)


def median(xs):
    """The median; NaN when a value is NaN (sorting NaN gives any order)."""
    xs = list(xs)
    if any(v != v for v in xs):
        return math.nan
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

def _tied(x, y):
    """Whether y (>= x) is a tie of x: within TIE_REL of it (relative; absolute below 1)."""
    return y - x <= TIE_REL * max(1.0, abs(x))


def _ties(values):
    """Mid-ranks (1-based, doubled: integers) of values, and the tie groups' sizes in rank order. A
    group is a value with those within TIE_REL above it (the rule the interval's shifts use)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks2 = [0] * len(values)
    groups = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and _tied(values[order[i]], values[order[j + 1]]):
            j += 1
        for k in range(i, j + 1):
            ranks2[order[k]] = i + j + 2  # 2 x the mid-rank (i + j) / 2 + 1
        groups.append(j - i + 1)
        i = j + 1
    return ranks2, tuple(groups)


_CACHE = OrderedDict()
_cached_bytes = 0


def _rank_sum_counts(groups, n1):
    """Counts (floats) of the doubled rank sum W2 of n1 values drawn from the pooled sample whose tie
    groups (in rank order) have these sizes, index u2 = W2 - n1 (n1 + 1) = 2 U: the number of the
    C(N, n1) splits giving each (2 n1 n2 + 1 of them). Each group of t equal values at doubled mid-rank
    r2 gives a of its values to the first sample in C(t, a) ways, adding a * r2: a dynamic programme
    over the groups, its table (rows: values drawn; columns: W2 - values drawn, which every group
    shifts by a (r2 - 1) on every row) cut to what the groups so far can reach. Kept in a cache of at
    most CACHE_BYTES, least recently used first out."""
    global _cached_bytes
    key = (groups, n1)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    total = sum(groups)
    width = n1 * (2 * total - n1) + 1
    dist = np.zeros((n1 + 1, width))
    dist[0, 0] = 1.0
    k = 0

    def reach(k):  # (rows, columns) reachable after k values
        r = min(k, n1)
        return r + 1, min(width, r * (2 * k - r) + 1)
    for t in groups:
        r2 = 2 * k + t + 1
        rows, cols = reach(k)
        old = dist[:rows, :cols].copy() if t > 1 else dist[:rows, :cols]
        for a in range(1, min(t, n1) + 1):
            shift = a * (r2 - 1)
            hi_r, hi_c = min(n1 + 1, a + rows), min(width, shift + cols)
            if hi_r <= a or hi_c <= shift:
                break
            part = old[:hi_r - a, :hi_c - shift]
            dist[a:hi_r, shift:hi_c] += part if t == 1 else math.comb(t, a) * part
        k += t
    out = dist[n1, n1 * n1:].copy()  # u2 = W2 - n1 (n1 + 1) = column - n1 ** 2
    out.setflags(write=False)
    _CACHE[key] = out
    _cached_bytes += out.nbytes
    while _cached_bytes > CACHE_BYTES and len(_CACHE) > 1:
        _cached_bytes -= _CACHE.popitem(last=False)[1].nbytes
    return out


def mann_whitney_u(x, y, method="auto"):
    """(U of x, two-sided p-value) of the Mann-Whitney U test. method: "auto" (exact while
    exact_cost(n1, n2) <= EXACT_COST, whatever the arms' sizes, ties or not), "exact" or
    "asymptotic". The exact p is the permutation p-value 2 min(P(U <= u), P(U >= u)) over every split
    of the pooled samples (mid-ranks), counted on the smaller arm."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both sides need samples")
    ranks2, groups = _ties(list(x) + list(y))
    w2 = sum(ranks2[:n1])
    u1 = (w2 - n1 * (n1 + 1)) / 2
    if method == "auto":
        method = "exact" if exact_cost(n1, n2) <= EXACT_COST else "asymptotic"
    if method == "exact":
        # the smaller arm's statistic (the same two-sided p): 2 U of y = 2 n1 n2 - 2 U of x
        m, u2 = (n1, w2 - n1 * (n1 + 1)) if n1 <= n2 else (n2, 2 * n1 * n2 - (w2 - n1 * (n1 + 1)))
        counts = _rank_sum_counts(groups, m)
        total = float(math.comb(n1 + n2, n1))
        lower = float(counts[:u2 + 1].sum()) / total
        upper = float(counts[u2:].sum()) / total
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


def distinct(values):
    """How many different values there are, values within TIE_REL of each other being one."""
    return len(_ties(list(values))[1])


def _as_tied(pooled, size):
    """`size` values tied as `pooled` are: its sorted values, each repeated in proportion."""
    s = sorted(pooled)
    return [s[min(len(s) - 1, (2 * i + 1) * len(s) // (2 * size))] for i in range(size)]


SAMPLES_MAX = 200  # the most samples a side the advice considers


def samples_needed(cells, alpha=ALPHA, pooled=None, start=2):
    """The fewest samples a side (from `start` on) with which the smallest p, times Holm's factor for
    a family of `cells`, is below alpha: without ties, or with `pooled` (a cell's pooled values) tied
    as they are (each value repeated in proportion). None when no number up to SAMPLES_MAX does: every
    value the same, or ties that more samples of these values never break."""
    ties = pooled is not None and distinct(pooled) < len(pooled)
    if ties and distinct(pooled) == 1:
        return None
    n = max(2, start)
    while n <= SAMPLES_MAX:
        p = min_p(n, n, _as_tied(pooled, 2 * n)) if ties else min_p(n, n)
        if p * cells < alpha:
            return n
        n += 1
    return None


# -- the change and its interval: Hodges-Lehmann on logs, by inverting the exact test

def _p_at(la, lb, d, sla=None):
    """The exact test's p of log b - d against log a (a shifted value within TIE_REL of a value of
    a is that value: at d = a pairwise difference the two tie, as they do in exact arithmetic; the
    test ties values within TIE_REL too). At d = 0 it is the cell's own test."""
    sla = sorted(la) if sla is None else sla
    shifted = []
    for v in lb:
        s = v - d
        i = bisect.bisect_left(sla, s)
        near = [p for p in sla[max(0, i - 1):i + 1] if abs(s - p) <= TIE_REL * max(1.0, abs(p))]
        shifted.append(min(near, key=lambda p: abs(s - p)) if near else s)
    return mann_whitney_u(shifted, la)[1]


def shift_interval(a, b, alpha=ALPHA):
    """(estimate, lo, hi, lo_open, hi_open) of the shift d of log(b) against log(a): the
    Hodges-Lehmann estimate (median of the pairwise differences) and the set of shifts the test
    does not reject at alpha (its hull; open ends are the differences where the test rejects
    while just inside it does not). lo/hi are -inf/inf where no shift is rejected on that side.
    The hull holds d = 0 exactly when the cell's own test (the test at 0) does not reject."""
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    sla = sorted(la)
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
            memo[i] = _p_at(la, lb, cells[i][0], sla) >= alpha
        return memo[i]

    def holds(c, d):
        return c[1] == d if c[3] else c[1] < d < c[2]
    h = next(i for i, c in enumerate(cells) if holds(c, est))
    # the cells tested one by one: SCAN_MAX while the exact distribution is cheap, fewer as it costs more
    cost = exact_cost(len(a), len(b))
    scan = SCAN_MAX if cost > EXACT_COST else SCAN_MAX * SCAN_COST / max(SCAN_COST, cost)
    if len(cells) <= scan or not ok(h):
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
    # the cell's own test decides whether the interval holds 0: an accepted 0 is in the hull; a
    # rejected 0 inside it (the accepted set is not an interval there) cuts it on the estimate's side
    z = next(i for i, c in enumerate(cells) if holds(c, 0.0))
    if ok(z):
        i_lo, i_hi = min(i_lo, z), max(i_hi, z)
    elif i_lo <= z <= i_hi:
        above = next((i for i in range(z + 1, i_hi + 1) if ok(i)), None) if h > z or h == z else None
        below = next((i for i in range(z - 1, i_lo - 1, -1) if ok(i)), None) if above is None else None
        if above is not None:
            i_lo = above
        elif below is not None:
            i_hi = below
        else:
            return est, None, None, False, False
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
    values = list(values)
    if not finite(values):  # no order to take statistics from: NaN, with the coverage its n would have
        return Summary(values, median(values), math.nan, math.nan, median_ci(range(len(values)))[2])
    lo, hi, cov = median_ci(values)
    return Summary(values, median(values), lo, hi, cov)


def _pct(d):
    """A shift of log(value) as a change in %: +inf beyond the floats (a ratio above 1e308)."""
    if not math.isfinite(d):
        return d
    try:
        return (math.exp(d) - 1) * 100
    except OverflowError:
        return math.inf


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
    """Comparison of baseline samples a and candidate samples b: the Hodges-Lehmann change of b in %,
    its interval and the exact rank test's p, or why none can be given (a sample that is not a number,
    a sample of 0 or less, one sample a side)."""
    a, b = list(a), list(b)
    sa, sb = summarize(a), summarize(b)
    for side, xs in (("the baseline", a), ("the candidate", b)):
        bad = [v for v in xs if not math.isfinite(v)]
        if bad:
            why = (f"{side} has a sample that is not a number ({bad[0]}"
                   + (f", {len(bad)} of {len(xs)}" if len(bad) > 1 else "") + "): no change can be given")
            return Comparison(sa, sb, math.nan, None, None, None, alpha=alpha, why=why)
    if min(a + b) <= 0:
        zero = "the baseline" if min(a) <= 0 else "the candidate"
        why = (f"{zero} has a sample of {min(a) if min(a) <= 0 else min(b):g} (nothing measured): "
               "no change in % can be given")
        return Comparison(sa, sb, math.nan, None, None, None, alpha=alpha, why=why)
    if sa.n < 2 or sb.n < 2:
        ch = (median(b) / median(a) - 1) * 100  # a float division: +inf beyond the floats, no error
        return Comparison(sa, sb, ch, None, None, None, alpha=alpha, why=f"n={min(sa.n, sb.n)}: no significance")
    # the test at shift 0 of the interval's own procedure (logs, values within TIE_REL tied)
    p = _p_at([math.log(v) for v in a], [math.log(v) for v in b], 0.0)
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
    its samples allow, times Holm's factor, is not below alpha; with the samples a side that could
    get there, ties counted (values as tied as these), or that none can (every value the same)."""
    cs = [c for c in comparisons if c.p is not None]
    if not cs or any(c.reachable for c in cs):
        return ""
    m = cs[0].family
    ns = sorted({(c.a.n, c.b.n) for c in cs})
    sizes = " or ".join(f"{x} and {y}" if x != y else f"{x}" for x, y in ns)
    best = min(cs, key=lambda c: c.min_p)
    fam = f" and Holm's adjustment over {m} cells (p below {alpha / m:.3g} needed)" if m > 1 else ""
    head = (f"With {sizes} samples a side{fam} no change can be significant at {alpha:g}: the smallest p these "
            f"samples allow is {best.min_p:.3f}")
    if all(distinct(c.a.values + c.b.values) == 1 for c in cs):
        return (f"{head}; every sample of both sides has the same value, and more samples of the same values "
                "cannot separate the sides.")
    pooled = best.a.values + best.b.values
    k = distinct(pooled)
    untied = samples_needed(m, alpha)
    need = untied if k == len(pooled) else samples_needed(m, alpha, pooled, max(best.a.n, best.b.n) + 1)
    if need == untied:
        return f"{head}; use {need} or more samples a side."
    ties = f"the samples' values have ties ({k} different values of {len(pooled)})"
    if need is None:
        return (f"{head}; {ties}, and more samples of values as tied as these (up to {SAMPLES_MAX} a side) "
                "would not get there either.")
    return f"{head}; {ties}: with values as tied as these, use {need} or more samples a side."


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


def pct_text(x, d=2):
    """A change in %: `+12.34%`, `+1.235e+12%` from 1e9 on, `> +1e+308%` beyond the floats."""
    if math.isinf(x):
        return "> +1e+308%" if x > 0 else "< -1e+308%"
    return f"{x:+.3e}%" if abs(x) >= 1e9 else f"{x:+.{d}f}%"


def _end(x, d, is_open, side):
    """One end of a change's interval; an end at 0 the interval does not include is marked (`> +0.00%`),
    so that an interval of a significant change never reads as if it held 0."""
    if math.isinf(x):  # unbounded (-inf below, +inf above), or beyond the floats (+inf below)
        return pct_text(x, d) if side == "lo" and x > 0 else ("-inf" if x < 0 else "+inf")
    s = pct_text(x, d) if x == 0 or abs(x) >= 0.5 * 10 ** -d else f"{x:+.1e}%"
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
    return f"{pct_text(c.change, d)} ({interval_text(c, d)})"


def coverage_text(cov):
    """A coverage as the report prints it: 95% and up as `95%`, otherwise its value (`93.75%`)."""
    if cov >= CONFIDENCE:
        return f"{CONFIDENCE * 100:g}%"
    return f"{cov * 100:.4g}%"


def median_text(s, d=2, show_cov=False):
    """`1234.56 (1200.00 to 1250.00)`, with `; 93.75%` when show_cov and the interval falls short of
    95%; a single sample as itself; `not a number` when a sample is not one (NaN, infinite)."""
    if not finite(s.values):
        return "not a number"
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
