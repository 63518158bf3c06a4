"""The TPC-C report: k6/tpcc.js's runs (docs/tpcc.md) in the layout of PingCAP's TPC-C reports
(test overview, environment, the test plan with its commands, then Threads | A tpmC | B tpmC |
change and the sentence "Compared with A, the TPC-C performance of B is improved by X%"), with
the OLTP report's machinery (tidbbench/report/report.py's Report, which this subclasses): What
differs, the statements, the host's disturbance, the samples' statistics (the exact rank test on
tpmC per sample, as OLTP on QPS), the chart, the HTML.

The figures are the run manifest's (k6's own count over each step's measured window, what
`go-tpc tpcc run` prints): tpmC, tpmTotal and per transaction type its count, errors, TPM, share
and latency twice (our sysbench histogram, `latency_ms`, and go-tpc's HdrHistogram, `gotpc_ms`).
Prometheus gives the cross-check (tpmC from k6_tpcc_transactions_total, New-Order's 95% latency
from the native histogram k6_tpcc_latency_seconds) and the database's CPU."""
import statistics

from tidbbench import ReportError, commands, contract, sbhist
from tidbbench.report import stats
from tidbbench.report.fmt import md_table, num, utc
from tidbbench.report.manifest import is_tpcc
from tidbbench.report.prom import DEFAULT_BUCKET_FACTOR, QPS_TOLERANCE, _scalar, step_query_params, step_resources
from tidbbench.report.report import Report, generated_at

# go-tpc's five transactions, in its order, as PingCAP's reports name them
TXNS = {"new_order": "New-Order", "payment": "Payment", "order_status": "Order-Status", "delivery": "Delivery",
        "stock_level": "Stock-Level"}
TPMC_TOLERANCE = QPS_TOLERANCE  # tpmC from Prometheus vs the manifest's
# New-Order's 95% latency is cross-checked from this many New-Orders in the step on: below, the two
# methods' ranks (sysbench's nearest rank, Prometheus' interpolation at 0.95 x count) can fall on
# neighbouring transactions, and with few transactions those lie more than a bucket apart
P95_MIN_COUNT = 200
# k6/tpcc.js's series (docs/CONTRACT.md), on the step's selector and range as prom.py's OLTP queries
NEW_ORDERS = 'sum(max_over_time(k6_tpcc_transactions_total{{{sel},txn="new_order"}}[{rng}]))'
NEW_ORDER_HIST = 'sum(last_over_time(k6_tpcc_latency_seconds{{{sel},txn="new_order"}}[{rng}]))'
NEW_ORDER_P95 = "histogram_quantile(0.95, " + NEW_ORDER_HIST + ")"
# always in a rebuilt run command, in this order; then every other option tpcc.js reads that differs
# from its default (not the sysbench workloads' own: groups oltp and rand, and what tpcc.js refuses or ignores)
RUN_FIRST = [*commands.TARGET, "warehouses", "parts", "threads", "time", "warmup_time"]
NOT_READ = {k for k, v in contract.options().items() if v.get("group") in ("oltp", "rand")} | {
    "workload", "rate", "report_interval", "mysql_ignore_errors", "mysql_storage_engine", "create_table_options",
    "preset", "native_loop", "threads_per_vu", "tpcc_command", "profile", "tidb_status_addr"}


def check_sets(sets):
    """Whether the report's run sets are TPC-C runs; ReportError (exit 2) when TPC-C and sysbench
    runs are mixed: their figures (tpmC, QPS) do not compare."""
    kinds = [is_tpcc(s) for s in sets]
    if not any(kinds):
        return False
    for s in sets:
        other = sorted({r.workload for r in s.runs if r.workload != contract.TPCC})
        if other:
            raise ReportError(f"'{s.id}' holds sysbench runs ({', '.join(other)})"
                              + (" beside TPC-C runs" if is_tpcc(s) else "")
                              + ": a TPC-C run (k6/tpcc.js, tpmC) is reported and compared only with TPC-C runs; "
                              "report each on its own", code=2)
    return True


