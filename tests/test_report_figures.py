"""The report's figures and sentences (issue #28), server-free: one owner per figure (the chart is
given the tables' own figures: checked on the golden fixtures), the chart's axes and legend, the
closing sentences built from each cell's own verdict (n=1 steps, unequal samples, a step one side
did not run, a zero baseline, a family too small to ever be significant), and resource figures
from windows too short for the counters' sampling."""
import math
import random

import pytest

from test_report_helpers import GOLDEN, md_tables_after, prometheus_replay
from tidbbench.report import charts, prom
from tidbbench.report.fmt import num
from tidbbench.report.prom import StepFigures
from tidbbench.report.report import Report

pytestmark = pytest.mark.fast

LABELS = ["TiDB v1 [a]", "TiDB v1 [b]"]


# ---------------------------------------------------------------- one p95: chart = table

def test_the_chart_shows_the_tables_figures_on_the_golden_fixtures(tmp_path, monkeypatch):
    """The golden comparison: what the report hands the chart module is, step by step, the QPS and
    the 95% latency (sysbench's, from the manifests) its tables print, not Prometheus' p95."""
    from tidbbench.report.manifest import resolve
    given = {}
    draw = charts.workload_chart

    def spy(path, title, series, pct_label="95%", **kw):
        given[title] = series
        return draw(path, title, series, pct_label, **kw)
    monkeypatch.setattr(charts, "workload_chart", spy)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1795400000")
    monkeypatch.setenv("TBS_STACK_VERSION", "golden (fixed for the test)")
    with prometheus_replay() as p:
        sets = [resolve(GOLDEN / "results", s) for s in ("sweep-dev-tidb", "sweep-dev-maria")]
        rep = Report(sets, prom.Prometheus(p.url))
        rep.collect()
        out = rep.write(tmp_path / "cmp")
    md = (out / "report.md").read_text()
    checked = 0
    differs = 0
    for title in ("Point Select", "Read Write"):
        side_tables = md_tables_after(md, f"### {title} performance")[:2]
        assert [lab for lab, _ in given[title]] == rep.labels
        for (label, pts), table in zip(given[title], side_tables):
            assert table[0][:4] == ["Threads", "QPS", "TPS", "95% latency (ms)"]
            for row in table[1:]:
                pt = pts[int(row[0])]
                assert (num(pt.qps), num(pt.lat)) == (row[1], row[3]), (title, label, row)
                checked += 1
    # and Prometheus' p95 (the cross-check's column) is not what the chart shows where they differ
    for (i, w), figs in rep.figs.items():
        for f in figs:
            differs += num(f.p95_ms) != num(f.lat_ms)
    assert checked == 8 and differs >= 1  # the golden has steps whose two p95s differ (e.g. 135.25 vs 132.49)


def test_the_qps_axis_has_headroom_and_the_legend_is_off_the_lines(tmp_path, monkeypatch):
    figs = []
    monkeypatch.setattr(charts.plt, "close", lambda fig: figs.append(fig))
    series = [(LABELS[0], {1: charts.Point(100.0, 2.0), 2: charts.Point(180.0, 2.5)}),
              (LABELS[1], {1: charts.Point(110.0, 1.9, 100.0, 120.0, 1.8, 2.0, 0.9375),
                           2: charts.Point(200.0, 2.4, 190.0, 230.0, 2.2, 2.6, 0.9375)})]
    charts.workload_chart(tmp_path / "c.png", "Point Select", series)
    fig = figs[0]
    ax_q, ax_l = fig.axes
    assert ax_q.get_ylim()[1] >= 230 * 1.15 - 1e-9 and ax_l.get_ylim()[1] >= 2.6 * 1.15 - 1e-9
    assert not ax_q.get_legend() and not ax_l.get_legend()
    [leg] = fig.legends
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    box = leg.get_window_extent(r)
    assert box.y1 < min(ax.get_window_extent(r).y0 for ax in (ax_q, ax_l)), "the legend overlaps the plots"
    texts = [t.get_text() for t in leg.get_texts()]
    assert texts == [LABELS[0], f"{LABELS[1]} (median, min to max, 93.75% CI)"]


# ---------------------------------------------------------------- sentences from each cell's verdict

def fig(threads, qps, lat, db_cores=None):
    return StepFigures(threads=threads, seconds=10, queries=qps * 10, transactions=qps, errors=0, qps=qps, tps=qps,
                       p95_ms=lat, avg_ms=lat / 2, count=qps, bucket_factor=1.09, pct_ms=lat, db_cores=db_cores)


def report(samples_a, samples_b, w="oltp_point_select"):
    """A Report over made-up samples: samples_x = [{threads: (qps, lat)} per sample]."""
    r = Report.__new__(Report)
    r.sets, r.pair, r.labels, r.workloads = [None, None], True, LABELS, [w]
    r.samples = {(i, w): [[fig(t, q, lat) for t, (q, lat) in s.items()] for s in side]
                 for i, side in enumerate((samples_a, samples_b))}
    r.figs = {k: v[0] for k, v in r.samples.items()}
    r.compute_stats()
    return r


def sentence(r, metric="qps", what="QPS"):
    w = r.workloads[0]
    threads = sorted({t for i in range(2) for t in r.threads_of(i, w)})
    return r.headline(w, "Point Select", metric, what, threads), r.table_notes(w, threads, (metric,))


