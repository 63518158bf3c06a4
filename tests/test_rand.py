"""Issue #3: each rand_type draws keys as sysbench does. Our k6/lib/rand.js is compared with
sysbench 1.0.20 itself (its sysbench.rand.default in a Lua script, same options) by a
two-sample chi-square test; zipfian, which 1.0.20 lacks (it is sysbench 1.1's), is compared
with its exact probability mass function. Fixed seeds: the result is the same every run."""
import math
import os
import subprocess
import tempfile

import pytest

from conftest import ROOT

pytestmark = pytest.mark.full

N = 1000          # keys 1..N
DRAWS = 200_000
Z_001 = 3.090     # one-sided normal quantile for alpha = 0.001

SYSBENCH_LUA = """
function event()
  local counts = {}
  for i = 1, %d do
    local b = math.floor((sysbench.rand.default(1, %d) - 1) / %d) + 1
    counts[b] = (counts[b] or 0) + 1
  end
  local out = {}
  for k, c in pairs(counts) do out[#out+1] = k .. ":" .. c end
  print("COUNTS " .. table.concat(out, ","))
end
"""


def parse_counts(text):
    line = next(ln for ln in text.splitlines() if ln.startswith("COUNTS "))
    return {int(k): int(c) for k, c in (p.split(":") for p in line[7:].split(","))}


def ours(opts):
    env = dict(os.environ, K6_LOG_FORMAT="raw", K6_OUT="", N=str(N), DRAWS=str(DRAWS))
    args = [str(ROOT / "bin/k6"), "run", "--quiet", "--summary-mode=disabled", "--no-usage-report"]
    for k, v in opts.items():
        args += ["-e", f"{k}={v}"]
    p = subprocess.run(args + [str(ROOT / "tests/k6/rand_draws.js")], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return parse_counts(p.stdout + p.stderr)


def sysbench(opts, draws=DRAWS, n=N, width=1):
    """Counts of `draws` values of sysbench's sysbench.rand.default(1, n) (opts: its options),
    by bins of `width` keys: bin b holds keys (b-1)*width+1 .. b*width."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(SYSBENCH_LUA % (draws, n, width))
    args = ["sysbench", "--events=1", "--threads=1"] + [f"--{k.replace('_', '-')}={v}" for k, v in opts.items()]
    p = subprocess.run(args + [f.name, "run"], capture_output=True, text=True, timeout=120)
    os.unlink(f.name)
    assert p.returncode == 0, p.stdout + p.stderr
    return parse_counts(p.stdout)


def chi2_critical(df, z=Z_001):
    """Wilson-Hilferty approximation of the chi-square quantile at 1 - alpha, z being the
    normal quantile of alpha (default 0.001)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def merged_bins(pairs, min_expected=20):
    """Adjacent keys merged until each bin expects at least min_expected draws per sample."""
    bins, acc = [], [0.0, 0.0]
    for a, b in pairs:
        acc[0] += a
        acc[1] += b
        if min(acc) >= min_expected:
            bins.append(tuple(acc))
            acc = [0.0, 0.0]
    if acc != [0.0, 0.0]:
        if bins:
            last = bins.pop()
            bins.append((last[0] + acc[0], last[1] + acc[1]))
        else:
            bins.append(tuple(acc))
    return bins


def two_sample_chi2(c1, c2):
    keys = range(1, N + 1)
    bins = merged_bins([(c1.get(k, 0), c2.get(k, 0)) for k in keys])
    stat = sum((a - b) ** 2 / (a + b) for a, b in bins if a + b > 0)
    return stat, len(bins) - 1


CASES = [
    {"rand_type": "uniform"},
    {"rand_type": "gaussian"},
    {"rand_type": "special"},
    {"rand_type": "special", "rand_spec_pct": 5, "rand_spec_res": 50},
    {"rand_type": "pareto"},
    {"rand_type": "pareto", "rand_pareto_h": 0.5},
]


@pytest.mark.parametrize("opts", CASES, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_distribution_matches_sysbench(opts):
    a = ours({**opts, "rand_seed": 11})
    b = sysbench({**opts, "rand_seed": 11})
    assert sum(a.values()) == sum(b.values()) == DRAWS
    assert min(a) >= 1 and max(a) <= N, "our keys leave [1, N]"
    stat, df = two_sample_chi2(a, b)
    assert stat < chi2_critical(df), f"{opts}: chi2={stat:.1f} with {df} df (critical {chi2_critical(df):.1f})"


def test_two_sample_test_has_power():
    """The same test tells sysbench's special distribution from its uniform one, and from
    special with other parameters: it can fail."""
    special = sysbench({"rand_type": "special", "rand_seed": 11})
    for other in [{"rand_type": "uniform"}, {"rand_type": "special", "rand_spec_pct": 2}]:
        stat, df = two_sample_chi2(ours({**other, "rand_seed": 11}), special)
        assert stat > chi2_critical(df), other


@pytest.mark.parametrize("exp", [0.8, 1.0, 1.5])
def test_zipfian_matches_its_pmf(exp):
    counts = ours({"rand_type": "zipfian", "rand_zipfian_exp": exp, "rand_seed": 11})
    assert min(counts) >= 1 and max(counts) <= N
    weights = [k ** -exp for k in range(1, N + 1)]
    total = sum(weights)
    pairs = [(counts.get(k, 0), DRAWS * w / total) for k, w in zip(range(1, N + 1), weights)]
    bins = merged_bins([(o, e) for o, e in pairs], min_expected=20)
    stat = sum((o - e) ** 2 / e for o, e in bins)
    df = len(bins) - 1
    assert stat < chi2_critical(df), f"zipfian exp={exp}: chi2={stat:.1f} with {df} df"