class TpccFigures:
    """One step of a TPC-C run: the manifest's figures, and what Prometheus says of them."""

    def __init__(self, step, testid):
        w = step["window"]
        self.k6, self.testid = step, testid
        self.threads = int(step["threads"])
        self.seconds = step.get("elapsed_s") or (w["measure_end"] - w["measure_start"]) / 1000.0
        self.tpmc = float(step.get("tpmC") or 0.0)
        self.tpm_total = float(step.get("tpmTotal") or 0.0)
        self.transactions = step.get("transactions", 0)
        self.errors = step.get("errors", 0)
        self.pct = 95
        self.bucket_factor = DEFAULT_BUCKET_FACTOR
        self.prom_tpmc = self.prom_p95_ms = None
        self.db_cores = self.k6_cores = None
        self.db_short = self.k6_short = False
        self.source = "manifest"
        cpu = step.get("client_cpu_s")
        if cpu is not None and self.seconds:  # k6's own CPU between the window's marks: exact
            self.k6_cores = cpu / self.seconds

    def txn(self, name):
        return (self.k6.get("txns") or {}).get(name) or {}

    @property
    def lat_ms(self):
        """New-Order's 95% latency by sysbench's method (our histogram): the comparison's latency."""
        return (self.txn("new_order").get("latency_ms") or {}).get("p95")

    @property
    def avg_ms(self):
        return (self.txn("new_order").get("latency_ms") or {}).get("avg")

    @property
    def tpmc_per_core(self):
        return self.tpmc / self.db_cores if self.db_cores else None


def prom_figures(prom, run, f):
    """Fills f's Prometheus side: tpmC and New-Order's 95% latency over the step's window, the
    histogram's bucket factor and the database's CPU (prom.step_resources)."""
    sel, at, rng = step_query_params(run.testid, f.k6)
    r = f"{rng}ms"
    n = _scalar(prom.query(NEW_ORDERS.format(sel=sel, rng=r), at))
    if n is None:
        return
    f.prom_tpmc = n * 60 / f.seconds if f.seconds else None
    hist = prom.query(NEW_ORDER_HIST.format(sel=sel, rng=r), at)
    if hist and "histogram" in hist[0]:
        ratios = [float(b[2]) / float(b[1]) for b in hist[0]["histogram"][1].get("buckets", [])
                  if float(b[1]) > 0 and float(b[2]) > 0]
        f.bucket_factor = max(ratios) if ratios else f.bucket_factor
    p95 = _scalar(prom.query(NEW_ORDER_P95.format(sel=sel, rng=r), at))
    f.prom_p95_ms = p95 * 1000.0 if p95 is not None else None
    k6_cores = f.k6_cores
    step_resources(prom, run, f)  # the database's CPU; k6's comes from the manifest (tpcc.js pushes none)
    f.k6_cores, f.k6_short = k6_cores, False


def crosscheck(run, figs):
    """Warnings where Prometheus and the manifest disagree: tpmC by more than 2%, New-Order's 95%
    latency by more than the two histograms' bucket widths; and steps Prometheus has no data for."""
    out = []
    for f in figs:
        where = f"TPC-C (testid {run.testid}), {many(f.threads, 'thread')}"
        if f.prom_tpmc is None:
            out.append(f"{where}: Prometheus has no k6_tpcc_transactions_total for the step, so its tpmC is not "
                       "cross-checked and its database CPU not given")
            continue
        if f.tpmc:
            d = (f.prom_tpmc - f.tpmc) / f.tpmc
            if abs(d) > TPMC_TOLERANCE:
                out.append(f"{where}: tpmC from Prometheus {f.prom_tpmc:.2f} differs from k6's summary {f.tpmc:.2f} "
                           f"by {d * 100:+.2f}% (over {TPMC_TOLERANCE * 100:g}%)")
        if f.lat_ms and f.prom_p95_ms and (f.txn("new_order").get("count") or 0) >= P95_MIN_COUNT:
            ratio = max(f.lat_ms, f.prom_p95_ms) / min(f.lat_ms, f.prom_p95_ms)
            if ratio > f.bucket_factor * sbhist.FACTOR * (1 + 1e-9):
                out.append(f"{where}: New-Order 95% latency from Prometheus {f.prom_p95_ms:.2f} ms differs from k6's "
                           f"summary {f.lat_ms:.2f} ms by a factor of {ratio:.3f} (over the histograms' bucket "
                           f"resolution {f.bucket_factor * sbhist.FACTOR:.4f})")
    return out


def many(n, word):
    """'1 warehouse', '2 threads', '1 / 4 warehouses' (n: a number or the text of one or more)."""
    return f"{n} {word}{'' if str(n) == '1' else 's'}"


