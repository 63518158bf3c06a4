"""What each history series could have seen (issue #43, item 4; tidbbench/history/noise.py), server-free:
its spread (the CV of its current level: the runs since its last change point), its minimum
detectable change for the detection's settings (measured on the detection itself), the runs a side
that would detect 5% and 2%, and `scripts/history --check` saying when a series is too noisy to
check at the threshold asked, and what spread or runs would do."""
import json
import math
import random
import statistics

import pytest
from scipy import stats as sps

import historytools as ht
from test_history import ingest, run
from tidbbench.history import cp as historycp, noise

pytestmark = pytest.mark.fast

P = historycp.DEFAULTS


@pytest.mark.parametrize("df", [1, 2, 4, 6, 10, 32, 52, 200])
@pytest.mark.parametrize("q", [0.975, 0.9995, 0.99995])
def test_the_t_quantile_is_scipys(df, q):
    """The standard-library t quantile (the History dashboard's generator has no scipy) agrees with scipy."""
    assert noise.t_quantile(q, df) == pytest.approx(sps.t.ppf(q, df), rel=1e-9)


def test_a_series_noise_is_its_current_level():
    values = ht.step(30, 8, -0.10, cv=0.02, seed=5)
    pts = [{"run_key": f"r{i:02d}", "qps": v} for i, v in enumerate(values)]
    nz = noise.series_noise("s", "qps", pts, [30], P)
    level = values[30:]
    assert (nz.runs, nz.since) == (8, "r30")
    assert nz.cv_pct == pytest.approx(statistics.stdev(level) / statistics.fmean(level) * 100)
    t = sps.t.ppf(1 - P.max_pvalue / 2, 8 + P.min_segment - 2)
    assert nz.mdc_pct == pytest.approx(max(P.min_magnitude, t * nz.cv_pct * math.sqrt(1 / 8 + 1 / P.min_segment)))
    # without change points: the last --window runs
    long = [{"run_key": f"r{i}", "qps": 1000.0 + (i % 7)} for i in range(80)]
    nz = noise.series_noise("s", "qps", long, [], P)
    assert nz.runs == P.window and nz.since == ""
    # the floor: a quiet series' MDC is the minimum magnitude, and 2% is below it: never
    quiet = noise.series_noise("s", "qps", [{"run_key": str(i), "qps": v} for i, v in
                                            enumerate(ht.noise(30, cv=0.005, seed=1))], [], P)
    assert quiet.mdc_pct == P.min_magnitude and quiet.runs_a_side_2pct is None
    assert quiet.runs_a_side_5pct == P.min_segment


def test_the_runs_a_side_are_the_first_whose_mdc_is_that_small():
    for cv in (0.01, 0.02, 0.05):
        n = noise.runs_a_side(5.0, cv, P)
        assert 100 * noise.t_factor(n, n, P.max_pvalue) * cv <= 5.0
        if n > P.min_segment:
            assert 100 * noise.t_factor(n - 1, n - 1, P.max_pvalue) * cv > 5.0
    assert noise.runs_a_side(2.0, 0.01, P) is None  # below --min-magnitude 3%
    assert noise.runs_a_side(3.0, 0.01, historycp.Params(min_magnitude=1.0)) > P.min_segment


@pytest.mark.parametrize("cv,before", [(0.03, 30), (0.08, 20)])
def test_a_step_of_the_mdc_is_found_about_half_the_time(cv, before):
    """The MDC's meaning, measured on the detection itself (Gaussian noise, 100 series): a step of the
    MDC is found within min_segment + 1 runs in about half of them (50% and 59% here), one of 1.5 x
    the MDC in 9 of 10, one of half of it rarely."""
    m = noise.mdc_pct(cv, before, P)

    def found(mult):
        rnd, hit = random.Random(43), 0
        for _ in range(100):
            v = [rnd.gauss(1000, 1000 * cv) for _ in range(before + P.min_segment + 1)]
            v = v[:before] + [x * (1 - m * mult / 100) for x in v[before:]]
            hit += any(abs(i - before) <= 1 for i, _ in historycp.find(v))
        return hit / 100
    assert 0.35 <= found(1.0) <= 0.75
    assert found(1.5) >= 0.85
    assert found(0.5) <= 0.2


def test_changes_and_runs_state_each_series_noise(tmp_path, capsys):
    res = tmp_path / "r"
    ht.write_series(res, ht.noise(20, cv=0.02, seed=3))
    assert ingest(capsys, res)[0] == 0
    rc, out, _ = run(capsys, "--results", str(res))
    assert rc == 0
    for th in ("/2t/", "/4t/"):
        block = out.split(th, 1)[1]
        assert "noise qps: CV " in block and "noise p95_ms: CV " in block
    line = next(x for x in out.splitlines() if "noise qps: CV" in x)
    assert "over the last 20 runs; minimum detectable change" in line and "5%: " in line and \
        "2%: never, below --min-magnitude 3%" in line
    doc = json.loads(run(capsys, "--results", str(res), "--json")[1])
    nz = {(n["series"].split("/")[1], n["metric"]): n for n in doc["noise"]}
    assert set(nz) == {("2t", "qps"), ("2t", "p95_ms"), ("4t", "qps"), ("4t", "p95_ms")}
    assert nz[("2t", "qps")]["runs"] == 20 and 1.0 < nz[("2t", "qps")]["cv_pct"] < 3.0
    out = run(capsys, "runs", "--results", str(res), "--series", "/2t/")[1]
    assert "noise qps: CV " in out


