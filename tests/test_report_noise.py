"""What each comparison cell could have seen (issue #43, item 4; tidbbench/report/noise.py),
server-free: the spread of each side (CV, or the range with 2 samples, said which), the minimum
detectable change from the exact rank test's critical value (its calibration measured on the test
itself), the samples a side that would detect 5% and 2%, "need >= N samples a side" for a cell that
can never reach p < alpha, and the report's table and headline saying what could not be seen."""
import math
import random

import pytest

from test_report_figures import report, sentence
from test_report_helpers import md_tables_after
from tidbbench.report import noise, stats

pytestmark = pytest.mark.fast


def test_the_spread_is_the_cv_or_with_two_samples_the_range_and_says_which():
    assert noise.spread([90.0, 100.0, 110.0]) == ("CV", pytest.approx(0.1))
    assert noise.spread([100.0, 104.0]) == ("range", pytest.approx(4 / 102))
    assert noise.spread([100.0]) == (None, None)
    assert noise.spread_text([90.0, 100.0, 110.0]) == "CV 10.00%"
    assert noise.spread_text([100.0, 104.0]) == "range 3.92% (2 samples)"
    assert noise.spread_text([100.0]) == "one sample"


@pytest.mark.parametrize("n1,n2,u", [(3, 3, None), (4, 4, 0), (5, 5, 2), (6, 6, 5), (8, 8, 13), (10, 10, 23),
                                     (3, 20, 8), (25, 25, 211)])
def test_the_critical_u_is_the_exact_tests(n1, n2, u):
    """The largest U the exact test calls significant at 0.05 (the published two-sided tables for
    equal arms); checked on samples with that U and one more against stats.mann_whitney_u."""
    assert noise.u_crit(n1, n2, 0.05) == u
    if u is None:
        return
    for k, significant in ((u, True), (u + 1, False)):
        x, y = with_u(n1, n2, k)
        assert stats.mann_whitney_u(x, y)[0] == k
        p = stats.mann_whitney_u(x, y)[1]
        assert (p < 0.05) == significant, (k, p)


def with_u(n1, n2, k):
    """Samples of n1 and n2 distinct values, y above x but for k pairs (x's U is k)."""
    y = [n1 + j for j in range(n2)]
    x = []
    for i in range(n1):
        c = min(k, n2)  # this x lies above y's c smallest
        k -= c
        x.append((n1 + c - 0.5 if c else -i) + i * 1e-3)
    return x, y


def test_beyond_the_exact_range_the_critical_u_is_the_normal_approximations():
    assert stats.exact_cost(40, 40) > stats.EXACT_COST
    u = noise.u_crit(40, 40, 0.05)
    mu, sd = 800, math.sqrt(40 * 40 * 81 / 12)
    assert math.erfc((mu - u - 0.5) / sd / math.sqrt(2)) < 0.05 <= math.erfc((mu - u - 1.5) / sd / math.sqrt(2))


@pytest.mark.parametrize("n", [4, 5, 8])
def test_a_change_of_the_mdc_is_found_about_half_the_time(n):
    """The MDC's meaning, measured on the report's own test: log-normal samples with the spread
    sigma, the candidate shifted by the MDC, are called significant in about half of 400 trials
    (40% to 70%: 51-55% in 1,000); at half the MDC rarely (about 16%), at twice it mostly (97-99%)."""
    sigma = 0.05
    mdc = noise.mdc(n, n, sigma, 0.05)
    rnd = random.Random(n)

    def power(change):
        hits = 0
        for _ in range(400):
            a = [math.exp(rnd.gauss(0, sigma)) for _ in range(n)]
            b = [math.exp(rnd.gauss(math.log1p(change), sigma)) for _ in range(n)]
            hits += stats.mann_whitney_u(a, b)[1] < 0.05
        return hits / 400
    assert 0.40 <= power(mdc) <= 0.70
    assert power(math.expm1(math.log1p(mdc) / 2)) <= 0.3
    assert power(math.expm1(2 * math.log1p(mdc))) >= 0.85


def test_the_samples_a_side_for_5_and_2_percent_are_the_first_whose_mdc_is_that_small():
    sigma = 0.04
    for target in (0.05, 0.02):
        n = noise.samples_a_side(target, sigma, 0.05)
        assert noise.mdc(n, n, sigma, 0.05) <= target < noise.mdc(n - 1, n - 1, sigma, 0.05)
    assert noise.samples_a_side(0.02, 0.04, 0.05) > noise.samples_a_side(0.05, 0.04, 0.05)
    assert noise.samples_a_side(0.0001, 0.5, 0.05) is None  # more than stats.SAMPLES_MAX


