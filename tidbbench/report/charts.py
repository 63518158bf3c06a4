"""Per workload: QPS and p95 latency against threads, every run set on one chart (PNG)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def workload_chart(path, title, series, intervals=None):
    """series: [(label, [StepFigures])]. Threads are categories, evenly spaced, as in the
    seeds' charts. intervals (repeated samples): per series {threads: (qps median, lo, hi,
    latency median, lo, hi)}; the medians are drawn with their 95% intervals as error bars."""
    threads = sorted({f.threads for _, figs in series for f in figs})
    x = {t: i for i, t in enumerate(threads)}
    fig, (ax_q, ax_l) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100)
    for i, (label, figs) in enumerate(series):
        figs = sorted(figs, key=lambda f: f.threads)
        xs = [x[f.threads] for f in figs]
        c = COLORS[i % len(COLORS)]
        iv = intervals[i] if intervals else None
        if iv:
            ts = sorted(iv)
            xs = [x[t] for t in ts]
            for ax, k in ((ax_q, 0), (ax_l, 3)):
                med = [iv[t][k] for t in ts]
                err = [[m - iv[t][k + 1] for m, t in zip(med, ts)], [iv[t][k + 2] - m for m, t in zip(med, ts)]]
                ax.errorbar(xs, med, yerr=err, marker="o", color=c, capsize=4, label=f"{label} (median, 95% CI)")
            continue
        ax_q.plot(xs, [f.qps for f in figs], marker="o", color=c, label=label)
        ax_l.plot(xs, [f.p95_ms for f in figs], marker="o", color=c, label=label)
    for ax, ylabel, sub in ((ax_q, "QPS", "QPS"), (ax_l, "95% latency (ms)", "95% latency")):
        ax.set_xticks(range(len(threads)), [str(t) for t in threads])
        ax.set_xlabel("Threads")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}: {sub}")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)
