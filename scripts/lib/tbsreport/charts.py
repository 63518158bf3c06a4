"""Per workload: QPS and p95 latency against threads, every run set on one chart (PNG)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def workload_chart(path, title, series):
    """series: [(label, [StepFigures])]. Threads are categories, evenly spaced, as in the
    seeds' charts."""
    threads = sorted({f.threads for _, figs in series for f in figs})
    x = {t: i for i, t in enumerate(threads)}
    fig, (ax_q, ax_l) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100)
    for i, (label, figs) in enumerate(series):
        figs = sorted(figs, key=lambda f: f.threads)
        xs = [x[f.threads] for f in figs]
        c = COLORS[i % len(COLORS)]
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