def test_check_says_when_a_series_is_too_noisy_for_the_threshold(tmp_path, capsys):
    noisy, quiet = tmp_path / "noisy", tmp_path / "quiet"
    ht.write_series(noisy, ht.noise(30, cv=0.10, seed=7))
    ht.write_series(quiet, ht.noise(30, cv=0.005, seed=7))
    for f in (noisy, quiet):
        assert ingest(capsys, f)[0] == 0
    rc, out, _ = run(capsys, "--results", str(noisy), "--check", "--threshold", "5")
    assert rc == 0  # not a regression: unchecked, and said so
    lines = [x for x in out.splitlines() if x.startswith("TOO NOISY ")]
    assert len(lines) == 4, out  # qps and p95, both thread steps
    assert "too noisy to check at 5%: CV " in lines[0] and "the smallest change it can show 4 runs after a step is" \
        in lines[0] and "5% needs a CV of at most " in lines[0] and " runs on each side of a step at this CV." in lines[0]
    assert "check passed" not in out and "not checked: 4 of 4 series metric(s) too noisy to show a 5% change" in out
    doc = json.loads(run(capsys, "--results", str(noisy), "--check", "--threshold", "5", "--json")[1])
    assert len(doc["check"]["too_noisy"]) == 4 and doc["check"]["too_noisy"][0]["mdc_pct"] > 5
    # below the minimum magnitude nothing is checkable, whatever the spread
    out = run(capsys, "--results", str(quiet), "--check", "--threshold", "2")[1]
    assert "2% is below --min-magnitude 3%: lower it to check that." in out
    rc, out, _ = run(capsys, "--results", str(quiet), "--check", "--threshold", "5")
    assert rc == 0 and "TOO NOISY" not in out and "check passed" in out


# ---------------------------------------------------------------- the History dashboard's noise panel

def noise_panel():
    import dashtools
    d = dashtools.load_dashboards()["history/history.json"]
    return next(p for p in dashtools.panels(d) if p["title"] == "Noise per series")


def test_the_dashboards_noise_panel_reads_the_store_and_computes_scripts_historys_figures():
    """Static (its SQL runs against a real store in tests/test_history_dashboard.py): the committed
    History dashboard has the panel; its SQL reads only the store's columns (tidbbench/history/schema.py),
    on the History data source, filtered by the dashboard's variables as the other panels are; its
    settings are the detection's defaults and its t quantiles scipy's, so its MDC is
    noise.mdc_pct's for every level of 2 to `window` runs."""
    import re

    from tidbbench.history import schema
    p = noise_panel()
    (t,) = p["targets"]
    sql = t["rawSql"]
    assert t["datasource"] == {"type": "grafana-postgresql-datasource", "uid": "history"} and t["format"] == "table"
    cols = {"p": schema.columns("points"), "r": schema.columns("runs"), "c": ["series", "metric", "at"],
            "v": ["metric", "x"], "t": ["df", "t"]}
    for alias, col in re.findall(r"\b([prcvt])\.(\w+)", sql):
        assert col in cols[alias] + (["metric", "n", "cv", "since"] if alias == "p" else []), f"{alias}.{col}"  # nz p
    assert "FROM change_points GROUP BY series, metric" in sql and "FROM points p JOIN runs r" in sql
    assert "p.target IN ($target) AND p.workload IN ($workload) AND p.threads IN ($threads) AND p.series IN ($series)" \
        in sql
    assert f"WHERE k <= {P.window} " in sql and f"greatest({P.min_magnitude:g}, " in sql
    assert f"sqrt(1.0 / p.n + 1.0 / {P.min_segment})" in sql and f"ON t.df = p.n + {P.min_segment - 2}" in sql
    table = {int(df): float(v) for df, v in re.findall(r"\((\d+), ([\d.]+)\)", sql.split("JOIN (VALUES", 1)[1])}
    assert set(table) == set(range(P.min_segment, P.window + P.min_segment - 1))  # n = 2 .. window
    for df, v in table.items():
        assert v == pytest.approx(sps.t.ppf(1 - P.max_pvalue / 2, df), abs=1e-6)
    # the panel's formula at its table's t gives noise.mdc_pct
    for n in (2, 8, 30, P.window):
        cvp = 4.0
        sql_mdc = max(P.min_magnitude, table[n + P.min_segment - 2] * cvp * math.sqrt(1 / n + 1 / P.min_segment))
        assert sql_mdc == pytest.approx(noise.mdc_pct(cvp / 100, n, P), rel=1e-6)
    units = {o["matcher"]["options"]: o["properties"][0]["value"] for o in p["fieldConfig"]["overrides"]}
    assert units["CV"] == units["Minimum detectable change"] == "percent"