def test_a_single_sample_step_does_not_take_the_whole_headline():
    rnd = random.Random(1)
    a = [{2: (1000 + rnd.random(), 2.0), 4: (1500 + rnd.random(), 2.0), 8: (1700.0, 3.0)} for _ in range(5)]
    b = [{2: (1200 + rnd.random(), 2.0), 4: (1500 + rnd.random(), 2.0)} for _ in range(5)]
    a[0][1] = (500.0, 1.0)  # 1 thread: one sample a side
    b[0][1] = (520.0, 1.0)
    text, notes = sentence(report(a, b))
    assert text.startswith("Compared with TiDB v1 [a], TiDB v1 [b]'s Point Select QPS is up 20.0")
    assert "at 2 threads (95% CI +" in text and "; ~ at 4 threads" in text
    assert "At 1 thread one side has a single sample (n=1: no significance): the samples' medians differ by +4.00%" \
        in text
    assert "Not compared at 8 threads" in text and "cannot be said to change" not in text
    assert "8 threads: only TiDB v1 [a] ran this step; it is not compared." in notes
    assert "mean" not in text


def test_unequal_samples_and_a_step_one_side_did_not_run():
    a = [{2: (1000.0 + k, 2.0)} for k in range(5)]
    b = [{2: (1100.0 + k, 2.0), 4: (900.0, 2.0)} for k in range(4)]
    text, notes = sentence(report(a, b))
    assert "(5 and 4 samples," in text and "Not compared at 4 threads" in text
    assert notes[0] == "4 threads: only TiDB v1 [b] ran this step; it is not compared."


def test_a_zero_baseline_prints_a_sentence_not_nan():
    a = [{2: (0.0, 0.0), 4: (1000.0 + k, 2.0)} for k in range(5)]
    b = [{2: (1000.0 + k, 2.0), 4: (1010.0 + k, 2.0)} for k in range(5)]
    r = report(a, b)
    for metric in ("qps", "lat"):
        text, _ = sentence(r, metric, "QPS")
        assert "nan" not in text and "At 2 threads no change is given: the baseline has a sample of 0 (nothing " \
            "measured): no change in % can be given." in text, text
    # every cell zero, one sample a side: still a sentence
    r = report([{2: (0.0, 0.0)}], [{2: (5.0, 1.0)}])
    text, _ = sentence(r)
    assert "nan" not in text and "no change is given" in text and "cannot be tested" in text


def test_a_family_that_cannot_reach_significance_is_warned_about():
    a = [{t: (1000.0 + k, 2.0) for t in (1, 2, 4)} for k in range(3)]
    b = [{t: (2000.0 + k, 2.0) for t in (1, 2, 4)} for k in range(3)]
    text, notes = sentence(report(a, b))
    assert "shows no significant change" in text
    warn = ("With 3 samples a side and Holm's adjustment over 3 cells (p below 0.0167 needed) no change can be "
            "significant at 0.05: the smallest p these samples allow is 0.100; use 5 or more samples a side.")
    assert f"Warning: {warn}" in text and f"> **Warning:** {warn}" in notes


def test_holm_held_cells_say_so():
    # 5 a side, 8 cells, each alone at p = 0.008: significant alone, ~ after Holm
    a = [{t: (1000.0 + k, 2.0) for t in range(1, 9)} for k in range(5)]
    b = [{t: (2000.0 + k, 2.0) for t in range(1, 9)} for k in range(5)]
    text, _ = sentence(report(a, b))
    assert "~ after Holm's adjustment at 1 thread (p=0.008 alone, p=0.063 over 8 cells)" in text


# ---------------------------------------------------------------- resources: windows too short

class Recorder:
    url = "http://replay"

    def __init__(self):
        self.queries = []

    def query(self, expr, at):
        self.queries.append(expr)
        return [{"value": [0, "0.6"]}]


class Run:
    testid = "t1"
    manifest = {"product": "tidb"}


@pytest.mark.parametrize("seconds,db,k6", [(3, None, 0.6), (7, None, 0.6), (7.5, 0.6, 0.6), (2, None, None)])
def test_a_window_too_short_for_the_counters_gives_no_figure(seconds, db, k6):
    assert prom.scrape_interval_s() == 5.0  # prometheus/prometheus.yml
    assert prom.min_windows_s() == (7.5, 3.0)
    f = fig(4, 13133.0, 2.0)
    f.k6 = {"window": {"measure_start": 1_000_000, "measure_end": 1_000_000 + int(seconds * 1000)}}
    rec = Recorder()
    prom.step_resources(rec, Run(), f)
    assert (f.db_cores, f.k6_cores) == (db, k6)
    assert f.db_short == (db is None) and f.k6_short == (k6 is None)
    assert len(rec.queries) == (db is not None) + (k6 is not None)  # no query for what cannot be measured
    assert f.qps_per_core is None or math.isclose(f.qps_per_core, 13133.0 / 0.6)


def test_the_resource_table_says_window_too_short():
    r = report([{2: (1000.0, 2.0)}], [{2: (1100.0, 2.0)}])
    for figs in r.samples.values():
        for f in figs[0]:
            f.db_short, f.k6_cores = True, 0.3
    lines = r.resource_section()
    md = "\n".join(lines)
    [t] = md_tables_after(md, "### Point Select resources")
    assert t[1][1:5] == ["window too short"] * 4, t
    assert "Over a window shorter than 1.5 such intervals (7.5 s for the database, 3 s for k6)" in md
    assert "Not recorded for" not in md
