"""Statistics of repeated samples, benchstat's way (golang.org/x/perf/cmd/benchstat):

- the median of each side and its 95% confidence interval (the distribution-free interval
  between two order statistics, from the binomial distribution; with fewer than 6 samples no
  such interval reaches 95%, so it is [min, max] and its real confidence is given);
- the change of the medians in % with a bootstrap 95% interval (fixed seed: the same samples
  always give the same interval);
- a two-sided Mann-Whitney U test (exact distribution when both sides have at most 8 samples
  and no ties, as scipy's method="auto"; otherwise the normal approximation with tie and
  continuity correction); a change whose p-value is not below alpha (0.05) is shown as `~`;
- Holm's step-down adjustment of the p-values of several cells compared at once, so that a
  report of many cells does not find changes in noise by chance;
- a side with one sample has no spread: "n=1: no significance", and no change is claimed.

Standard library only (scipy is not a dependency of the stack)."""
import math
import random
import statistics
from dataclasses import dataclass
from functools import lru_cache

ALPHA = 0.05
CONFIDENCE = 0.95
BOOTSTRAP = 2000
SEED = 20261125


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


@lru_cache(maxsize=None)
def _u_counts(n1, n2):
    """Number of arrangements of n1 x's and n2 y's giving each U (the count of (x, y) pairs
    with x > y), for U = 0 .. n1*n2."""
    # f(i, j)[u]: arrangements of i x's and j y's with statistic u; the largest element is an x
    # (adding j to U) or a y
    if n1 == 0 or n2 == 0:
        return (1,) + (0,) * (n1 * n2)
    a = _u_counts(n1 - 1, n2)
    b = _u_counts(n1, n2 - 1)
    out = [0] * (n1 * n2 + 1)
    for u, c in enumerate(a):
        out[u + n2] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def _ranks(values):
    """Mid-ranks (1-based) and the tie groups' sizes."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        r = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = r
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney_u(x, y, method="auto"):
    """(U of x, two-sided p-value). method: "auto" (exact when both sides have at most 8
    samples and there are no ties), "exact" or "asymptotic"."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both sides need samples")
    ranks, ties = _ranks(list(x) + list(y))
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    if method == "auto":
        method = "exact" if max(n1, n2) <= 8 and not ties else "asymptotic"
    if method == "exact":
        counts = _u_counts(n1, n2)
        total = math.comb(n1 + n2, n1)
        u = int(round(u1))
        lower = sum(counts[:u + 1]) / total
        upper = sum(counts[u:]) / total
        return u1, min(1.0, 2 * min(lower, upper))
    n = n1 + n2
    mu = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - sum(t ** 3 - t for t in ties) / (n * (n - 1)))
    if var <= 0:
        return u1, 1.0
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)
    z = max(z, 0.0)
    return u1, min(1.0, math.erfc(z / math.sqrt(2)))


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


def change_interval(a, b, confidence=CONFIDENCE, reps=BOOTSTRAP, seed=SEED):
    """(change %, lo %, hi %) of median(b) against median(a): the percentile bootstrap of the
    ratio of medians, resampling each side with replacement (a fixed seed)."""
    ma, mb = median(a), median(b)
    ch = (mb - ma) / ma * 100 if ma else math.nan
    if len(a) < 2 or len(b) < 2 or not ma:
        return ch, None, None
    rnd = random.Random(seed)
    vals = []
    for _ in range(reps):
        ra = median(rnd.choices(a, k=len(a)))
        rb = median(rnd.choices(b, k=len(b)))
        if ra:
            vals.append((rb - ra) / ra * 100)
    vals.sort()
    lo_i = int(math.floor((1 - confidence) / 2 * (len(vals) - 1)))
    hi_i = int(math.ceil((1 + confidence) / 2 * (len(vals) - 1)))
    return ch, vals[lo_i], vals[hi_i]


@dataclass
class Summary:
    """One side of one cell: its samples, median and the median's interval."""
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


@dataclass
class Comparison:
    """Baseline a against candidate b in one cell."""
    a: Summary
    b: Summary
    change: float  # % of the medians
    lo: float  # the change's interval (None without 2 samples a side)
    hi: float
    p: float  # two-sided Mann-Whitney p-value (None with a side of one sample)
    p_adj: float = None  # after Holm's adjustment over the report's cells (set by adjust())
    alpha: float = ALPHA

    @property
    def testable(self):
        return self.p is not None

    @property
    def significant(self):
        p = self.p_adj if self.p_adj is not None else self.p
        return p is not None and p < self.alpha

    @property
    def reason(self):
        """Why no change can be claimed, or ''."""
        if self.a.n < 2 or self.b.n < 2:
            n = min(self.a.n, self.b.n)
            return f"n={n}: no significance"
        return ""


def compare(a, b, alpha=ALPHA):
    sa, sb = summarize(a), summarize(b)
    ch, lo, hi = change_interval(list(a), list(b))
    p = None
    if sa.n >= 2 and sb.n >= 2:
        p = mann_whitney_u(list(b), list(a))[1]
    return Comparison(sa, sb, ch, lo, hi, p, alpha=alpha)


def adjust(comparisons):
    """Holm-adjusts the p-values of a family of comparisons (in place)."""
    adj = holm([c.p for c in comparisons])
    for c, p in zip(comparisons, adj):
        c.p_adj = p
    return comparisons


def min_p(n1, n2):
    """The smallest two-sided p-value any samples of these sizes can give (exact test)."""
    if n1 < 2 or n2 < 2:
        return 1.0
    return min(1.0, 2 / math.comb(n1 + n2, n1))


# -- text, benchstat's conventions

def fmt_p(p):
    return f"p={p:.3f}" if p >= 0.001 else "p<0.001"


def p_text(c):
    """The p column of a cell: `p=0.008`, `~ (p=0.421)`, or `n=1: no significance`."""
    if c.reason:
        return c.reason
    p = c.p_adj if c.p_adj is not None else c.p
    return fmt_p(p) if c.significant else f"~ ({fmt_p(p)})"


def change_text(c, d=2):
    """The change column: `+12.34% (+8.10% to +15.02%)` when significant, else `~`."""
    if c.reason or not c.significant:
        return "~"
    if c.lo is None:
        return f"{c.change:+.{d}f}%"
    return f"{c.change:+.{d}f}% ({c.lo:+.{d}f}% to {c.hi:+.{d}f}%)"


def median_text(s, d=2):
    """`1234.56 (1200.00 to 1250.00)`; a single sample as itself."""
    if s.n == 1:
        return f"{s.median:.{d}f}"
    return f"{s.median:.{d}f} ({s.lo:.{d}f} to {s.hi:.{d}f})"