def test_a_cell_states_its_spread_mdc_and_samples_for_5_and_2_percent():
    a = [1000.0, 1030.0, 980.0, 1010.0, 995.0, 1020.0]
    b = [1010.0, 990.0, 1040.0, 1000.0, 1025.0, 985.0]
    c = stats.compare(a, b)
    cn = noise.cell_noise(c)
    assert (cn.spread_a, cn.spread_b) == (noise.spread_text(a), noise.spread_text(b))
    sigma = noise.log_sd(a, b)
    assert cn.mdc == pytest.approx(noise.mdc(6, 6, sigma, 0.05))
    assert cn.samples == {5.0: noise.samples_a_side(0.05, sigma, 0.05), 2.0: noise.samples_a_side(0.02, sigma, 0.05)}
    assert cn.need is None
    # in a family, Holm's first step (alpha / cells) is the level it must reach
    stats.adjust([c, stats.compare(a, b), stats.compare(a, b)])
    assert noise.cell_noise(c).mdc == pytest.approx(noise.mdc(6, 6, sigma, 0.05 / 3))


def test_a_cell_that_can_never_reach_alpha_says_how_many_samples_it_needs():
    c = stats.compare([1000.0, 1010.0, 1005.0], [2000.0, 2010.0, 2005.0])  # min p 0.100
    cn = noise.cell_noise(c)
    assert cn.mdc is None and cn.need == 4 and noise.mdc_text(cn) == "none: need >= 4 samples a side"
    one = stats.compare([1000.0], [1100.0])
    cn = noise.cell_noise(one)
    assert cn.spread_a == "one sample" and cn.need == 4 and cn.samples == {5.0: None, 2.0: None}
    # no spread: any change that moves every sample (the values' own ties do not hold a shift back)
    same = stats.compare([5.0, 5.0, 5.0, 5.0], [5.0, 5.0, 5.0, 5.0])
    cn = noise.cell_noise(same)
    assert cn.mdc == 0 and noise.mdc_text(cn) == "any change that moves every sample (no spread)"
    assert cn.samples == {5.0: 4, 2.0: 4}
    # nine of ten values in one bucket cannot reach 0.05 as they are (stats.out_of_reach says so), but a shift can
    tied = stats.compare([1.0] * 5, [1.0] * 4 + [1.0181])
    assert not tied.reachable and noise.cell_noise(tied).mdc > 0


def test_the_report_shows_each_cells_noise_and_the_headline_what_it_could_not_see():
    rnd = random.Random(4)
    a = [{2: (1000 * (1 + rnd.gauss(0, 0.02)), 2.0), 4: (1500 * (1 + rnd.gauss(0, 0.10)), 2.0)} for _ in range(6)]
    b = [{2: (1000 * (1 + rnd.gauss(0, 0.02)), 2.0), 4: (1500 * (1 + rnd.gauss(0, 0.10)), 2.0)} for _ in range(6)]
    r = report(a, b)
    lines = r.noise_lines("oltp_point_select", [2, 4], ("qps",))
    [t] = md_tables_after("\n".join(["### x", ""] + lines), "### x")
    assert t[0][:5] == ["Threads", "Metric", "TiDB v1 [a] spread", "TiDB v1 [b] spread",
                               "minimum detectable change"]
    by = {row[0]: row for row in t[1:]}
    for th in (2, 4):
        cn = noise.cell_noise(r.cmp[("oltp_point_select", th, "qps")])
        assert by[str(th)][2:] == [cn.spread_a, cn.spread_b, noise.mdc_text(cn), noise.samples_text(cn.samples[5.0]),
                                   noise.samples_text(cn.samples[2.0])]
    text, _ = sentence(r)
    qn = {th: noise.cell_noise(r.cmp[("oltp_point_select", th, "qps")]).mdc for th in (2, 4)}
    assert "~ at every thread step" in text
    assert (f"No ~ cell could have detected a change under {min(qn.values()) * 100:.2f}% (at 2 threads); the largest "
            f"minimum detectable change among them is {max(qn.values()) * 100:.2f}% (at 4 threads).") in text, text


def test_one_sample_a_side_says_what_it_would_need():
    r = report([{2: (1000.0, 2.0), 4: (1500.0, 2.0)}], [{2: (1100.0, 2.0), 4: (1400.0, 2.0)}])
    lines = r.noise_lines("oltp_point_select", [2, 4], ("qps", "lat"))
    assert lines[0] == ("Spread and minimum detectable change: one sample a side at every step, so no spread is "
                        "measured and no change can be detected; with Holm's adjustment over 2 cells, need >= 5 "
                        "samples a side.")
    text, _ = sentence(r)
    assert "no change of any size can be detected: need >= 5 samples a side" in text


def test_a_cell_without_spread_is_said_so_in_the_headline_not_as_under_0_percent():
    rnd = random.Random(4)
    a = [{2: (1000 * (1 + rnd.gauss(0, 0.02)), 2.0 * (1 + rnd.gauss(0, 0.05))), 4: (1500.0 + k, 2.0)} for k in range(5)]
    b = [{2: (1000 * (1 + rnd.gauss(0, 0.02)), 2.0 * (1 + rnd.gauss(0, 0.05))), 4: (1500.0 + k, 2.0)} for k in range(5)]
    text, _ = sentence(report(a, b), "lat", "95% latency")
    assert "under 0.00%" not in text, text
    assert "At 4 threads the samples had no spread: only a change that moves every sample could have shown." in text
    assert "At 2 threads the ~ cell could not have detected a change under " in text
