"""Comparisons a database engineer can believe (issue #23).

- statistics (tidbbench/report/stats.py) against known values: scipy's documented Mann-Whitney U
  example (exact and asymptotic), a brute-force enumeration of the exact distribution with and
  without ties, three samples a side never significant, the change's interval agreeing with the
  test (200 random 6-vs-6 cells), the order-statistic interval of the median and its real
  confidence, Holm's adjustment and what it holds back, benchstat's `~`, n=1 and zero texts;
- sweep --repeats / --plan: bad input stops before any run (message names the value);
- on the local stack: one interleaved 3-arm plan (A, A again, B with one TiDB system variable
  switched): A vs A shows `~` in every cell, A vs B is significant and names the variable at
  the top of "What differs".
"""
import itertools
import re
import math
import random

import pytest

import plantools
from tidbbench.report import stats

# serial (conftest.py): its plan sets a TiDB global and its A/A cells assert that nothing recorded differs
pytestmark = [pytest.mark.fast, pytest.mark.serial]


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
    """Two-sided exact permutation p by enumerating every split of the pooled samples (U with
    ties counted 1/2: the mid-rank statistic)."""
    pooled = list(x) + list(y)
    n1 = len(x)

    def u(xs, ys):
        return sum((a > b) + 0.5 * (a == b) for a in xs for b in ys)
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


F = 1.0181  # about one sysbench latency bucket (sbhist.FACTOR): bucket values tie often


def buckets(rnd, n, base, spread):
    return [round(F ** (base + rnd.randint(0, spread)), 9) for _ in range(n)]


def test_ties_get_the_exact_permutation_p_value():
    # the cases: the normal approximation gave 0.047 and 0.042
    assert stats.mann_whitney_u([1, 2, 3, 4], [4, 5, 6, 7])[1] == pytest.approx(4 / 70, abs=1e-12)
    a, b = [10.0, 10.0, 10.0], [10 * F] * 3  # three a side in two neighbouring buckets
    assert stats.mann_whitney_u(b, a)[1] == pytest.approx(0.1, abs=1e-12)
    assert stats.mann_whitney_u([5, 5, 5], [5, 5, 5])[1] == 1.0
    # random bucket values, many ties, against the brute-force enumeration
    rnd = random.Random(28)
    for n1, n2 in [(3, 3), (4, 5), (5, 5), (6, 6), (2, 7), (6, 4)]:
        for _ in range(6):
            x, y = buckets(rnd, n1, 100, 3), buckets(rnd, n2, 101, 3)
            assert stats.mann_whitney_u(x, y)[1] == pytest.approx(brute_p(x, y), abs=1e-12), (x, y)


def test_the_normal_approximation_only_beyond_the_exact_limit():
    x, y = [1, 2, 2, 3, 3, 3], [3, 4, 4, 5, 5, 5]
    u, p = stats.mann_whitney_u(x, y, method="asymptotic")
    # by hand: mid-ranks, U = sum(ranks of x) - 21, tie-corrected variance, continuity 0.5
    assert u == 1.5
    var = 36 / 12 * (13 - ((2 ** 3 - 2) + (4 ** 3 - 4) + (2 ** 3 - 2) + (3 ** 3 - 3)) / (12 * 11))
    assert p == pytest.approx(math.erfc((abs(1.5 - 18) - 0.5) / math.sqrt(var) / math.sqrt(2)), rel=1e-12)
    assert stats.mann_whitney_u(x, y)[1] == pytest.approx(brute_p(x, y), abs=1e-12)  # auto: exact
    rnd = random.Random(5)
    big = [rnd.random() for _ in range(stats.EXACT_MAX + 1)]
    assert stats.mann_whitney_u(big, big[::-1])[1] == stats.mann_whitney_u(big, big[::-1], method="asymptotic")[1]


def test_three_samples_a_side_are_never_significant():
    assert stats.min_p(3, 3) == pytest.approx(0.1)
    rnd = random.Random(3)
    for _ in range(300):
        a, b = buckets(rnd, 3, 100, rnd.randint(0, 3)), buckets(rnd, 3, 100 + rnd.randint(0, 6), rnd.randint(0, 3))
        c = stats.compare(a, b)
        assert not c.significant and c.lo == -math.inf and c.hi == math.inf, c  # no 95% interval either
        assert stats.change_text(c) == "~" and c.min_p >= 0.1
    c = stats.adjust([stats.compare([10.0] * 3, [12.0] * 3)])[0]
    assert stats.out_of_reach([c]) == ("With 3 samples a side no change can be significant at 0.05: the smallest p "
                                       "these samples allow is 0.100; use 4 or more samples a side.")


def contains_zero(c):
    return (c.lo < 0 or (c.lo == 0 and not c.lo_open)) and (c.hi > 0 or (c.hi == 0 and not c.hi_open))


