"""The report: report.md (the seeds' layout), report.html (the same, for a browser), charts/
and snapshots/, written into a temporary folder that is renamed into place at the end."""
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tidbbench import ROOT, ReportError, commands, sbhist
from tidbbench.report import charts, disturb, grafana, statements, stats
from tidbbench.report.fmt import md_table, num, product_name, runset_label, short_version, utc, workload_name
from tidbbench.report.manifest import common_workloads
from tidbbench.report.sections import WorkloadSections
from tidbbench.report.prom import DEFAULT_BUCKET_FACTOR, crosscheck, run_figures

# SHOW GLOBAL VARIABLES the seeds set or name, per product family, in this order
TIDB_VARS = [
    "tidb_enable_prepared_plan_cache", "tidb_prepared_plan_cache_size", "tidb_session_plan_cache_size",
    "tidb_enable_non_prepared_plan_cache", "tidb_txn_mode", "tidb_disable_txn_auto_retry", "tidb_retry_limit",
    "tidb_enable_async_commit", "tidb_enable_1pc", "tidb_guarantee_linearizability", "tidb_enable_clustered_index",
    "tidb_hashagg_final_concurrency", "tidb_hashagg_partial_concurrency", "tidb_executor_concurrency",
    "tidb_distsql_scan_concurrency", "tidb_enable_auto_analyze", "tidb_mem_quota_query",
]
MYSQL_VARS = [
    "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit", "innodb_log_file_size", "innodb_doublewrite",
    "innodb_flush_method", "innodb_io_capacity", "sync_binlog", "log_bin", "thread_handling",
    "query_cache_type", "performance_schema", "max_prepared_stmt_count",
]
COMMON_VARS = ["transaction_isolation", "autocommit", "max_connections"]


def relevant_variables(rs):
    v = rs.first.manifest.get("target_variables") or {}
    names = (TIDB_VARS if rs.product == "tidb" else MYSQL_VARS) + COMMON_VARS
    out = {}
    for n in names:
        if n in v:
            out[n] = v[n]
        elif n == "transaction_isolation" and "tx_isolation" in v:
            out[n] = v["tx_isolation"]
    return out


def stack_version():
    if os.environ.get("TBS_STACK_VERSION"):
        return os.environ["TBS_STACK_VERSION"]
    try:
        p = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        if p.returncode == 0:
            return f"commit {p.stdout.strip()} (at report time)"
    except OSError:
        pass
    return "unknown"


def generated_at():
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    t = int(sde) * 1000 if sde else datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000
    return utc(t)


