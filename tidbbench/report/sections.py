"""The report's sections per workload (report.py's Report mixes them in): the seeds' table of
each workload and, for A vs B, its comparison table and headline sentences; the latency
distribution by sysbench's method; the resource use per step (CPU of the database and of k6,
QPS per database core)."""
import statistics

from tidbbench.report import disturb, statements, stats
from tidbbench.report.fmt import md_table, num, workload_name


class WorkloadSections:
    def latency_distribution(self, figs, w):
        """Per step min, p50, the run's percentile, p99 and max (ms) by sysbench's method, from
        the manifests (k6's per-step sysbench histograms); '' for manifests without them."""
        rows = []
        for f in figs:
            lat = f.k6.get("latency_ms") or {}
            if lat.get("pct_value") is None:
                return ""
            rows.append([str(f.threads), num(lat.get("min")), num(lat.get("p50")), num(lat.get("pct_value")),
                         num(lat.get("p99")), num(lat.get("max"))])
        pl = self.pct_label(w)
        return ("Latency by sysbench's method (ms):\n\n" +
                md_table(["Threads", "min", "50%", pl, "99%", "max"], rows, "rrrrrr"))

    def pct_label(self, w):
        """'95%' (or the run's `percentile`) for the latency columns of workload w."""
        pcts = {f.pct for i in range(len(self.sets)) for f in self.figs.get((i, w), [])}
        p = pcts.pop() if len(pcts) == 1 else 95
        return f"{p:g}%"

    def workload_section(self, w, chart):
        a = self.labels
        name = workload_name(w)
        L = [f"### {name} performance", ""]
        tables = []
        pl = self.pct_label(w)
        for i in range(len(self.sets)):
            if self.n_samples(i, w) > 1:
                rows = []
                for t in self.threads_of(i, w):
                    q, lat = stats.summarize(self.values(i, w, t, "qps")), stats.summarize(self.values(i, w, t, "lat"))
                    rows.append([str(t), stats.median_text(q), num(stats.median(self.values(i, w, t, "tps"))),
                                 stats.median_text(lat), num(stats.median(self.values(i, w, t, "avg"))), str(q.n)])
                hdr = ["Threads", "QPS (median, 95% CI)", "TPS (median)", f"{pl} latency (ms, median, 95% CI)",
                       "avg latency (ms, median)", "samples"]
                tables.append(md_table(hdr, rows, "r" * len(hdr)))
                continue
            rows = [[str(f.threads), num(f.qps), num(f.tps), num(f.lat_ms), num(f.avg_ms)]
                    for f in self.figs[(i, w)]]
            hdr = ["Threads", "QPS", "TPS", f"{pl} latency (ms)", "avg latency (ms)"]
            if any(f.k6.get("response_latency_ms") for f in self.figs[(i, w)]):
                # rate mode: the response time, from when each event was due (queue time included)
                for f, row in zip(self.figs[(i, w)], rows):
                    r = f.k6.get("response_latency_ms") or {}
                    rate = f.k6.get("rate") or {}
                    row += [num(rate.get("requested")) if rate else "—",
                            num(r.get("pct_value")) if r.get("pct_value") is not None else "—",
                            "no" if rate.get("backlog_at_end") or rate.get("dropped") else "yes"]
                hdr += ["rate (/s)", f"{pl} response time (ms)", "rate kept"]
            tables.append(md_table(hdr, rows, "r" * len(hdr)))
        if not self.pair:
            L += [tables[0], ""]
            dist = self.latency_distribution(self.figs[(0, w)], w) if self.n_samples(0, w) == 1 else ""
            if dist:
                L += [dist, ""]
        else:
            for i in range(2):
                L += [f"**{a[i]}**", "", tables[i], ""]
            threads = [t for t in self.threads_of(0, w) if t in self.threads_of(1, w)]
            threads += [t for t in self.threads_of(0, w) + self.threads_of(1, w) if t not in threads]
            threads = sorted(set(threads))
            rows = []
            for t in threads:
                va, vb = self.values(0, w, t, "qps"), self.values(1, w, t, "qps")
                la, lb = self.values(0, w, t, "lat"), self.values(1, w, t, "lat")
                cq, cl = self.cmp.get((w, t, "qps")), self.cmp.get((w, t, "lat"))
                rows.append([str(t), num(stats.median(va)) if va else "—", num(stats.median(la)) if la else "—",
                             num(stats.median(vb)) if vb else "—", num(stats.median(lb)) if lb else "—",
                             stats.change_text(cq) if cq else "", stats.p_text(cq) if cq else "",
                             stats.change_text(cl) if cl else "", stats.p_text(cl) if cl else ""])
            med = " (median)" if self.repeated() else ""
            L.append(md_table(["Threads", f"{a[0]} QPS{med}", f"{a[0]} {pl} latency (ms){med}", f"{a[1]} QPS{med}",
                               f"{a[1]} {pl} latency (ms){med}", "QPS improvement", "p (QPS)",
                               f"{pl} latency change", f"p ({pl} latency)"], rows, "rrrrrrrrr"))
            L.append("")
            L.append(self.headline(w, name, "qps", "QPS", threads))
            L.append("")
            L.append(self.headline(w, name, "lat", f"{pl} latency", threads))
            L.append("")
        errs = []
        for i in range(len(self.sets)):
            for f in self.figs[(i, w)]:
                if f.errors:
                    errs.append(f"{(a[i] + ', ') if self.pair else ''}{f.threads} threads: {int(f.errors)} "
                                f"({f.errors / f.seconds:.2f}/s)")
        if errs:
            L.append(f"Ignored errors (events restarted, as sysbench does): {'; '.join(errs)}.")
            L.append("")
        L.extend(disturb.section(self.sets, self.labels, self.pair, w, self.figs))
        if chart:
            L.append(f"![{name}: QPS and 95% latency against threads]({chart})")
            L.append("")
        L.extend(statements.workload_lines(self.sets, self.labels, w, self.pair))  # "### <name> statements"
        return L

    def headline(self, w, name, metric, what, threads):
        """The closing sentence of a workload's comparison: the changes that are significant,
        with their intervals and p-values; `~` (benchstat's "no significant change") otherwise;
        never a change from one sample."""
        a = self.labels
        cs = [(t, self.cmp[(w, t, metric)]) for t in threads if (w, t, metric) in self.cmp]
        if not cs:
            return f"{a[0]} and {a[1]} have no thread step of {name} in common."
        head = f"Compared with {a[0]}, {a[1]}'s {name} {what}"
        one = [c for _, c in cs if c.reason]
        if one:
            m = statistics.mean(c.change for _, c in cs)
            return (f"{head} cannot be said to change ({one[0].reason}): the single samples differ by {m:+.2f}% "
                    "(the mean of the per-step differences), which one sample a side cannot tell from noise; "
                    "run `scripts/sweep --repeats N` or a plan for intervals and p-values.")
        sig = [(t, c) for t, c in cs if c.significant]
        na, nb = cs[0][1].a.n, cs[0][1].b.n
        if not sig:
            cells = len([c for c in self.cmp if c[2] == metric])
            weak = ""
            if stats.min_p(na, nb) * cells >= stats.ALPHA:
                weak = (f" With {na} and {nb} samples and {cells} cells no change could reach significance: "
                        "use more repeats (5 a side for up to 6 cells).")
            return (f"{head} shows no significant change: ~ at every thread step ({na} and {nb} samples, "
                    f"Mann-Whitney U, p >= {stats.ALPHA} after Holm's adjustment over the report's cells).{weak}")
        parts = []
        for t, c in sig:
            word = "up" if c.change > 0 else "down"
            parts.append(f"{word} {abs(c.change):.2f}% at {t} thread{'s' if t != 1 else ''} "
                         f"(95% CI {c.lo:+.2f}% to {c.hi:+.2f}%, {stats.fmt_p(c.p_adj)})")
        rest = [str(t) for t, c in cs if not c.significant]
        tail = f"; ~ at {', '.join(rest)} thread{'' if rest == ['1'] else 's'}" if rest else ""
        return f"{head} is {', '.join(parts)}{tail} ({na} and {nb} samples, medians, Mann-Whitney U)."

    # -- files

    def resource_section(self):
        """What each step cost the database and the load generator: CPU cores used over the measured
        window, QPS per database core, k6's CPU against its cores (and the change of QPS per core
        for two runs)."""
        a = self.labels
        L = ["## Resource use per step", ""]
        L.append("CPU cores used on average over each step's measured window: the counters' increase over the window "
                 "divided by its seconds. Database: tidb-server + TiKV + PD (`process_cpu_seconds_total` of jobs "
                 "tidb, tikv, pd) for TiDB, mysqld/mariadbd (`namedprocess_namegroup_cpu_seconds_total`, "
                 "process-exporter) for MySQL and MariaDB. Load generator: k6's own CPU "
                 "(`k6_oltp_client_cpu_seconds_total`, user + system). QPS per DB core = QPS / database cores.")
        L.append("")

        def c(x, d=2):
            return "—" if x is None else num(x, d)
        missing = set()
        for w in self.workloads:
            L.append(f"### {workload_name(w)} resources")
            L.append("")
            sides = [{f.threads: f for f in self.figs[(i, w)]} for i in range(len(self.sets))]
            threads = sorted(set().union(*sides))
            for i, side in enumerate(sides):
                for f in side.values():
                    if f.db_cores is None:
                        missing.add((a[i], "database"))
                    if f.k6_cores is None:
                        missing.add((a[i], "load generator"))
            if not self.pair:
                run = self.sets[0].by_workload()[w]
                from tidbbench.report.loadgen import usable_cores  # the cores k6 could use (GOMAXPROCS when recorded)
                cores = usable_cores(run.manifest.get("load_generator") or {})
                rows = []
                for t in threads:
                    f = sides[0][t]
                    share = f"{f.k6_cores / cores * 100:.0f}%" if f.k6_cores is not None and cores else "—"
                    rows.append([str(t), num(f.qps), c(f.db_cores), c(f.qps_per_core, 1), c(f.k6_cores), share])
                L.append(md_table(["Threads", "QPS", "DB CPU (cores)", "QPS per DB core", "k6 CPU (cores)",
                                   "k6 CPU of its cores"], rows, "rrrrrr"))
                L.append("")
            else:
                def med(i, t, attr):
                    vs = [getattr(f, attr) for figs in self.samples[(i, w)] for f in figs
                          if f.threads == t and getattr(f, attr) is not None]
                    return c(statistics.median(vs), 1 if attr == "qps_per_core" else 2) if vs else "—"
                rows = []
                for t in threads:
                    cc = self.cmp.get((w, t, "core"))
                    rows.append([str(t), med(0, t, "db_cores"), med(0, t, "qps_per_core"),
                                 med(1, t, "db_cores"), med(1, t, "qps_per_core"),
                                 stats.change_text(cc) if cc else "", stats.p_text(cc) if cc else "",
                                 med(0, t, "k6_cores"), med(1, t, "k6_cores")])
                m_ = " (median)" if self.repeated() else ""
                L.append(md_table(["Threads", f"{a[0]} DB CPU (cores){m_}", f"{a[0]} QPS per DB core{m_}",
                                   f"{a[1]} DB CPU (cores){m_}", f"{a[1]} QPS per DB core{m_}", "QPS per core change",
                                   "p (QPS per core)", f"{a[0]} k6 CPU (cores){m_}", f"{a[1]} k6 CPU (cores){m_}"],
                                  rows, "rrrrrrrrr"))
                L.append("")
                if any((w, t, "core") in self.cmp for t in threads):
                    L.append(self.headline(w, workload_name(w), "core", "QPS per database core", threads))
                    L.append("")
        for who, what in sorted(missing):
            L.append(f"Not recorded for {who}: the {what}'s CPU (Prometheus has no such series for the run; "
                     + ("the database's process metrics are scraped by the stack's Prometheus jobs tidb/tikv/pd "
                        "and process" if what == "database" else
                        "k6 writes k6_oltp_client_cpu_seconds_total with every run of this stack's oltp.js") + ").")
            L.append("")
        from tidbbench.report.loadgen import SATURATED
        L.append(f"k6 at or above {SATURATED * 100:.0f}% of its usable cores (the host's, or GOMAXPROCS when recorded) "
                 "in a step is warned about under Load generator: the load generator, not the database, may then "
                 "have set the pace.")
        L.append("")
        return L
