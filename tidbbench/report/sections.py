"""The report's sections per workload (report.py's Report mixes them in): the seeds' table of
each workload and, for A vs B, its comparison table and headline sentences; the latency
distribution by sysbench's method; the resource use per step (CPU of the database and of k6,
QPS per database core)."""
import statistics

from tidbbench.report import disturb, noise, statements, stats
from tidbbench.report.fmt import md_table, num, workload_name


def _threads(xs):
    """`2, 4 threads`, `1 thread`."""
    return f"{', '.join(str(t) for t in xs)} thread{'' if list(xs) == [1] else 's'}"


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
        lines = [f"### {name} performance", ""]
        tables = []
        pl = self.pct_label(w)
        medians = []  # every side's medians: one sentence on the intervals that fall short of 95%
        for i in range(len(self.sets)):
            if self.n_samples(i, w) > 1:
                rows, sums = [], []
                cells = [(t, stats.summarize(self.values(i, w, t, "qps")), stats.summarize(self.values(i, w, t, "lat")))
                         for t in self.threads_of(i, w)]
                for _, q, lat in cells:
                    sums += [q, lat]
                ci, per_cell = stats.ci_label(sums)  # the confidence the intervals really have
                for t, q, lat in cells:
                    rows.append([str(t), stats.median_text(q, show_cov=per_cell), num(stats.median(self.values(i, w, t, "tps"))),
                                 stats.median_text(lat, show_cov=per_cell), num(stats.median(self.values(i, w, t, "avg"))),
                                 str(q.n)])
                hdr = ["Threads", f"QPS (median, {ci})", "TPS (median)", f"{pl} latency (ms, median, {ci})",
                       "avg latency (ms, median)", "samples"]
                tables.append(md_table(hdr, rows, "r" * len(hdr)))
                medians += sums
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
            lines += [tables[0], ""]
            lines += [stats.ci_note(medians), ""] if stats.ci_note(medians) else []
            dist = self.latency_distribution(self.figs[(0, w)], w) if self.n_samples(0, w) == 1 else ""
            if dist:
                lines += [dist, ""]
        else:
            for i in range(2):
                lines += [f"**{a[i]}**", "", tables[i], ""]
            lines += [stats.ci_note(medians), ""] if stats.ci_note(medians) else []
            lines.extend(self.comparison_lines(w, name, pl))
        errs = []
        for i in range(len(self.sets)):
            for f in self.figs[(i, w)]:
                if f.errors:
                    errs.append(f"{(a[i] + ', ') if self.pair else ''}{f.threads} threads: {int(f.errors)} "
                                f"({f.errors / f.seconds:.2f}/s)")
        if errs:
            lines.append(f"Ignored errors (events restarted, as sysbench does): {'; '.join(errs)}.")
            lines.append("")
        lines.extend(disturb.section(self.sets, self.labels, self.pair, w, self.figs))
        if chart:
            lines.append(f"![{name}: QPS and {pl} latency against threads]({chart})")
            lines.append("")
        lines.extend(statements.workload_lines(self.sets, self.labels, w, self.pair))  # "### <name> statements"
        return lines

    def comparison_lines(self, w, name, pl):
        """A vs B for one workload: the comparison table (per thread step, both sides' medians and the
        change with its p, for QPS and the latency percentile), its notes, what each cell could have
        detected (noise_lines) and the two headlines."""
        a = self.labels
        lines = []
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
        median_note = " (median)" if self.repeated() else ""
        lines.append(md_table(["Threads", f"{a[0]} QPS{median_note}", f"{a[0]} {pl} latency (ms){median_note}", f"{a[1]} QPS{median_note}",
                           f"{a[1]} {pl} latency (ms){median_note}", "QPS improvement", "p (QPS)",
                           f"{pl} latency change", f"p ({pl} latency)"], rows, "rrrrrrrrr"))
        lines.append("")
        lines.extend(self.table_notes(w, threads, ("qps", "lat")))
        lines.extend(self.noise_lines(w, threads, ("qps", "lat")))
        lines.append(self.headline(w, name, "qps", "QPS", threads))
        lines.append("")
        lines.append(self.headline(w, name, "lat", f"{pl} latency", threads))
        lines.append("")
        return lines

    def table_notes(self, w, threads, metrics, steps=True):
        """Sentences under a comparison table: the cells it cannot compare and why (a step one side
        did not run; with steps), and a family of cells that can never be significant with its samples."""
        lines = []
        for t in threads if steps else []:
            ran = [t in self.threads_of(i, w) for i in range(2)]
            if not all(ran):
                lines += [f"{t} thread{'s' if t != 1 else ''}: only {self.labels[ran.index(True)]} ran this step; it is not "
                      "compared.", ""]
        for m in metrics:
            warn = stats.out_of_reach(self.fam.get(m, []))
            if warn and f"> **Warning:** {warn}" not in lines:
                lines += [f"> **Warning:** {warn}", ""]
        return lines

    def metric_name(self, w, metric):
        return {"qps": "QPS", "lat": f"{self.pct_label(w)} latency", "core": "QPS per DB core"}[metric]

    def cell_noise(self, w, t, m):
        """noise.cell_noise of a cell; one that is not tested counts its metric's every cell as its family."""
        return noise.cell_noise(self.cmp[(w, t, m)], family=len(self.fam.get(m, [])))

    def noise_lines(self, w, threads, metrics):
        """What each cell of a comparison table could have seen (tidbbench/report/noise.py): both sides'
        spread, its minimum detectable change and the samples a side that would detect 5% and 2% at
        its spread; one sentence when every cell has one sample a side."""
        cells = [(t, m, self.cell_noise(w, t, m)) for t in threads for m in metrics if (w, t, m) in self.cmp]
        cells = [(t, m, cn) for t, m, cn in cells if cn is not None]
        if not cells:
            return []
        if all(cn.spread_a == cn.spread_b == "one sample" for *_, cn in cells):
            need = max((cn.need for *_, cn in cells if cn.need), default=None)
            if need is None:
                return []
            fam = max(len(self.fam.get(m, [])) for _, m, _ in cells)
            holm = f"with Holm's adjustment over {fam} cells, " if fam > 1 else ""
            return [f"Spread and minimum detectable change: one sample a side at every step, so no spread is measured "
                    f"and no change can be detected; {holm}need >= {need} samples a side.", ""]
        a = self.labels
        rows = [[str(t), self.metric_name(w, m), cn.spread_a, cn.spread_b, noise.mdc_text(cn),
                 *(noise.samples_text(cn.samples[x]) for x in noise.TARGETS)] for t, m, cn in cells]
        intro = ("What each cell could have detected: each side's spread (the CV of its samples; with 2 samples the "
                 "range over the median), the minimum detectable change (the smallest change these sample counts and "
                 f"this spread could call significant at {stats.ALPHA:g} with the exact rank test, after Holm's "
                 "adjustment over the family's cells; a change that large is called about half the time, a larger "
                 "one more often: docs/report.md) and the samples a side that would detect "
                 f"{' and '.join(f'{x:g}%' for x in noise.TARGETS)} at this spread.")
        hdr = ["Threads", "Metric", f"{a[0]} spread", f"{a[1]} spread", "minimum detectable change",
               *(f"samples a side for {x:g}%" for x in noise.TARGETS)]
        return [intro, "", md_table(hdr, rows, "rlrrrrr"), ""]

    @staticmethod
    def unseen(cells, warned=False):
        """'' or what the `~` cells could not have seen: the smallest and largest minimum detectable
        change among them, and the cells that could detect nothing (unless the family's warning, warned,
        says so already)."""
        ns = [(t, noise.cell_noise(c)) for t, c in cells]
        seen = sorted(((cn.mdc, t) for t, cn in ns if cn is not None and cn.mdc))
        flat = [t for t, cn in ns if cn is not None and cn.mdc == 0]
        blind = [(t, cn) for t, cn in ns if cn is not None and cn.mdc is None]
        out = ""
        if len(seen) == 1:
            out += f" At {_threads([seen[0][1]])} the ~ cell could not have detected a change under {seen[0][0] * 100:.2f}%."
        elif seen:
            (lo, t_lo), (hi, t_hi) = seen[0], seen[-1]
            out += (f" No ~ cell could have detected a change under {lo * 100:.2f}% (at {_threads([t_lo])}); the largest "
                    f"minimum detectable change among them is {hi * 100:.2f}% (at {_threads([t_hi])}).")
        if flat:
            out += f" At {_threads(flat)} the samples had no spread: only a change that moves every sample could have shown."
        if blind and not warned:
            out += (f" At {_threads([t for t, _ in blind])} no change of any size could have been detected ("
                    + "; ".join(sorted({noise.mdc_text(cn)[len('none: '):] for _, cn in blind})) + ").")
        return out

    def headline(self, w, name, metric, what, threads):
        """The closing sentence of a workload's comparison, from each cell's own verdict: the
        significant changes with their intervals and p-values, `~` (benchstat's "no significant
        change"), the cells held back by Holm's adjustment, the cells that cannot be tested and why
        (one sample, a sample of 0, a step only one side ran); never a change from one sample, and a
        warning when the cells' family can never reach significance; and what the `~` cells could not have
        seen (their minimum detectable changes: unseen)."""
        a = self.labels
        cs = [(t, self.cmp[(w, t, metric)]) for t in threads if (w, t, metric) in self.cmp]
        if not cs:
            return f"{a[0]} and {a[1]} have no thread step of {name} {what} in common."
        head = f"Compared with {a[0]}, {a[1]}'s {name} {what}"

        ts = _threads
        one = [(t, c) for t, c in cs if c.reason.startswith("n=")]
        zero = [(t, c) for t, c in cs if c.reason and not c.reason.startswith("n=")]
        only = [t for t in threads if (w, t, metric) not in self.cmp]
        tail = ""
        if zero:
            tail += "".join(f" At {ts([t])} no change is given: {c.reason}." for t, c in zero)
        if only:
            tail += f" Not compared at {ts(only)}: not measured on both sides."
        if one and len(one) + len(zero) == len(cs):
            # one sample a side everywhere: the seeds' figure (the mean of the per-step differences), no claim
            m = statistics.mean(c.change for _, c in one)
            need = max((self.cell_noise(w, t, metric).need or 0 for t, _ in one), default=0)
            blind = f" With one sample a side no change of any size can be detected: need >= {need} samples a side." \
                if need else ""
            return (f"{head} cannot be said to change ({one[0][1].reason}): the single samples differ by {m:+.2f}% "
                    "(the mean of the per-step differences), which one sample a side cannot tell from noise; "
                    f"run `scripts/sweep --repeats N` or a plan for intervals and p-values.{blind}{tail}")
        tested = [(t, c) for t, c in cs if not c.reason]
        sig = [(t, c) for t, c in tested if c.significant]
        held = [(t, c) for t, c in tested if c.held_by_holm]
        same = [t for t, c in tested if not c.significant and not c.held_by_holm]
        ns = {(c.a.n, c.b.n) for _, c in tested}
        if len(ns) == 1:
            na, nb = ns.pop()
            n_text = f"{na} and {nb} samples"
        else:
            n_text = "samples " + ", ".join(f"{c.a.n} and {c.b.n} at {t}" for t, c in tested)
        fam = tested[0][1].family if tested else 1
        warn = stats.out_of_reach(self.fam.get(metric, []))
        warn = f" Warning: {warn}" if warn else ""
        warn += self.unseen([(t, c) for t, c in tested if not c.significant], warned=bool(warn))
        for t, c in one:
            tail += (f" At {ts([t])} one side has a single sample ({c.reason}): the samples' medians differ by "
                     f"{c.change:+.2f}%, which cannot be told from noise.")
        if not sig and not held:
            if not tested:
                return f"{head} cannot be tested at any thread step.{tail}"
            where = "every thread step" if len(same) == len(cs) else ts(same)
            holm = f" after Holm's adjustment over the report's {fam} cells" if fam > 1 else ""
            return (f"{head} shows no significant change: ~ at {where} ({n_text}, Mann-Whitney U, "
                    f"p >= {stats.ALPHA}{holm}).{warn}{tail}")
        parts = []
        for t, c in sig:
            word = "up" if c.change > 0 else "down"
            parts.append(f"{word} {abs(c.change):.2f}% at {t} thread{'s' if t != 1 else ''} "
                         f"(95% CI {stats.interval_text(c)}, {stats.fmt_p(c.p_adj)})")
        rest = ""
        if held:
            rest += "; ~ after Holm's adjustment at " + ", ".join(
                f"{ts([t])} ({stats.fmt_p(c.p)} alone, {stats.fmt_p(c.p_adj)} over {c.family} cells)" for t, c in held)
        if same:
            rest += f"; ~ at {ts(same)}"
        body = ", ".join(parts) if parts else "not significantly changed"
        # the p shown is Holm's, the interval the cell's own (stats.py): said when they differ
        how = ("Hodges-Lehmann change and its interval from the exact Mann-Whitney U test" if fam == 1 else
               "Hodges-Lehmann change; each interval is the cell's own 95% interval, not adjusted, from the exact "
               f"Mann-Whitney U test; each p is adjusted by Holm over {fam} cells")
        return f"{head} is {body}{rest} ({n_text}, {how}).{warn}{tail}"

    # -- files

    def resource_pair_lines(self, w, threads, cell):
        """A vs B resources of one workload: the sides' database CPU, QPS per database core (compared)
        and k6 CPU per thread step, medians with repeated samples; cell formats a figure."""
        a = self.labels
        lines = []
        def median_cell(i, t, attr):
            fs = [f for figs in self.samples[(i, w)] for f in figs if f.threads == t]
            vs = [getattr(f, attr) for f in fs if getattr(f, attr) is not None]
            short = fs and all(f.k6_short if attr == "k6_cores" else f.db_short for f in fs)
            return cell(statistics.median(vs), 1 if attr == "qps_per_core" else 2) if vs else \
                cell(None, short=short)
        rows = []
        for t in threads:
            cc = self.cmp.get((w, t, "core"))
            rows.append([str(t), median_cell(0, t, "db_cores"), median_cell(0, t, "qps_per_core"),
                         median_cell(1, t, "db_cores"), median_cell(1, t, "qps_per_core"),
                         stats.change_text(cc) if cc else "", stats.p_text(cc) if cc else "",
                         median_cell(0, t, "k6_cores"), median_cell(1, t, "k6_cores")])
        median_note = " (median)" if self.repeated() else ""
        lines.append(md_table(["Threads", f"{a[0]} DB CPU (cores){median_note}", f"{a[0]} QPS per DB core{median_note}",
                           f"{a[1]} DB CPU (cores){median_note}", f"{a[1]} QPS per DB core{median_note}", "QPS per core change",
                           "p (QPS per core)", f"{a[0]} k6 CPU (cores){median_note}", f"{a[1]} k6 CPU (cores){median_note}"],
                          rows, "rrrrrrrrr"))
        lines.append("")
        if any((w, t, "core") in self.cmp for t in threads):
            lines.extend(self.table_notes(w, threads, ("core",), steps=False))
            lines.extend(self.noise_lines(w, threads, ("core",)))
            lines.append(self.headline(w, workload_name(w), "core", "QPS per database core", threads))
            lines.append("")
        return lines

    def resource_section(self):
        """What each step cost the database and the load generator: CPU cores used over the measured
        window, QPS per database core, k6's CPU against its cores (and the change of QPS per core
        for two runs)."""
        a = self.labels
        lines = ["## Resource use per step", ""]
        lines.append("CPU cores used on average over each step's measured window: the counters' increase over the window "
                 "divided by its seconds. Database: tidb-server + TiKV + PD (`process_cpu_seconds_total` of jobs "
                 "tidb, tikv, pd) for TiDB, mysqld/mariadbd (`namedprocess_namegroup_cpu_seconds_total`, "
                 "process-exporter) for MySQL and MariaDB. Load generator: k6's own CPU "
                 "(`k6_oltp_client_cpu_seconds_total`, user + system). QPS per DB core = QPS / database cores.")
        lines.append("")

        def cell(x, d=2, short=False):
            return ("window too short" if short else "—") if x is None else num(x, d)
        from tidbbench.report.prom import MIN_WINDOW_INTERVALS, min_windows_s, scrape_interval_s
        min_db, min_k6 = min_windows_s()
        shorts = set()
        missing = set()
        for w in self.workloads:
            lines.append(f"### {workload_name(w)} resources")
            lines.append("")
            sides = [{f.threads: f for f in self.figs[(i, w)]} for i in range(len(self.sets))]
            threads = sorted(set().union(*sides))
            for i, side in enumerate(sides):
                for f in side.values():
                    if f.db_short or f.k6_short:
                        shorts.add("database" if f.db_short else "load generator")
                    if f.db_cores is None and not f.db_short:
                        missing.add((a[i], "database"))
                    if f.k6_cores is None and not f.k6_short:
                        missing.add((a[i], "load generator"))
            if not self.pair:
                run = self.sets[0].by_workload()[w]
                from tidbbench.report.loadgen import usable_cores  # the cores k6 could use (GOMAXPROCS when recorded)
                cores = usable_cores(run.manifest.get("load_generator") or {})
                rows = []
                for t in threads:
                    f = sides[0][t]
                    share = f"{f.k6_cores / cores * 100:.0f}%" if f.k6_cores is not None and cores else "—"
                    rows.append([str(t), num(f.qps), cell(f.db_cores, short=f.db_short),
                                 cell(f.qps_per_core, 1, short=f.db_short), cell(f.k6_cores, short=f.k6_short), share])
                lines.append(md_table(["Threads", "QPS", "DB CPU (cores)", "QPS per DB core", "k6 CPU (cores)",
                                   "k6 CPU of its cores"], rows, "rrrrrr"))
                lines.append("")
            else:
                lines.extend(self.resource_pair_lines(w, threads, cell))
        if shorts:
            lines.append(f"\"window too short\": the step's measured window is shorter than the counters can resolve, so no "
                     "figure is given. CPU counters are read at their samples: the database's at Prometheus' scrapes, every "
                     f"{scrape_interval_s():g} s (prometheus/prometheus.yml), k6's at its pushes, every "
                     f"{min_k6 / MIN_WINDOW_INTERVALS:g} s (k6/contract.json). Over a window shorter than "
                     f"{MIN_WINDOW_INTERVALS:g} such intervals "
                     f"({min_db:g} s for the database, {min_k6:g} s for k6), most, or all, of the time between the two "
                     "samples used can lie before the step; use longer steps (`time`) for resource figures.")
            lines.append("")
        for who, what in sorted(missing):
            lines.append(f"Not recorded for {who}: the {what}'s CPU (Prometheus has no such series for the run; "
                     + ("the database's process metrics are scraped by the stack's Prometheus jobs tidb/tikv/pd "
                        "and process" if what == "database" else
                        "k6 writes k6_oltp_client_cpu_seconds_total with every run of this stack's oltp.js") + ").")
            lines.append("")
        from tidbbench.report.loadgen import SATURATED
        lines.append(f"k6 at or above {SATURATED * 100:.0f}% of its usable cores (the host's, or GOMAXPROCS when recorded) "
                 "in a step is warned about under Load generator: the load generator, not the database, may then "
                 "have set the pace.")
        lines.append("")
        return lines