def test_the_change_interval_agrees_with_the_test():
    """200 random 6-vs-6 cells of bucket values (ties), some shifted: the interval (inverting the
    exact test) excludes 0 exactly when p < 0.05, and holds the Hodges-Lehmann change."""
    rnd = random.Random(2028)
    significant = 0
    for _ in range(200):
        base = rnd.randint(50, 400)
        a = buckets(rnd, 6, base, rnd.randint(1, 5))
        b = buckets(rnd, 6, base + rnd.randint(0, 4), rnd.randint(1, 5))
        c = stats.compare(a, b)
        assert (c.p < 0.05) == (not contains_zero(c)) == c.significant, c
        assert c.lo <= c.change <= c.hi, c
        significant += c.significant
        if c.significant:
            assert "0.00%" not in stats.change_text(c).replace("> +0.00%", "").replace("< +0.00%", ""), c
    assert 20 < significant < 180  # both kinds of cell were checked


def test_bisection_finds_the_same_interval_as_the_full_scan(monkeypatch):
    rnd = random.Random(11)
    cases = [(buckets(rnd, 12, 100, 4), buckets(rnd, 11, 101, 4)) for _ in range(4)]
    cases += [([rnd.random() + 1 for _ in range(10)], [rnd.random() + 1.1 for _ in range(12)])]
    for a, b in cases:
        fast = stats.shift_interval(a, b)
        monkeypatch.setattr(stats, "SCAN_MAX", 10 ** 9)
        full = stats.shift_interval(a, b)
        monkeypatch.undo()
        assert fast == full


def test_smallest_p_values_decide_what_repeats_can_show():
    assert stats.min_p(5, 5) == pytest.approx(2 / 252) and stats.min_p(3, 3) == pytest.approx(0.1)
    assert stats.mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])[1] == pytest.approx(2 / 252)
    # ties raise it: five values in two buckets can never be as extreme
    assert stats.min_p(5, 5, [1] * 4 + [2] * 6) > 2 / 252
    assert stats.samples_needed(1) == 4 and stats.samples_needed(6) == 5 and stats.samples_needed(30) == 7  # 2/924 x 30 > 0.05


def test_median_interval_states_its_real_confidence():
    xs = [9, 1, 8, 2, 7, 3, 6, 4, 5, 0]
    assert stats.median_ci(xs) == (1, 8, pytest.approx(1 - 2 * 11 / 1024))  # x(2), x(9)
    assert stats.median_ci([3, 1, 2, 5, 4]) == (1, 5, pytest.approx(1 - 2 / 32))  # n=5: [min, max], 93.75%
    assert stats.median_ci([7]) == (7, 7, 0.0)
    assert [stats.median_ci(list(range(n)))[2] for n in (2, 3, 4, 5)] == [0.5, 0.75, 0.875, 0.9375]
    assert stats.min_n_for_ci() == 6
    five, six, three = (stats.summarize(list(range(1, n + 1))) for n in (5, 6, 3))
    assert stats.ci_label([six, six]) == ("95% CI", False)
    assert stats.ci_label([five, five]) == ("min to max: 93.75% CI", False)
    assert stats.ci_label([five, three]) == ("interval; its confidence where below 95%", True)
    assert stats.median_text(three, show_cov=True) == "2.00 (1.00 to 3.00; 75%)"
    assert stats.ci_note([five, six]) == (
        "With fewer than 6 samples no interval of the median reaches 95%: the ranges shown are min to max, which "
        "hold the true median with probability 93.75% with 5 samples; 6 or more samples give 95% intervals.")
    assert stats.ci_note([six]) == ""
    four = stats.summarize([1, 2, 3, 4])
    assert "probability 87.5% with 4 and 93.75% with 5 samples;" in stats.ci_note([five, six, four, five])


def test_holm():
    assert stats.holm([0.01, 0.04, 0.03, None]) == [pytest.approx(0.03), pytest.approx(0.06),
                                                   pytest.approx(0.06), None]


