"""Per workload: QPS and the latency percentile against threads, every run set on one chart (PNG).

The chart draws what it is given: Report.chart_series hands it the tables' own figures (the
latency is the tables' percentile by sysbench's method, not Prometheus' histogram_quantile)."""
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tidbbench.report import stats  # noqa: E402

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
HEADROOM = 1.15  # the y axes end 15% above the highest point (or error bar) drawn


@dataclass
class Point:
    """One thread step of one run set: the figures its table shows (medians with repeated samples;
    lo/hi the medians' intervals and cov their real confidence, None with one sample)."""
    qps: float
    lat: float
    qps_lo: float = None
    qps_hi: float = None
    lat_lo: float = None
    lat_hi: float = None
    cov: float = None


def workload_chart(path, title, series, pct_label="95%", throughput="QPS"):
    """series: [(label, {threads: Point})]. Threads are categories, evenly spaced, as in the seeds'
    charts; medians with intervals are drawn with error bars whose legend states their confidence."""
    threads = sorted({t for _, pts in series for t in pts})
    x = {t: i for i, t in enumerate(threads)}
    fig, (ax_q, ax_l) = plt.subplots(1, 2, figsize=(11, 4.6), dpi=100)
    tops = {ax_q: 0.0, ax_l: 0.0}
    handles = []
    for i, (label, pts) in enumerate(series):
        ts = sorted(pts)
        if not ts:
            continue
        c = COLORS[i % len(COLORS)]
        covs = [pts[t].cov for t in ts if pts[t].cov is not None]
        # error bars of the run sets side by side at each step, not on top of each other
        dodge = (i - (len(series) - 1) / 2) * 0.06 if covs else 0.0
        xs = [x[t] + dodge for t in ts]
        for ax, k in ((ax_q, "qps"), (ax_l, "lat")):
            med = [getattr(pts[t], k) for t in ts]
            if covs:
                lo = [getattr(pts[t], k + "_lo") if getattr(pts[t], k + "_lo") is not None else m
                      for t, m in zip(ts, med)]
                hi = [getattr(pts[t], k + "_hi") if getattr(pts[t], k + "_hi") is not None else m
                      for t, m in zip(ts, med)]
                conf = stats.coverage_text(min(covs))
                if min(covs) >= stats.CONFIDENCE:
                    what = "95% CI"
                elif len(set(covs)) == 1:
                    what = f"min to max, {conf} CI"
                else:
                    what = f"intervals of at least {conf} confidence"
                h = ax.errorbar(xs, med, yerr=[[m - v for m, v in zip(med, lo)], [v - m for m, v in zip(med, hi)]],
                                marker="o", color=c, capsize=4, label=f"{label} (median, {what})")
                tops[ax] = max(tops[ax], *hi)
            else:
                h, = ax.plot(xs, med, marker="o", color=c, label=label)
                tops[ax] = max(tops[ax], *med)
        handles.append(h)
    for ax, ylabel, sub in ((ax_q, throughput, throughput), (ax_l, f"{pct_label} latency (ms)", f"{pct_label} latency")):
        ax.set_xticks(range(len(threads)), [str(t) for t in threads])
        ax.set_xlabel("Threads")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}: {sub}")
        ax.set_ylim(bottom=0, top=(tops[ax] * HEADROOM) or 1)
        ax.grid(True, alpha=0.3)
    # one legend for both panels, below them: never on a line
    fig.legend(handles=handles, loc="lower center", ncol=max(1, len(handles)), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)