def median_or_none(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def cell(x, d=2):
    return "—" if x is None else num(x, d)


class TpccReport(Report):
    METRICS = ("tpmc", "lat")
    CHART = ("tpmc", "lat")
    THROUGHPUT = "tpmC"
    TITLE = "TPC-C Performance Test Report"

    def __init__(self, sets, prom, grafana_url=None):
        super().__init__(sets, prom, grafana_url=None)  # no Grafana snapshots: the dashboards' panels are OLTP's
        self.grafana_asked = bool(grafana_url)

    def run_figures(self, run, sample):
        figs = [TpccFigures(s, run.testid) for s in run.steps]
        for f in figs:
            prom_figures(self.prom, run, f)
        if not sample and figs and all(f.prom_tpmc is None for f in figs):
            w = run.steps[0]["window"]
            raise ReportError(
                f"Prometheus at {self.prom.url} has no data for testid '{run.testid}' in its time range "
                f"{utc(run.manifest.get('run_start') or w['measure_start'])} to "
                f"{utc(run.manifest.get('run_end') or run.steps[-1]['window']['measure_end'])} (series "
                f"k6_tpcc_transactions_total{{testid=\"{run.testid}\",warmup=\"false\"}}); was it run with remote "
                "write to this Prometheus (scripts/k6), and is the data still retained?", code=3)
        return figs

    crosscheck = staticmethod(crosscheck)

    def values(self, i, w, t, metric):
        """The samples' values of one cell: "tpmc", "tpmtotal", "lat" (New-Order's 95%) or "avg"."""
        get = {"tpmc": lambda f: f.tpmc, "tpmtotal": lambda f: f.tpm_total, "lat": lambda f: f.lat_ms,
               "avg": lambda f: f.avg_ms, "core": lambda f: f.tpmc_per_core}[metric]
        return [get(f) for figs in self.samples[(i, w)] for f in figs if f.threads == t and get(f) is not None]

    def metric_name(self, w, metric):
        return {"tpmc": "tpmC", "lat": "New-Order 95% latency"}[metric]

    def pct_label(self, w):
        return "New-Order 95%"

    def gotpc_version(self):
        vs = sorted({str((r.manifest.get("tpcc") or {}).get("gotpc_version") or "?") for s in self.sets for r in s.runs})
        return " / ".join(vs)

    # -- markdown, section by section
    def markdown(self, chart_paths, snaps, snap_reason, web_dashboards=()):
        lines = self.title_lines() + self.overview_lines() + self.runs_lines()
        lines += self.target_lines() + self.loadgen_lines() + self.software_lines()
        lines += self.plan_lines() + self.tpcc_results_lines(chart_paths)
        lines += self.tpcc_resource_lines() + getattr(self, "profile_lines", [])
        lines += self.tpcc_crosscheck_lines() + self.dashboard_lines(web_dashboards)
        lines += ["---", "", f"Generated by `scripts/report` on {generated_at()}.", ""]
        return "\n".join(lines)

    def overview_lines(self):
        a = self.labels
        wh = self.option_text("warehouses")
        if self.pair:
            what = (f"This test compares the TPC-C performance of {a[1]} (candidate) with {a[0]} (baseline) in the "
                    f"OLTP scenario, thread step by thread step, on {many(wh, 'warehouse')}.")
            summary = self.performance_sentence()
            what += f" {summary}" if summary else ""
        else:
            what = f"This test measures the TPC-C performance of {a[0]} in the OLTP scenario on {many(wh, 'warehouse')}."
        return ["## Test overview", "", what,
                f"The load comes from tidb-bench-stack: k6 driving go-tpc {self.gotpc_version()}'s own TPC-C workload "
                "(the tool behind `tiup bench tpcc`: its schema, data, five transactions and their mix; k6/tpcc.js), "
                "its figures recorded in the run manifests and in Prometheus.", ""]

    def option_text(self, k, i=None):
        sets = self.sets if i is None else [self.sets[i]]
        vals = sorted({commands.value_text(r.options.get(k, commands.DEFAULTS.get(k, ""))) for s in sets for r in s.runs})
        return " / ".join(vals)

    def software_rows(self):
        methods = sorted({str(r.manifest.get("latency_method") or "") for s in self.sets for r in s.runs} - {""})
        return [
            ["tidb-bench-stack", self.stack_text()],
            ["Prometheus", self.prom_version or "unknown"],
            ["Workload", f"go-tpc {self.gotpc_version()}'s tpcc package, linked into our k6 and driven by k6/tpcc.js"],
            ["Latency", "; ".join(methods) or "not recorded"],
        ]

    def plan_lines(self):
        """PingCAP's "Test plan": the parameters, then the commands (prepare, run, check), per side."""
        rows = [[k, *self.per_set(lambda s, k=v: " / ".join(sorted({commands.value_text(r.options.get(k, "")) for r in s.runs})))]
                for k, v in (("Warehouses", "warehouses"), ("Partitions (parts)", "parts"), ("Threads", "threads"),
                             ("Measured time per step (s)", "time"), ("Warm-up per step (s)", "warmup_time"),
                             ("Keying and think time (wait)", "wait"), ("ignore_error", "ignore_error"),
                             ("Database", "mysql_db"))]
        extra = []
        for s in self.sets:
            for r in s.runs:
                extra += [k for k, v in r.options.items() if k not in RUN_FIRST and k not in NOT_READ and k not in extra
                          and k not in commands.NEVER and k not in ("wait", "ignore_error")
                          and not commands.is_default(k, v) and not (k == "version" and not v)]
        rows += [[k, *self.per_set(lambda s, k=k: " / ".join(sorted({commands.value_text(r.options.get(k, ""))
                                                                      for r in s.runs})))] for k in extra]
        if any((s.sweep or {}).get("set_global") for s in self.sets):  # a plan's arms: PingCAP's global variables
            rows.append(["SET GLOBAL before each sample", *self.per_set(lambda s: ", ".join(
                f"{k}={v}" for k, v in ((s.sweep or {}).get("set_global") or {}).items()) or "—")])
        if any((s.sweep or {}).get("scaled") for s in self.sets):
            rows.append(["Scaled", *self.per_set(lambda s: (s.sweep or {}).get("scaled") or "—")])
        lines = ["## Test plan", "", md_table(self.cols(), rows), "",
                 "tpmC is the New-Order transactions committed per minute of each step's measured window (warm-up "
                 "excluded), go-tpc's NEW_ORDER TPM; tpmTotal counts all five transactions. The commands, rebuilt from "
                 "the manifests (`scripts/k6` adds the password from `.stack/k6.env`; for another server add "
                 "`-e mysql_password_file=FILE`: a password in an argument shows in `ps`):", ""]
        for i, s in enumerate(self.sets):
            if self.pair:
                lines += [f"### {('Baseline', 'Candidate')[i]}: {self.labels[i]}", ""]
            lines += self.tpcc_command_lines(i, s)
        return lines

    def tpcc_command_lines(self, i, s):
        first = s.first.options
        target = [(k, first[k]) for k in commands.TARGET if k in first]
        shape = [("warehouses", first.get("warehouses"))] + (
            [("parts", first["parts"])] if not commands.is_default("parts", first.get("parts")) else [])
        prep_threads = (s.sweep or {}).get("prepare_threads")
        prepare = commands.k6_command([("tpcc_command", "prepare"), *target, *shape,
                                       *([("threads", prep_threads)] if prep_threads else [])], contract.TPCC_SCRIPT)
        lines = [f"1. Load {many(first.get('warehouses'), 'warehouse')} (go-tpc's `tpcc prepare`, then its prepare check):", "",
                 "```sh", prepare, "```", ""]
        if s.sweep and s.sweep.get("command"):
            import shlex
            lines += [f"2. Run the plan (`{s.id}`), which ran each sample as:", "", "```sh",
                      " ".join(shlex.quote(x) for x in s.sweep["command"]), "```", ""]
        else:
            lines += ["2. Run one step per thread count (go-tpc's `tpcc run`):", ""]
        run = s.by_workload()[contract.TPCC]
        pairs = [(k, run.options[k]) for k in RUN_FIRST if k in run.options and
                 not (k == "parts" and commands.is_default(k, run.options[k]))]
        pairs += [(k, v) for k, v in run.options.items() if k not in RUN_FIRST and k not in NOT_READ
                  and k not in commands.NEVER and not commands.is_default(k, v) and not (k == "version" and not v)]
        lines += ["```sh", commands.k6_command(pairs, contract.TPCC_SCRIPT), "```", "",
                  "3. Check the data afterwards (go-tpc's `tpcc check`; optional):", "", "```sh",
                  commands.k6_command([("tpcc_command", "check"), *target, *shape], contract.TPCC_SCRIPT), "```", ""]
        return lines

    # -- results
    def common_threads(self, w):
        return sorted(set(self.threads_of(0, w)) | (set(self.threads_of(1, w)) if self.pair else set()))

    def performance_sentence(self, w=contract.TPCC):
        """PingCAP's sentence: the mean of the per-step tpmC changes (of the medians with samples)."""
        changes = []
        for t in self.common_threads(w):
            va, vb = self.values(0, w, t, "tpmc"), self.values(1, w, t, "tpmc")
            if va and vb and stats.median(va):
                changes.append((stats.median(vb) - stats.median(va)) / stats.median(va) * 100)
        if not changes:
            return ""
        m = statistics.mean(changes)
        word = "improved" if m >= 0 else "reduced"
        return (f"Compared with {self.labels[0]}, the TPC-C performance of {self.labels[1]} is {word} by {abs(m):.2f}% "
                f"(the mean of the per-step tpmC changes{' of the medians' if self.repeated() else ''}, as PingCAP's "
                "reports give it; whether it is a change or noise is the test below).")

    def side_table(self, i, w):
        """One side's steps: tpmC, tpmTotal, New-Order's latency, errors; medians with intervals with samples."""
        if self.n_samples(i, w) > 1:
            cells = [(t, stats.summarize(self.values(i, w, t, "tpmc")), stats.summarize(self.values(i, w, t, "lat")))
                     for t in self.threads_of(i, w)]
            ci, per_cell = stats.ci_label([x for _, q, lat in cells for x in (q, lat)])
            rows = [[str(t), stats.median_text(q, show_cov=per_cell), cell(median_or_none(self.values(i, w, t, "tpmtotal"))),
                     stats.median_text(lat, show_cov=per_cell), cell(median_or_none(self.values(i, w, t, "avg"))), str(q.n)]
                    for t, q, lat in cells]
            hdr = ["Threads", f"tpmC (median, {ci})", "tpmTotal (median)", f"New-Order 95% latency (ms, median, {ci})",
                   "New-Order avg latency (ms, median)", "samples"]
            return md_table(hdr, rows, "r" * len(hdr)), [x for _, q, lat in cells for x in (q, lat)]
        rows = [[str(f.threads), num(f.tpmc), num(f.tpm_total), cell(f.lat_ms), cell(f.avg_ms), str(int(f.errors)),
                 str(f.k6.get("threads_stopped", 0))] for f in self.figs[(i, w)]]
        hdr = ["Threads", "tpmC", "tpmTotal", "New-Order 95% latency (ms)", "New-Order avg latency (ms)", "errors",
               "threads stopped"]
        return md_table(hdr, rows, "r" * len(hdr)), []

    def comparison_table(self, w):
        a = self.labels
        rows = []
        for t in self.common_threads(w):
            va, vb = self.values(0, w, t, "tpmc"), self.values(1, w, t, "tpmc")
            la, lb = self.values(0, w, t, "lat"), self.values(1, w, t, "lat")
            cq, cl = self.cmp.get((w, t, "tpmc")), self.cmp.get((w, t, "lat"))
            rows.append([str(t), cell(median_or_none(va)), cell(median_or_none(vb)),
                         stats.change_text(cq) if cq else "", stats.p_text(cq) if cq else "",
                         cell(median_or_none(la)), cell(median_or_none(lb)),
                         stats.change_text(cl) if cl else "", stats.p_text(cl) if cl else ""])
        m = " (median)" if self.repeated() else ""
        return md_table(["Threads", f"{a[0]} tpmC{m}", f"{a[1]} tpmC{m}", "tpmC change (%)", "p (tpmC)",
                         f"{a[0]} New-Order 95% (ms){m}", f"{a[1]} New-Order 95% (ms){m}", "95% latency change",
                         "p (95% latency)"], rows, "rrrrrrrrr")

    def tpcc_results_lines(self, chart_paths):
        w = contract.TPCC
        lines = ["## Test results", "",
                 "Per thread step, from the run manifests (k6's own count over the step's measured window, as go-tpc "
                 "counts): tpmC and tpmTotal, and New-Order's latency by sysbench's method (our histogram of "
                 f"{sbhist.BUCKETS:,} log buckets, nearest rank). Prometheus' figures are the cross-check below.", ""]
        if self.warnings:
            lines += [f"> **Warning:** {len(self.warnings)} figure(s) or step(s) disagree with or are missing from "
                      "Prometheus; see [Cross-check against Prometheus](#cross-check-against-prometheus).", ""]
        sums = []
        for i in range(len(self.sets)):
            table, s = self.side_table(i, w)
            sums += s
            lines += ([f"**{self.labels[i]}**", ""] if self.pair else []) + [table, ""]
        lines += [stats.ci_note(sums), ""] if stats.ci_note(sums) else []
        if self.pair:
            threads = self.common_threads(w)
            lines += ["### tpmC comparison", "", self.comparison_table(w), ""]
            lines += self.table_notes(w, threads, self.METRICS) + self.noise_lines(w, threads, self.METRICS)
            lines += [self.performance_sentence(), "", self.headline(w, "TPC-C", "tpmc", "tpmC", threads), "",
                      self.headline(w, "TPC-C", "lat", "New-Order 95% latency", threads), ""]
        lines += self.stopped_lines(w)
        from tidbbench.report import disturb, statements
        lines += disturb.section(self.sets, self.labels, self.pair, w, self.figs)
        if chart_paths.get(w):
            lines += [f"![TPC-C: tpmC and New-Order 95% latency against threads]({chart_paths[w]})", ""]
        lines += self.latency_lines(w)
        return lines + statements.workload_lines(self.sets, self.labels, w, self.pair)

    def stopped_lines(self, w):
        """A sentence for the steps whose threads did not all connect or were stopped by an error."""
        notes = []
        for i, s in enumerate(self.sets):
            for r in s.samples().get(w, []):
                for st in r.steps:
                    who = f"{self.labels[i]}, " if self.pair else ""
                    if st.get("threads_stopped"):
                        notes.append(f"{who}testid {r.testid}, {many(st['threads'], 'thread')}: {st['threads_stopped']} thread(s) "
                                     "stopped by an error (go-tpc's rule without ignore_error; the run's log names it)")
                    if st.get("vus_ready") is not None and st["vus_ready"] < st["threads"]:
                        notes.append(f"{who}testid {r.testid}, {many(st['threads'], 'thread')}: only {st['vus_ready']} connected")
        return [f"**Threads lost:** {'; '.join(notes)}.", ""] if notes else []

    def txn_rows(self, i, w, t, names):
        steps = [f.k6 for figs in self.samples[(i, w)] for f in figs if f.threads == t]
        rows = []
        for name in names:
            xs = [(s.get("txns") or {}).get(name) for s in steps]
            xs = [x for x in xs if x]
            if not xs:
                continue

            def med(part, key):
                return median_or_none([(x.get(part) or {}).get(key) if part else x.get(key) for x in xs])
            share = med(None, "share")
            rows.append([TXNS.get(name, name), cell(med(None, "count"), 0), cell(med(None, "errors"), 0),
                         cell(med(None, "tpm"), 1), "—" if share is None else f"{share * 100:.1f}%",
                         cell(med("latency_ms", "avg")), cell(med("latency_ms", "p95")), cell(med("latency_ms", "p99")),
                         cell(med("gotpc_ms", "avg")), cell(med("gotpc_ms", "p95")), cell(med("gotpc_ms", "p99"))])
        return rows

    def latency_lines(self, w):
        """Per side and step, every transaction type: count, errors, TPM, share and latency by both methods."""
        names = []
        for s in self.sets:
            for r in s.runs:
                names += [n for n in (r.manifest.get("tpcc") or {}).get("txns") or TXNS if n not in names]
        lines = ["### Per-transaction latency", "",
                 "Per transaction type (ms): avg, 95% and 99% by our histogram (sysbench's method, as every OLTP step), "
                 "then go-tpc's own (HdrHistogram, 1 ms to 16 s, one significant figure: what `go-tpc tpcc run` "
                 "prints). Both time the transaction alone (no keying or think time)"
                 + ("; with several samples each figure is the median of the samples'." if self.repeated() else "."), ""]
        hdr = ["Transaction", "count", "errors", "TPM", "share", "avg", "95%", "99%", "go-tpc avg", "go-tpc 95%",
               "go-tpc 99%"]
        for i in range(len(self.sets)):
            for t in self.threads_of(i, w):
                who = f"{self.labels[i]}, " if self.pair else ""
                n = self.n_samples(i, w)
                lines += [f"**{who}{many(t, 'thread')}**" + (f" ({n} samples)" if n > 1 else ""), "",
                          md_table(hdr, self.txn_rows(i, w, t, names), "lrrrrrrrrrr"), ""]
        return lines

    # -- resources, the cross-check, the dashboards
    def tpcc_resource_lines(self):
        w = contract.TPCC
        lines = ["## Resource use per step", "",
                 "CPU cores used on average over each step's measured window. Database: as in the OLTP report "
                 "(`process_cpu_seconds_total` of tidb, tikv and pd for TiDB; process-exporter's mysqld/mariadbd), "
                 "from Prometheus; a window shorter than the counters can resolve gives none. k6: its own CPU seconds "
                 "between the window's start and end (the manifest's `client_cpu_s`) over the measured seconds.", ""]
        rows = []
        for i in range(len(self.sets)):
            for t in self.threads_of(i, w):
                fs = [f for figs in self.samples[(i, w)] for f in figs if f.threads == t]
                db = median_or_none([f.db_cores for f in fs])
                rows.append(([self.labels[i]] if self.pair else []) + [
                    str(t), cell(median_or_none([f.tpmc for f in fs])),
                    "window too short" if db is None and all(f.db_short for f in fs) else cell(db),
                    cell(median_or_none([f.tpmc_per_core for f in fs]), 1),
                    cell(median_or_none([f.k6_cores for f in fs]))])
        m = " (median)" if self.repeated() else ""
        hdr = (["Run"] if self.pair else []) + ["Threads", f"tpmC{m}", f"DB CPU (cores){m}", f"tpmC per DB core{m}",
                                                f"k6 CPU (cores){m}"]
        return lines + [md_table(hdr, rows, ("l" if self.pair else "") + "rrrrr"), ""]

    def tpcc_crosscheck_lines(self):
        lines = ["## Cross-check against Prometheus", "",
                 "The manifests' figures against Prometheus' over the same windows (k6_tpcc_transactions_total and "
                 f"the native histogram k6_tpcc_latency_seconds, txn=\"new_order\"): tpmC may differ by at most "
                 f"{TPMC_TOLERANCE * 100:g}%, New-Order's 95% latency by the two histograms' bucket widths (checked from "
                 f"{P95_MIN_COUNT} New-Orders in the step on: with fewer, sysbench's nearest rank and Prometheus' "
                 "interpolated rank can fall on neighbouring transactions far apart).", ""]
        rows = []
        for i in range(len(self.sets)):
            for f in [f for figs in self.samples[(i, contract.TPCC)] for f in figs]:
                d = (f"{(f.prom_tpmc - f.tpmc) / f.tpmc * 100:+.2f}%" if f.prom_tpmc is not None and f.tpmc else "—")
                ratio = (f"{max(f.lat_ms, f.prom_p95_ms) / min(f.lat_ms, f.prom_p95_ms):.3f}"
                         if f.lat_ms and f.prom_p95_ms else "—")
                rows.append(([self.labels[i]] if self.pair else []) + [
                    f.testid, str(f.threads), num(f.tpmc), cell(f.prom_tpmc), d, cell(f.lat_ms),
                    cell(f.prom_p95_ms), ratio])
        hdr = (["Run"] if self.pair else []) + ["testid", "Threads", "tpmC (k6)", "tpmC (Prometheus)", "tpmC diff",
                                                "New-Order 95% (k6, ms)", "New-Order 95% (Prometheus, ms)", "ratio"]
        lines += [md_table(hdr, rows, ("l" if self.pair else "") + "lrrrrrrr"), ""]
        if self.warnings:
            lines += [x for m in self.warnings for x in (f"> **Warning:** {m}", ">")][:-1]
        else:
            lines.append(f"All {len(rows)} steps agree: tpmC within {TPMC_TOLERANCE * 100:g}%, New-Order's 95% latency "
                         f"within the bucket resolution where the step has {P95_MIN_COUNT} New-Orders or more.")
        return lines + [""]

    def dashboard_lines(self, web_dashboards):
        lines = ["## Dashboard snapshots", "",
                 "No Grafana panel snapshots for TPC-C runs: the Benchmark run dashboard's panels are the OLTP "
                 "series'" + (" (--grafana was given and not used)" if self.grafana_asked else "") + ".", ""]
        if web_dashboards:
            lines += ["k6's web dashboard of each run (its HTML export, saved when the run had K6_WEB_DASHBOARD=true):", ""]
            lines += [f"- testid {run.testid}: [{rel}]({rel})" for run, rel in web_dashboards] + [""]
        return lines