def test_benchstat_conventions():
    a, b = [100, 101, 99, 102, 98], [120, 119, 121, 118, 122]
    c = stats.compare(a, b)
    assert c.change == pytest.approx(20.0, abs=0.2) and c.p == pytest.approx(2 / 252) and c.significant
    assert 15 < c.lo < c.change < c.hi < 25
    assert stats.change_text(c).startswith("+20.") and stats.p_text(c) == "p=0.008"
    assert stats.compare(a, b) == c
    same = stats.compare(a, [100.5, 99.5, 101.5, 98.5, 102.5])
    assert not same.significant and stats.change_text(same) == "~" and stats.p_text(same).startswith("~ (p=")
    one = stats.compare([100], b)
    assert one.p is None and not one.significant and stats.p_text(one) == "n=1: no significance"
    assert stats.change_text(one) == "~" and one.change == pytest.approx(20.0)
    # Holm over a family: 4 cells at the smallest p of 5 vs 5 stay significant, 8 do not, and say why
    fam = stats.adjust([stats.compare(a, b) for _ in range(4)])
    assert all(x.significant for x in fam) and stats.out_of_reach(fam) == ""
    held = stats.adjust([stats.compare(a, b) for _ in range(8)])
    assert not any(x.significant for x in held) and all(x.held_by_holm for x in held)
    assert stats.p_text(held[0]) == "~ (p=0.063 after Holm over 8 cells; p=0.008 alone)"
    assert stats.out_of_reach(held) == (
        "With 5 samples a side and Holm's adjustment over 8 cells (p below 0.00625 needed) no change can be "
        "significant at 0.05: the smallest p these samples allow is 0.008; use 6 or more samples a side.")


def test_a_zero_baseline_is_a_sentence_not_nan():
    for a, b in (([0.0, 0.0, 0.0], [5.0, 6.0, 7.0]), ([0.0], [3.0]), ([4.0, 5.0], [0.0, 6.0])):
        c = stats.compare(a, b)
        assert not c.significant and c.p is None and "nothing measured" in c.reason, c
        assert stats.change_text(c) == "~" and "nan" not in stats.p_text(c)
    assert stats.p_text(stats.compare([0.0] * 5, [1.0] * 5)) == (
        "the baseline has a sample of 0 (nothing measured): no change in % can be given")


# ---------------------------------------------------------------- bad input: nothing runs

