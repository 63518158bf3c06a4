"""Comparisons a database engineer can believe (issue #23).

- statistics (tbsreport/stats.py) against known values: scipy's documented Mann-Whitney U
  example (exact and asymptotic), a brute-force enumeration of the exact distribution, the
  order-statistic interval of the median, Holm's adjustment, benchstat's `~` and n=1 texts;
- sweep --repeats / --plan: bad input stops before any run (message names the value);
- on the local stack: one interleaved 3-arm plan (A, A again, B with one TiDB system variable
  switched): A vs A shows `~` in every cell, A vs B is significant and names the variable at
  the top of "What differs".
"""
import itertools
import math
import random

import pytest

from tbsreport import stats


# ---------------------------------------------------------------- statistics

def test_mann_whitney_matches_scipys_documented_example():
    # scipy.stats.mannwhitneyu docs: males vs females, U = 17, p = 0.1111 (exact),
    # 0.11134688653314041 (method="asymptotic", continuity-corrected)
    males, females = [19, 22, 16, 29, 24], [20, 11, 17, 12]
    u, p = stats.mann_whitney_u(males, females)
    assert u == 17 and p == pytest.approx(0.1111111111111111, abs=1e-12)
    u, p = stats.mann_whitney_u(males, females, method="asymptotic")
    assert u == 17 and p == pytest.approx(0.11134688653314041, abs=1e-9)


def brute_p(x, y):
    """Two-sided exact p by enumerating every split of the pooled samples."""
    pooled = list(x) + list(y)
    n1 = len(x)

    def u(xs, ys):
        return sum(1 for a in xs for b in ys if a > b)
    u0 = u(x, y)
    lo = hi = total = 0
    for idx in itertools.combinations(range(len(pooled)), n1):
        xs = [pooled[i] for i in idx]
        ys = [pooled[i] for i in range(len(pooled)) if i not in idx]
        v = u(xs, ys)
        lo += v <= u0
        hi += v >= u0
        total += 1
    return min(1.0, 2 * min(lo, hi) / total)


@pytest.mark.parametrize("n1,n2", [(2, 3), (4, 4), (5, 5), (3, 6), (6, 5)])
def test_exact_distribution_against_enumeration(n1, n2):
    rnd = random.Random(n1 * 10 + n2)
    for _ in range(5):
        vals = rnd.sample(range(1000), n1 + n2)
        x, y = vals[:n1], vals[n1:]
        assert stats.mann_whitney_u(x, y)[1] == pytest.approx(brute_p(x, y), abs=1e-12)


def test_ties_use_the_normal_approximation_with_tie_correction():
    x, y = [1, 2, 2, 3, 3, 3], [3, 4, 4, 5, 5, 5]
    u, p = stats.mann_whitney_u(x, y)
    # by hand: mid-ranks, U = sum(ranks of x) - 21, tie-corrected variance, continuity 0.5
    # ranks of x: 1, 2.5, 2.5, 5.5, 5.5, 5.5 (the four 3s share ranks 4-7) -> U = 22.5 - 21
    assert u == 1.5
    var = 36 / 12 * (13 - ((2 ** 3 - 2) + (4 ** 3 - 4) + (2 ** 3 - 2) + (3 ** 3 - 3)) / (12 * 11))
    assert p == pytest.approx(math.erfc((abs(1.5 - 18) - 0.5) / math.sqrt(var) / math.sqrt(2)), rel=1e-12)
    assert stats.mann_whitney_u([5, 5, 5], [5, 5, 5])[1] == 1.0


def test_smallest_p_values_decide_what_repeats_can_show():
    assert stats.min_p(5, 5) == pytest.approx(2 / 252) and stats.min_p(3, 3) == pytest.approx(0.1)
    assert stats.mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])[1] == pytest.approx(2 / 252)


def test_median_interval_is_the_order_statistic_one():
    xs = [9, 1, 8, 2, 7, 3, 6, 4, 5, 0]
    assert stats.median_ci(xs) == (1, 8, pytest.approx(1 - 2 * 11 / 1024))  # x(2), x(9)
    assert stats.median_ci([3, 1, 2, 5, 4]) == (1, 5, pytest.approx(1 - 2 / 32))  # n=5: [min, max], 93.75%
    assert stats.median_ci([7]) == (7, 7, 0.0)


def test_holm():
    assert stats.holm([0.01, 0.04, 0.03, None]) == [pytest.approx(0.03), pytest.approx(0.06),
                                                   pytest.approx(0.06), None]