class Report(WorkloadSections):
    METRICS = ("qps", "lat", "core")  # the cells compared per thread step (compute_stats)
    CHART = ("qps", "lat")  # what the chart draws: throughput and latency (chart_series)
    THROUGHPUT = "QPS"  # the chart's throughput axis
    TITLE = "Sysbench Performance Test Report"

    def __init__(self, sets, prom, grafana_url=None):
        self.sets = sets  # [baseline] or [baseline, candidate]
        self.prom = prom
        self.grafana_url = grafana_url
        self.pair = len(sets) == 2
        if self.pair:
            self.workloads = common_workloads(*sets)
        else:
            self.workloads = list(sets[0].by_workload())
        labels = [runset_label(s) for s in sets]
        if self.pair and labels[0] == labels[1]:
            # the same product and version: name each side by its plan arm, or its run id
            names = [(st.sweep or {}).get("arm") or st.id for st in sets]
            if names[0] == names[1]:
                names = ["baseline", "candidate"]
            labels = [f"{labels[0]} [{names[0]}]", f"{labels[1]} [{names[1]}]"]
        self.labels = labels
        self.figs = {}
        self.warnings = []

    # -- data: everything from Prometheus before anything is written
    def collect(self):
        self.samples = {}  # (set, workload) -> [[StepFigures] of each sample (repeat)]
        for i, s in enumerate(self.sets):
            sw = s.samples()
            for w in self.workloads:
                self.samples[(i, w)] = []
                for run in sw[w]:
                    figs = self.run_figures(run, sample=len(sw[w]) > 1)
                    self.samples[(i, w)].append(figs)
                    self.warnings.extend(self.crosscheck(run, figs))
                self.figs[(i, w)] = self.samples[(i, w)][0]
        self.compute_stats()
        self.prom_version = self.prom.version()
        from tidbbench.report import loadgen  # the k6 instances, CPU saturation, instances that did not finish
        self.loadgens, self.loadgen_warnings = loadgen.collect(
            self.prom, [s.by_workload()[w] for s in self.sets for w in self.workloads])
        for w in self.loadgen_warnings:
            print(f"warning: {w}", file=sys.stderr)

    def run_figures(self, run, sample):
        """[StepFigures] of one run (tidbbench/report/prom.py); the TPC-C report has its own."""
        return run_figures(self.prom, run, sample=sample)

    @staticmethod
    def crosscheck(run, figs):
        return crosscheck(run, figs)

    # -- statistics over the samples (tidbbench/report/stats.py)
    def values(self, i, w, t, metric):
        """The samples' values of one cell: metric "qps", "tps", "lat" (the table's percentile) or "avg"."""
        out = []
        for figs in self.samples[(i, w)]:
            for f in figs:
                if f.threads == t:
                    v = {"qps": f.qps, "tps": f.tps, "lat": f.lat_ms, "avg": f.avg_ms,
                         "core": f.qps_per_core}[metric]
                    if v is not None:
                        out.append(v)
        return out

    def threads_of(self, i, w):
        seen = []
        for figs in self.samples[(i, w)]:
            seen.extend(f.threads for f in figs if f.threads not in seen)
        return seen

    def n_samples(self, i, w):
        return len(self.samples[(i, w)])

    def compute_stats(self):
        """Per cell (workload, threads) of a pair: QPS and latency compared (Mann-Whitney U), the
        p-values Holm-adjusted over all the report's cells of that metric."""
        self.cmp = {}
        self.fam = {}
        if not self.pair:
            return
        fam = {m: [] for m in self.METRICS}
        for w in self.workloads:
            common = [t for t in self.threads_of(0, w) if t in self.threads_of(1, w)]
            for t in common:
                for m in fam:
                    va, vb = self.values(0, w, t, m), self.values(1, w, t, m)
                    if not va or not vb:
                        continue
                    c = stats.compare(va, vb)
                    self.cmp[(w, t, m)] = c
                    fam[m].append(c)
        for cs in fam.values():
            stats.adjust(cs)
        self.fam = fam

    def chart_series(self, w):
        """What the workload's chart draws, per run set: (label, {threads: charts.Point}), the very
        figures of the tables (self.values: QPS and the table's latency percentile, medians and their
        intervals with repeated samples), so that chart and table cannot disagree."""
        out = []
        for i in range(len(self.sets)):
            d = {}
            for t in self.threads_of(i, w):
                vq, vl = (self.values(i, w, t, m) for m in self.CHART)
                if not vq or not vl:
                    continue
                q, lat = stats.summarize(vq), stats.summarize(vl)
                d[t] = charts.Point(q.median, lat.median, *((q.lo, q.hi, lat.lo, lat.hi, min(q.coverage, lat.coverage))
                                                         if q.n > 1 else ()))
            out.append((self.labels[i], d))
        return out

    def repeated(self):
        return any(self.n_samples(i, w) > 1 for i in range(len(self.sets)) for w in self.workloads)

    # -- helpers
    def cols(self):
        return ["Item", "Value"] if not self.pair else ["Item", *self.labels]

    def per_set(self, fn):
        return [fn(s) for s in self.sets]

    def runs_for(self, i):
        bw = self.sets[i].by_workload()
        return [bw[w] for w in self.workloads]

    # -- markdown
    def markdown(self, chart_paths, snaps, snap_reason, web_dashboards=()):
        """The report, section by section (one method each, in the order they are printed)."""
        lines = self.title_lines() + self.purpose_lines() + self.runs_lines()
        lines += self.target_lines() + self.loadgen_lines() + self.software_lines()
        lines += self.parameters_and_commands_lines() + self.results_lines(chart_paths)
        lines += self.resource_section() + getattr(self, "profile_lines", [])  # where the CPU went: tidbbench/report/profiles.py
        lines += self.crosscheck_lines()
        lines += self.snapshot_lines(snaps, snap_reason, web_dashboards)
        lines += ["---", "", f"Generated by `scripts/report` on {generated_at()}.", ""]
        return "\n".join(lines)

    def title_lines(self):
        a = self.labels
        if not self.pair:
            return [f"# {self.TITLE} -- {a[0]}", ""]
        from tidbbench.report import differs
        lines = [f"# {self.TITLE} -- {a[1]} vs. {a[0]}", ""]
        lines.extend(differs.hardware(self.sets, a))  # first: a comparison across host classes says so
        lines.extend(differs.section(self.sets, a))
        lines.extend(statements.section(self.sets, a, self.workloads))  # why QPS moved: tidbbench/report/statements.py
        lines.pop()
        return lines + [""]

    def purpose_lines(self):
        a = self.labels
        wl_names = [workload_name(w) for w in self.workloads]
        what = f"the {', '.join(wl_names)} workload{'s' if len(wl_names) > 1 else ''}"
        if self.pair:
            purpose = (f"This test compares the sysbench OLTP performance of {a[1]} (candidate) with {a[0]} "
                       f"(baseline) on {what}, thread step by thread step.")
        else:
            purpose = f"This test measures the sysbench OLTP performance of {a[0]} on {what}."
        return ["## Test purpose", "", purpose,
                "The load comes from tidb-bench-stack: k6 running sysbench 1.0.20's OLTP workloads (same SQL, "
                "options and random distributions), its figures recorded in Prometheus.", ""]

    def runs_lines(self):
        a = self.labels
        rows = [
            ["Run", *self.per_set(self.run_text)],
            ["Product", *self.per_set(lambda s: product_name(s.product))],
            ["Version", *self.per_set(lambda s: s.version)],
            ["Time", *self.per_set(lambda s: f"{utc(min(r.manifest.get('run_start') or 0 for r in s.runs))} to "
                                             f"{utc(max(r.manifest.get('run_end') or 0 for r in s.runs))}")],
        ]
        lines = ["## Test version and time", "", md_table(self.cols(), rows), ""]
        tests = []
        for i, s in enumerate(self.sets):
            for r in [r for w in self.workloads for r in s.samples()[w]]:  # every sample
                tests.append([a[i] if self.pair else workload_name(r.workload), r.workload, r.testid,
                              ", ".join(str(st["threads"]) for st in r.steps),
                              utc(r.manifest.get("run_start")), utc(r.manifest.get("run_end"))])
        hdr = ["Run" if self.pair else "Workload", "workload", "testid", "threads", "start", "end"]
        if not self.pair:
            tests = [t[1:] for t in tests]
            hdr = hdr[1:]
        return lines + [md_table(hdr, tests), ""] + disturb.sample_table(self.sets, a, self.pair, self.workloads)

    def target_lines(self):
        a = self.labels
        rows = [
            ["Product", *self.per_set(lambda s: product_name(s.product))],
            ["Version", *self.per_set(lambda s: short_version(s.product, s.version))],
            ["Version string", *self.per_set(lambda s: (s.first.manifest.get("version_full") or "").splitlines()[0]
                                             if s.first.manifest.get("version_full") else "")],
            ["Address", *self.per_set(lambda s: "{host}:{port}, user {user}, database {db}".format(
                **{k: s.first.manifest.get("target", {}).get(k, "?") for k in ("host", "port", "user", "db")}))],
        ]
        lines = ["## Test environment", "", "### Target", "", md_table(self.cols(), rows), ""]
        for i, s in enumerate(self.sets):
            full = s.first.manifest.get("version_full") or ""
            if "\n" in full:
                fn = "tidb_version()" if s.product == "tidb" else "VERSION()"
                lines += [f"`{fn}`{' of ' + a[i] if self.pair else ''}:", "", "```text", full, "```", ""]
        return lines

    def loadgen_lines(self):
        def recorded(s, key, suffix=""):
            v = (s.first.manifest.get("load_generator") or {}).get(key)
            return "not recorded" if v in (None, "") else f"{v}{suffix}"
        rows = [
            ["CPU", *self.per_set(lambda s: recorded(s, "cpu_model"))],
            ["Cores", *self.per_set(lambda s: recorded(s, "cpu_cores"))],
            ["Memory", *self.per_set(lambda s: recorded(s, "memory_gib", " GiB"))],
            ["Host", *self.per_set(lambda s: recorded(s, "hostname"))],
            ["k6", *self.per_set(lambda s: recorded(s, "k6"))],
        ]
        from tidbbench.report import loadgen
        return ["### Load generator", "", md_table(self.cols(), rows), "",
                *loadgen.markdown(self.loadgens, self.loadgen_warnings)]

    def bucket_factor(self):
        factors = [f.bucket_factor for figs in self.figs.values() for f in figs]
        return max(factors) if factors else DEFAULT_BUCKET_FACTOR

    def software_rows(self):
        return [
            ["tidb-bench-stack", self.stack_text()],
            ["Prometheus", self.prom_version or "unknown"],
            ["Workloads", "sysbench 1.0.20's OLTP Lua scripts, ported to k6 (k6/oltp.js)"],
            ["Latency histogram", f"native histogram k6_oltp_latency_seconds, bucket factor {self.bucket_factor():.4f}"],
        ]

    def software_lines(self):
        rows = self.software_rows()
        lines = ["### Software versions", "", md_table(["Component", "Version"], rows), "",
                 "### Target variables", "",
                 "Captured with `SHOW GLOBAL VARIABLES` when each run started; the ones the seeds set or name:", ""]
        per_set = [relevant_variables(s) for s in self.sets]
        names = []
        for variables in per_set:
            names.extend(n for n in variables if n not in names)
        if names:
            lines.append(md_table(["Variable", *(["Value"] if not self.pair else self.labels)],
                                  [[f"`{n}`", *[v.get(n, "—") for v in per_set]] for n in names]))
        else:
            lines.append("Not recorded in the run manifests.")
        return lines + [""]

    def parameters_and_commands_lines(self):
        lines = ["## Test parameters", "", md_table(self.cols(), self.parameter_rows()), "",
                 "## Test commands", "",
                 "The runs, rebuilt from their manifests (`scripts/k6` adds the password from `.stack/k6.env`; "
                 "for another server add `-e mysql_password_file=FILE`: a password in an argument shows in `ps`).", ""]
        for i, s in enumerate(self.sets):
            if self.pair:
                lines += [f"### {('Baseline', 'Candidate')[i]}: {self.labels[i]}", ""]
            lines.extend(self.command_lines(i, s))
        return lines

    def results_lines(self, chart_paths):
        lines = ["## Test results", "",
                 "Each step's figures come from Prometheus over its measured window (warm-up excluded): QPS and TPS "
                 "are the step's exact query and transaction totals (`max_over_time` of the counters born in the "
                 "step) divided by the measured seconds; avg latency is the native histogram's sum / count. The "
                 "latency percentile (95% unless the run set `percentile`) is sysbench's: k6 puts every event of "
                 f"the step into a histogram of sysbench 1.0.20's {sbhist.BUCKETS:,} log buckets ({sbhist.MIN_MS:g} ms "
                 f"to {sbhist.MAX_MS / 1000:g} s, about {(sbhist.FACTOR - 1) * 100:.1f}% "
                 "wide) and takes the nearest rank, as sysbench does; it comes from the run's manifest. "
                 "Prometheus' `histogram_quantile(0.95, ...)` of the native histogram (buckets about 9% wide) is "
                 "the cross-check below.", ""]
        if self.warnings:
            lines += [f"> **Warning:** {len(self.warnings)} figure(s) disagree with k6's own summary; see "
                      "[Cross-check against k6's summary](#cross-check-against-k6s-summary).", ""]
        if self.pair:
            only = [(self.labels[i], [w for w in s.by_workload() if w not in self.workloads])
                    for i, s in enumerate(self.sets)]
            notes = [f"{lab} only: {', '.join(ws)}" for lab, ws in only if ws]
            if notes:
                lines += [f"Not compared (measured by one side only): {'; '.join(notes)}.", ""]
        for w in self.workloads:
            lines.extend(self.workload_section(w, chart_paths.get(w)))
        return lines

    def crosscheck_rows(self):
        rows = []
        for i, s in enumerate(self.sets):
            for w in self.workloads:
                for f in self.figs[(i, w)]:
                    k6p95 = (f.k6.get("latency_ms") or {}).get("p95") or 0.0
                    d = (f.qps - f.k6["qps"]) / f.k6["qps"] * 100 if f.k6.get("qps") else 0.0
                    ratio = (max(f.p95_ms, k6p95) / min(f.p95_ms, k6p95)) if f.p95_ms and k6p95 else 0.0
                    row = [workload_name(w), str(f.threads), num(f.qps), num(f.k6.get("qps") or 0.0), f"{d:+.2f}%",
                           num(f.p95_ms), num(k6p95), f"{ratio:.3f}"]
                    rows.append(([self.labels[i]] if self.pair else []) + row)
        return rows

    def crosscheck_lines(self):
        lines = ["## Cross-check against k6's summary", "",
                 "k6's own per-step summary (the run manifest) against the Prometheus figures above: QPS may differ "
                 "by at most 2%, the 95% latency by at most the histogram's bucket resolution.", ""]
        hdr = ["Workload", "Threads", "QPS (Prometheus)", "QPS (k6)", "QPS diff", "95% latency (Prometheus, ms)",
               "95% latency (k6, ms)", "p95 ratio"]
        lines += [md_table((["Run"] if self.pair else []) + hdr, self.crosscheck_rows(),
                           ("l" if self.pair else "") + "lrrrrrrr"), ""]
        if self.warnings:
            for message in self.warnings:
                lines += [f"> **Warning:** {message}", ">"]
            lines.pop()
        else:
            n = sum(len(v) for v in self.figs.values())
            lines.append(f"All {n} steps agree: QPS within 2%, 95% latency within the bucket resolution "
                         f"(factor {self.bucket_factor():.4f}).")
        return lines + [""]

    def snapshot_lines(self, snaps, snap_reason, web_dashboards):
        lines = ["## Dashboard snapshots", ""]
        if snap_reason:
            lines += [f"Grafana panel snapshots were skipped: {snap_reason}. The dashboard "
                      f"`{grafana.DASHBOARD_UID}` (variable `testid`) shows the same runs live.", ""]
        else:
            for run, shots in snaps:
                lines += [f"### {workload_name(run.workload)}, testid {run.testid}", ""]
                for title, rel in shots:
                    lines += [f"![{title}]({rel})", ""]
        if web_dashboards:
            lines += ["k6's web dashboard of each run (its HTML export, saved when the run had K6_WEB_DASHBOARD=true):", ""]
            for run, rel in web_dashboards:
                lines.append(f"- {workload_name(run.workload)}, testid {run.testid}: [{rel}]({rel})")
            lines.append("")
        return lines

    def parameter_rows(self):
        def option_text(s, k):
            vals = {commands.value_text(r.options.get(k, "")) for r in s.runs}
            return " / ".join(sorted(vals))
        rows = [
            ["Workloads", *self.per_set(lambda s: ", ".join(s.by_workload()))],
            ["Tables", *self.per_set(lambda s: option_text(s, "tables"))],
            ["Rows per table", *self.per_set(lambda s: option_text(s, "table_size"))],
            ["Threads", *self.per_set(lambda s: option_text(s, "threads"))],
            ["Measured time per step (s)", *self.per_set(lambda s: option_text(s, "time"))],
            ["Warm-up per step (s)", *self.per_set(lambda s: option_text(s, "warmup_time"))],
            ["rand_type", *self.per_set(lambda s: option_text(s, "rand_type"))],
            ["mysql_ignore_errors", *self.per_set(lambda s: option_text(s, "mysql_ignore_errors"))],
        ]
        shown = {"workload", "tables", "table_size", "threads", "time", "warmup_time", "rand_type",
                 "mysql_ignore_errors", *commands.TARGET}
        extra = []
        for s in self.sets:
            for r in s.runs:
                for k, v in r.options.items():
                    if k not in shown and k not in commands.NEVER and k not in extra and \
                            not commands.is_default(k, v) and not (k == "version" and not v):
                        extra.append(k)
        for k in extra:
            rows.append([k, *self.per_set(lambda s: option_text(s, k))])
        if any(s.sweep for s in self.sets):
            rows.append(["Before each workload", *self.per_set(self.between_text)])
        if any((s.sweep or {}).get("scaled") for s in self.sets):  # scripts/sweep --plan --scale/--threads/...
            rows.append(["Scaled", *self.per_set(lambda s: (s.sweep or {}).get("scaled") or "—")])
        return rows

    def stack_text(self):
        if os.environ.get("TBS_STACK_VERSION"):
            return os.environ["TBS_STACK_VERSION"]
        at_sweep = [f"{s.sweep['stack']} (sweep {s.id})" for s in self.sets if s.sweep and s.sweep.get("stack")]
        return "; ".join(at_sweep + [stack_version()])

    @staticmethod
    def run_text(s):
        if s.kind != "sweep":
            why = disturb.interrupted_text(s.first)
            return f"testid {s.id}" + (f" ({why})" if why else "")
        status = s.sweep.get("status", "complete")
        if status == "complete":
            return f"sweep {s.id}"
        return f"sweep {s.id} ({status}: {s.sweep.get('error', '')}; {len(s.runs)} finished run(s))"

    @staticmethod
    def between_text(s):
        if not s.sweep:
            return "—"
        parts = []
        if s.sweep.get("reset"):
            parts.append("data reset (cleanup + prepare)")
        if s.sweep.get("analyze"):
            parts.append("ANALYZE TABLE")
        return ", ".join(parts) or "nothing"

    def command_lines(self, i, s):
        lines = []
        first = s.first
        lines.append("Prepare the data:")
        lines.append("")
        lines.append("```sh")
        prep_threads = (s.sweep or {}).get("prepare_threads")
        lines.append(commands.k6_command(commands.prepare_options(first.options, prep_threads), "k6/prepare.js"))
        lines.append("```")
        lines.append("")
        if s.sweep and s.sweep.get("command"):
            import shlex
            lines.append(f"Run the sweep (`{s.id}`):")
            lines.append("")
            lines.append("```sh")
            lines.append(" ".join(shlex.quote(x) for x in s.sweep["command"]))
            lines.append("```")
            lines.append("")
            between = self.between_text(s)
            lines.append(f"It ran, per workload{' after ' + between if between not in ('nothing', '—') else ''}:")
            lines.append("")
        else:
            lines.append("Run the test:")
            lines.append("")
        lines.append("```sh")
        runs = self.runs_for(i)
        lines.append("\n\n".join(commands.k6_command(commands.run_options(r.options), "k6/oltp.js") for r in runs))
        lines.append("```")
        lines.append("")
        return lines

    def write(self, out):
        """Builds everything in a temporary sibling folder, then renames it to `out`."""
        out = Path(out).resolve()
        if out.exists() and not (out / "report.md").is_file():
            if not out.is_dir() or any(out.iterdir()):
                raise ReportError(f"output folder {out} exists and is not a report folder; choose another --out",
                                  code=2)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        try:
            (tmp / "charts").mkdir()
            chart_paths = {}
            for w in self.workloads:
                rel = f"charts/{w}.png"
                charts.workload_chart(tmp / rel, workload_name(w), self.chart_series(w), self.pct_label(w),
                                     throughput=self.THROUGHPUT)
                chart_paths[w] = rel
            runs = [r for i in range(len(self.sets)) for r in self.runs_for(i)]
            snaps, reason = grafana.snapshots(self.grafana_url, runs, tmp)
            if reason and (tmp / "snapshots").exists():
                shutil.rmtree(tmp / "snapshots")
            # k6's web dashboard exports saved beside the runs' manifests (scripts/k6, K6_WEB_DASHBOARD=true)
            web = []
            for run in runs:
                src = run.path.parent / f"{run.testid}-web-dashboard.html"
                if src.is_file():
                    (tmp / "web-dashboard").mkdir(exist_ok=True)
                    rel = f"web-dashboard/{src.name}"
                    shutil.copyfile(src, tmp / rel)
                    web.append((run, rel))
            from tidbbench.report import profiles
            self.profile_lines = profiles.section(self, tmp)
            md = self.markdown(chart_paths, snaps, reason, web)
            (tmp / "report.md").write_text(md)
            from tidbbench.report.html import to_html
            (tmp / "report.html").write_text(to_html(md))
            if reason:
                print(f"note: Grafana panel snapshots skipped: {reason}", file=sys.stderr)
            old = None
            if out.exists():
                old = out.parent / f".{out.name}.old-{os.getpid()}"
                out.rename(old)
            tmp.rename(out)
            if old:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return out