def sweep(*args, timeout=120):
    import subprocess
    from conftest import ROOT
    return subprocess.run([str(ROOT / "scripts/sweep"), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


GOOD = {"workloads": ["oltp_point_select"], "threads": [1], "repeats": 2,
        "options": {"time": 1, "tables": 1, "table_size": 1000, "mysql_db": "sbtest"},
        "arms": [{"name": "a"}, {"name": "b"}]}


def write_plan(tmp_path, **change):
    """GOOD with keys changed (None: removed), as a file."""
    return plantools.write_plan(tmp_path, GOOD, **change)


@pytest.mark.parametrize("change,message", [
    ({"warmup": 3}, "unknown key 'warmup' (valid: admin, analyze, arms, description, duet, options"),
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


@pytest.mark.full
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


# ---------------------------------------------------------------- on the local stack: A/A and A/B

def wait_for_prometheus(timeout=90):
    """Other tests on the shared stack stop and restart Prometheus (tools/faults): wait for it."""
    import time as _time
    import urllib.request
    from conftest import PROM
    deadline = _time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{PROM}/-/ready", timeout=5):
                return
        except OSError:
            if _time.time() > deadline:
                raise
            _time.sleep(2)


@pytest.fixture(scope="module")
def aab(stack, tmp_path_factory):
    """plans/local-aab.json made small: select_random_points on 1 table x 20,000 rows (ANALYZEd
    before every sample), 1 and 2 threads, 1 s steps, 5 samples per arm, arms a, a2 (the same) and idxcost (index lookups
    priced a million times higher: full table scans instead of 10-row lookups, about 10x the
    work per statement). The shared stack's TiDB may be restarted by other tests: a failed plan
    is resumed (at most 3 times), which is the feature under test too."""
    import json
    import time as _time
    from conftest import ROOT, fresh_db
    # an empty database: the plan prepares its table itself ("prepare": true: cleanup, then prepare,
    # once before the first sample), so a prepare here would only be dropped again
    db = fresh_db("tidb", "sbtest_compare_it")
    plan = json.loads((ROOT / "plans/local-aab.json").read_text())
    plan["workloads"] = ["select_random_points"]
    plan["options"].update(time=1, mysql_db=db)
    # the samples are fixed here: the suite's own servers and pytest are "other CPU" on a CI host,
    # and the rerun of disturbed samples is tests/test_disturbance.py's
    plan["reruns"] = 0
    tmp = tmp_path_factory.mktemp("aab")
    f = tmp / "plan.json"
    f.write_text(json.dumps(plan))
    res = tmp / "results"
    pid = f"it{int(_time.time())}"
    t0 = _time.time()
    for attempt in range(4):
        p = sweep("--plan", str(f), "--results", str(res), "--id", pid, "--no-report", timeout=900)
        if p.returncode == 0 or "k6 exited" not in p.stderr or attempt == 3:
            break
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    seconds = _time.time() - t0
    state = json.loads((res / f"plan-{pid}.json").read_text())
    wait_for_prometheus()
    reports = {}
    for cand in ("a2", "idxcost"):
        out = tmp / f"a-vs-{cand}"
        from test_report_helpers import run_report
        r = run_report("--results", str(res), "--out", str(out), f"sweep-{pid}-a", f"sweep-{pid}-{cand}")
        assert r.returncode == 0, r.stderr
        reports[cand] = (out / "report.md").read_text()
    print(f"plan {pid}: {seconds:.0f} s")
    return pid, plan, state, reports


def comparison_rows(md, workload_title):
    from test_report_helpers import md_tables_after
    tables = md_tables_after(md, f"### {workload_title} performance")
    return tables[2]


@pytest.mark.full
def test_plan_interleaves_arms_in_a_seeded_order(aab):
    from tidbbench.sweep.plan import round_order
    pid, plan, state, _ = aab
    assert state["status"] == "complete"
    rounds = [round_order(["a", "a2", "idxcost"], plan["seed"], r) for r in range(1, 6)]
    expect = [f"{pid}-{n}-select_random_points-r{r}" for r, order in enumerate(rounds, 1) for n in order]
    # a resumed plan lists each sample once, in the order it ran: the seeded one
    assert state["order"] == expect
    assert len({tuple(o) for o in rounds}) > 1, "the order does not vary between rounds"


@pytest.mark.full
def test_aa_calls_a_change_only_where_its_p_value_says_so(aab):
    """A vs A. What is certain is tested: a cell shows ~ exactly when its (Holm-adjusted) p is at
    least 0.05, the headline says so, and nothing but the run's identity differs. That every cell
    shows ~ is what happens in about 95% of runs by the definition of the level (measured: every
    cell ~, docs/report.md), so it is not asserted: a CI run must not fail by chance."""
    pid, plan, state, reports = aab
    md = reports["a2"]
    rows = comparison_rows(md, "Select Random Points")
    assert [r[0] for r in rows[1:]] == ["1", "2"]
    changed = []
    for r in rows[1:]:
        for change, pcol in ((r[5], r[6]), (r[7], r[8])):
            p = float(re.search(r"p=([\d.]+)", pcol).group(1))
            if change == "~":
                assert pcol.startswith("~ (p=") and p >= 0.05, rows
            else:
                assert pcol.startswith("p=") and p < 0.05 and re.match(r"[+-][\d.]+% \(", change), rows
                changed.append(r[0])
    if not changed:
        # the headline: every cell ~, or (as in some runs by chance) a cell whose p alone is below
        # 0.05 and is held at ~ by Holm's adjustment over the report's cells, named with both p
        head = re.search(r"Select Random Points QPS (shows no significant change: |is not significantly "
                         r"changed; )([^\n]*?)\(5 and 5 samples", md)
        assert head, md[:3000]
        if head.group(1).startswith("shows"):
            assert head.group(2) == "~ at every thread step ", head.group(0)
        else:
            held = re.findall(r"\(p=([\d.]+) alone, p=([\d.]+) over 2 cells\)", head.group(2))
            assert held and all(float(alone) < 0.05 <= float(adj) for alone, adj in held), head.group(0)
    # nothing but the run's identity differs between a and a2
    assert "Nothing recorded differs between the sides" in md, md[:3000]
    assert md.index("## What differs") < md.index("## Test purpose")


@pytest.mark.full
def test_ab_is_significant_and_names_the_variable_first(aab):
    pid, plan, state, reports = aab
    md = reports["idxcost"]
    rows = comparison_rows(md, "Select Random Points")
    # the 2-thread step: full scans of 20,000 rows instead of 10-row lookups. (The first step of
    # every run, 1 thread, starts on a plan built before the index's statistics are in TiDB's
    # cache: a full scan in every arm, so that cell may rightly show ~.)
    r = rows[2]
    assert r[0] == "2"
    base, cand = float(r[1]), float(r[3])
    assert cand < base / 3, rows
    assert r[5].startswith("-") and r[6].startswith("p="), rows  # a significant drop, with its p-value
    ch, lo, hi = (float(x) for x in re.findall(r"([+-][\d.]+)%", r[5]))
    assert lo <= ch <= hi < 0
    assert re.search(r"Select Random Points QPS is (down [\d.]+% at 1 thread \(95% CI [^)]*\), )?"
                     r"down [\d.]+% at 2 threads \(95% CI -[\d.]+% to -[\d.]+%, p=0\.0\d\d\)", md), md
    # What differs: first, before any figure; its first row is the switched variable
    sec = md[md.index("## What differs"):md.index("## Test purpose")]
    first = [line for line in sec.splitlines() if line.startswith("| ") and not line.startswith(("| What", "| ---"))][0]
    assert first == "| variable | `tidb_opt_index_lookup_cost_factor` | 1 | 1000000 |", sec
    assert sec.count("| variable |") == 1, sec