def test_benchstat_conventions():
    a, b = [100, 101, 99, 102, 98], [120, 119, 121, 118, 122]
    c = stats.compare(a, b)
    assert c.change == pytest.approx(20.0) and c.p == pytest.approx(2 / 252) and c.significant
    assert c.lo < 20 < c.hi and c.lo > 15 and c.hi < 25
    assert stats.change_text(c).startswith("+20.00% (") and stats.p_text(c) == "p=0.008"
    assert stats.compare(a, b) == c  # the bootstrap has a fixed seed
    same = stats.compare(a, [100.5, 99.5, 101.5, 98.5, 102.5])
    assert not same.significant and stats.change_text(same) == "~" and stats.p_text(same).startswith("~ (p=")
    one = stats.compare([100], b)
    assert one.p is None and not one.significant and stats.p_text(one) == "n=1: no significance"
    assert stats.change_text(one) == "~"
    # Holm over a family: 4 cells at the smallest p of 5 vs 5 stay significant, 8 do not
    fam = stats.adjust([stats.compare(a, b) for _ in range(4)])
    assert all(x.significant for x in fam)
    assert not any(x.significant for x in stats.adjust([stats.compare(a, b) for _ in range(8)]))


# ---------------------------------------------------------------- bad input: nothing runs

def sweep(*args, timeout=120):
    import subprocess
    import sys
    from conftest import ROOT
    return subprocess.run([sys.executable, str(ROOT / "scripts/sweep"), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


GOOD = {"workloads": ["oltp_point_select"], "threads": [1], "repeats": 2,
        "options": {"time": 1, "tables": 1, "table_size": 1000, "mysql_db": "sbtest"},
        "arms": [{"name": "a"}, {"name": "b"}]}


def write_plan(tmp_path, **change):
    import copy
    import json
    p = copy.deepcopy(GOOD)
    for k, v in change.items():
        if v is None:
            p.pop(k, None)
        else:
            p[k] = v
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(p))
    return f


@pytest.mark.parametrize("change,message", [
    ({"warmup": 3}, "unknown key 'warmup' (valid: admin, analyze, arms, description, options"),
    ({"workloads": ["oltp_point_select", "oltp_nope"]}, "unknown workload 'oltp_nope' (valid: oltp_point_select, "),
    ({"options": {"tabels": 2}}, "options: unknown option 'tabels' (valid: mysql_host, "),
    ({"arms": [{"name": "a"}, {"name": "b", "options": {"rand_typ": "uniform"}}]},
     "arm 'b' options: unknown option 'rand_typ' (valid: "),
    ({"arms": [{"name": "a"}, {"name": "b", "colour": 1}]}, "arm 2: unknown key 'colour' (valid: description, "),
    ({"arms": [{"name": "a"}]}, "'arms' must list two or more arms"),
    ({"repeats": 0}, "invalid repeats 0: must be >= 1"),
    ({"arms": [{"name": "a"}, {"name": "b", "set_global": {"tidb_slow_log_threshold": 0}}]},
     "set_global needs 'admin'"),
])
def test_bad_plans_stop_before_any_run(tmp_path, change, message):
    res = tmp_path / "results"
    p = sweep("--plan", str(write_plan(tmp_path, **change)), "--results", str(res), "--id", "bad")
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert not res.exists() or not any(res.iterdir())


def test_unreachable_arm_and_repeats_zero_stop_before_any_run(tmp_path):
    res = tmp_path / "results"
    f = write_plan(tmp_path, arms=[{"name": "a"}, {"name": "far", "options": {"mysql_port": 1}}])
    p = sweep("--plan", str(f), "--results", str(res), "--id", "bad")
    assert p.returncode == 2 and "arm 'far' cannot be reached: 127.0.0.1:1 as user" in p.stderr, p.stderr
    assert "nothing was run" in p.stderr and (not res.exists() or not any(res.iterdir()))
    p = sweep("--workloads", "oltp_point_select", "--threads", "1", "--repeats", "0", "--results", str(res))
    assert p.returncode == 2 and "invalid --repeats 0: must be >= 1" in p.stderr, p.stderr
    p = sweep("--plan", str(tmp_path / "nope.json"), "--results", str(res))
    assert p.returncode == 2 and f"plan file {tmp_path / 'nope.json'} does not exist" in p.stderr, p.stderr
    assert not res.exists() or not any(res.iterdir())
