"""1. Benchmark run and 5. Run comparison: the dashboards of k6's series."""
from tidbbench.dash import pingcap
from tidbbench.dash.base import (LOOKBACK, NET_DEVICES_EXCLUDED, RI, RUN_SERIES, SEL, dashboard, p95_p99, panel, query_var,
                                 row, matchers, sum_rate, target, targets, testid_var, unit_override, zero_if_absent)
from tidbbench.dash.steps import (db_step_cores, k6_step_cores, step_errors, step_quantile, step_rate, tpcc_step_errors,
                                  tpcc_step_quantile, tpcc_step_tpm)


# ---------------------------------------------------------------------------------------------
# 1. Benchmark run
# ---------------------------------------------------------------------------------------------
# The dashboard's panels, one function a row of it (declarative: each returns its row and panels).
RUN, MEASURED, K6 = matchers("run"), matchers("measured"), matchers("k6")
RUN_MARKER = 'testid="$testid"'
QUERY_RATE = sum_rate("k6_oltp_queries_total", RUN)


def run_links():
    """The Run table's links: each dashboard over exactly the chosen run."""
    links = [
        {"title": f"{t} over this run", "targetBlank": False,
         "url": f"/d/{uid}?var-testid=${{__data.fields[0]}}"
                f"&from=${{__data.fields[3]}}&to=${{__data.fields[4]}}"}
        for t, uid in [("Benchmark run", "tbs-benchmark-run"), ("Logs", "tbs-logs"),
                       ("Hosts", "tbs-hosts"), ("TiDB cluster", "tbs-tidb"),
                       ("MySQL / MariaDB", "tbs-mysql")]]
    # PingCAP's own dashboards of the TiDB that runs (tidbbench/dash/pingcap.py prepares them)
    links += [
        {"title": f"{pingcap.title(n)} over this run", "targetBlank": False,
         "url": f"/d/{pingcap.uid(n)}?var-testid=${{__data.fields[0]}}"
                f"&from=${{__data.fields[3]}}&to=${{__data.fields[4]}}"}
        for n in pingcap.DASHBOARDS]
    return links


def run_panels():
    """The chosen run and its links to the other dashboards over exactly its time."""
    return [
        row("Run"),
        panel("table", "Run",
              "The chosen run: its workload, the version under test and when it started and ended; the links open a dashboard over exactly this run.",
              "none",
              [target(f'max by (testid, workload, version) (max_over_time(k6_oltp_marker{{{RUN_MARKER}, event="run_start"}}[$lookback]))',
                      ref="A", instant=True, fmt="table"),
               target(f'max by (testid, workload, version) (max_over_time(k6_oltp_marker{{{RUN_MARKER}, event="run_end"}}[$lookback]))',
                      ref="B", instant=True, fmt="table")],
              w=24, h=4, links=run_links(),
              overrides=[unit_override("Start", "dateTimeAsIso"), unit_override("End", "dateTimeAsIso")],
              transformations=[
                  {"id": "merge", "options": {}},
                  {"id": "organize", "options": {
                      "excludeByName": {"Time": True},
                      "indexByName": {"testid": 0, "workload": 1, "version": 2, "Value #A": 3, "Value #B": 4},
                      "renameByName": {"Value #A": "Start", "Value #B": "End"}}}]),
    ]


def step_table_transformations(columns):
    """A table of thread steps from instant queries: merged into one row per step, the threads as a
    number, the columns in the order given with their names ((field, shown name) pairs), sorted
    by threads."""
    return [
        {"id": "merge", "options": {}},
        {"id": "convertFieldType", "options": {"conversions": [
            {"targetField": "threads", "destinationType": "number"}], "fields": {}}},
        {"id": "organize", "options": {
            "excludeByName": {"Time": True},
            "indexByName": {field: i for i, (field, _) in enumerate(columns)},
            "renameByName": dict(columns)}},
        {"id": "sortBy", "options": {"fields": {}, "sort": [{"field": "Threads", "desc": False}]}}]


def step_table_panels():
    """One row per thread step over its measured window."""
    return [
        row("Per thread step (measured window, warm-up excluded)"),
        panel("table", "Thread steps",
              "One row per thread step over its measured window: queries and transactions per second, p95 latency and errors, as in a sysbench report; then the CPU cores the database and k6 used on average in it, and QPS per database core.",
              "none",
              [target(step_rate("k6_oltp_queries_total", MEASURED, RUN_MARKER, "$__range"), ref="A", instant=True, fmt="table"),
               target(step_rate("k6_oltp_transactions_total", MEASURED, RUN_MARKER, "$__range"), ref="B", instant=True, fmt="table"),
               target(step_quantile(0.95, MEASURED, "$__range"), ref="C", instant=True, fmt="table"),
               target(step_errors(MEASURED, "$__range"), ref="D", instant=True, fmt="table"),
               target(db_step_cores(RUN, MEASURED, "$__range"), ref="E", instant=True, fmt="table"),
               target(f"{step_rate('k6_oltp_queries_total', MEASURED, RUN_MARKER, '$__range')} / on (threads) "
                      f"({db_step_cores(RUN, MEASURED, '$__range')})", ref="F", instant=True, fmt="table"),
               target(k6_step_cores(K6, MEASURED, "$__range"), ref="G", instant=True, fmt="table")],
              w=24, h=7,
              overrides=[unit_override("Threads", "none", 0), unit_override("QPS", "ops", 1),
                         unit_override("TPS", "ops", 1), unit_override("p95 (ms)", "ms", 2),
                         unit_override("errors", "short", 0), unit_override("DB CPU (cores)", "short", 2),
                         unit_override("QPS per DB core", "short", 1),
                         unit_override("k6 CPU (cores)", "short", 2)],
              options={"sortBy": [{"displayName": "Threads", "desc": False}]},
              transformations=step_table_transformations([("threads", "Threads"), ("Value #A", "QPS"),
                  ("Value #B", "TPS"), ("Value #C", "p95 (ms)"), ("Value #D", "errors"),
                  ("Value #E", "DB CPU (cores)"), ("Value #F", "QPS per DB core"),
                  ("Value #G", "k6 CPU (cores)")])),
    ]


def throughput_panels():
    """QPS and TPS over time."""
    return [
        row("Throughput"),
        panel("timeseries", "QPS",
              "Queries per second of the run, all kinds together (warm-up included, shaded by the thread-step annotations).",
              "ops", targets((QUERY_RATE, "QPS")), w=8),
        panel("timeseries", "QPS by kind",
              "Queries per second split by kind: read, write and other (BEGIN/COMMIT).",
              "ops", targets((f"sum by (kind) (rate(k6_oltp_queries_total{{{RUN}}}[{RI}]))", "{{kind}}")),
              w=8, custom={"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 30}),
        panel("timeseries", "TPS",
              "Transactions (sysbench events) per second.",
              "ops", targets((sum_rate("k6_oltp_transactions_total", RUN), "TPS")), w=8),
        panel("timeseries", "QPS by thread step",
              "Queries per second of each thread step's measured window (warm-up excluded).",
              "ops", targets((f"sum by (threads) (rate(k6_oltp_queries_total{{{MEASURED}}}[{RI}]))", "{{threads}} threads")),
              w=24, h=7),
    ]


def latency_panels():
    """The event latency from the native histogram."""
    return [
        row("Latency (event latency, from the native histogram)"),
        panel("timeseries", "p95 and p99 latency",
              "95th and 99th percentile of the event (transaction) latency, from the native histogram k6_oltp_latency_seconds.",
              "s", targets(*p95_p99("k6_oltp_latency_seconds", RUN)),
              w=12),
        panel("timeseries", "Response time (rate mode)",
              "With -e rate=N (sysbench's --rate): 95th and 99th percentile of the response time, from when each event was due to its end (queue time included, free of coordinated omission), beside the service latency of the panel on the left (from when a thread took the event, sysbench's figure). Empty for runs without a rate.",
              "s", targets(*p95_p99("k6_oltp_response_latency_seconds", RUN)),
              w=12),
        panel("timeseries", "Mean latency",
              "Mean event latency: rate of the histogram's sum over the rate of its count.",
              "s", targets((f"histogram_sum(sum(rate(k6_oltp_latency_seconds{{{RUN}}}[{RI}]))) / "
                            f"histogram_count(sum(rate(k6_oltp_latency_seconds{{{RUN}}}[{RI}])))", "mean")),
              w=12),
    ]


def error_panels():
    """Errors by code and reconnects."""
    return [
        row("Errors and connections"),
        panel("timeseries", "Errors by code",
              "Failed statements per second by MySQL error code; ignored=true are the codes the run was told to ignore and retry.",
              "cps", targets((zero_if_absent(
                  f"sum by (code, ignored) (rate(k6_oltp_errors_total{{{RUN}}}[{RI}]))",
                  QUERY_RATE, "code", "none"), "{{code}} ignored={{ignored}}")),
              w=12, custom={"drawStyle": "bars", "fillOpacity": 60}),
        panel("timeseries", "Reconnects",
              "Reconnections per second after a lost connection (error 2013 and the like).",
              "cps", targets((zero_if_absent(
                  sum_rate("k6_oltp_reconnects_total", RUN),
                  QUERY_RATE, "event", "reconnect"), "reconnects")),
              w=12, custom={"drawStyle": "bars", "fillOpacity": 60}),
    ]


# k6/tpcc.js's runs (docs/tpcc.md): their panels say so when the run chosen is an OLTP run
TPCC_ONLY = "no data: not a TPC-C run (k6/tpcc.js)"
NEW_ORDER = 'txn="new_order"'


def tpcc_step_table():
    """One row per thread step: tpmC, tpmTotal, New-Order's p95/p99 and the errors."""
    sel, no = MEASURED, f"{MEASURED}, {NEW_ORDER}"
    return panel(
        "table", "TPC-C thread steps",
        "One row per thread step of a TPC-C run over its measured window: tpmC (New-Orders committed per minute), tpmTotal (all committed transactions per minute), New-Order's p95 and p99 latency and the failed transactions, as go-tpc's summary.",
        "none",
        [target(tpcc_step_tpm(no, RUN_MARKER, "$__range"), ref="A", instant=True, fmt="table"),
         target(tpcc_step_tpm(sel, RUN_MARKER, "$__range"), ref="B", instant=True, fmt="table"),
         target(tpcc_step_quantile(0.95, no, "$__range"), ref="C", instant=True, fmt="table"),
         target(tpcc_step_quantile(0.99, no, "$__range"), ref="D", instant=True, fmt="table"),
         target(tpcc_step_errors(sel, "$__range"), ref="E", instant=True, fmt="table")],
        w=24, h=6, no_value=TPCC_ONLY,
        overrides=[unit_override("Threads", "none", 0), unit_override("tpmC", "none", 1),
                   unit_override("tpmTotal", "none", 1), unit_override("New-Order p95 (ms)", "ms", 2),
                   unit_override("New-Order p99 (ms)", "ms", 2), unit_override("errors", "short", 0)],
        transformations=step_table_transformations([("threads", "Threads"), ("Value #A", "tpmC"),
            ("Value #B", "tpmTotal"), ("Value #C", "New-Order p95 (ms)"), ("Value #D", "New-Order p99 (ms)"),
            ("Value #E", "errors")]))


def tpcc_txn_table():
    """One row per thread step and transaction type: tpm, p95, p99, errors."""
    by = "threads, txn"
    return panel(
        "table", "TPC-C per transaction type",
        "Each thread step's five transaction types over the measured window: committed per minute, p95 and p99 latency (the transaction alone, as go-tpc measures it) and failed transactions.",
        "none",
        [target(tpcc_step_tpm(MEASURED, RUN_MARKER, "$__range", by), ref="A", instant=True, fmt="table"),
         target(tpcc_step_quantile(0.95, MEASURED, "$__range", by), ref="B", instant=True, fmt="table"),
         target(tpcc_step_quantile(0.99, MEASURED, "$__range", by), ref="C", instant=True, fmt="table"),
         target(tpcc_step_errors(MEASURED, "$__range", by), ref="D", instant=True, fmt="table")],
        w=24, h=9, no_value=TPCC_ONLY,
        overrides=[unit_override("Threads", "none", 0), unit_override("tpm", "none", 1),
                   unit_override("p95 (ms)", "ms", 2), unit_override("p99 (ms)", "ms", 2),
                   unit_override("errors", "short", 0)],
        transformations=step_table_transformations([("threads", "Threads"), ("txn", "Transaction"),
            ("Value #A", "tpm"), ("Value #B", "p95 (ms)"), ("Value #C", "p99 (ms)"), ("Value #D", "errors")]))


def tpcc_panels():
    """k6/tpcc.js's runs: tpmC per step, per transaction type, latency and errors over time."""
    tx = "k6_tpcc_transactions_total"
    per_type = lambda q: f"histogram_quantile({q}, sum by (txn) (rate(k6_tpcc_latency_seconds{{{RUN}}}[{RI}])))"  # noqa: E731
    return [
        row("TPC-C (k6/tpcc.js runs; empty for OLTP runs)"),
        tpcc_step_table(),
        tpcc_txn_table(),
        panel("timeseries", "tpmC and tpmTotal",
              "New-Orders (tpmC) and all transactions (tpmTotal) committed per minute over time, warm-up included (the thread-step annotations mark the steps).",
              "opm", targets((f"60 * {sum_rate(tx, f'{RUN}, {NEW_ORDER}')}", "tpmC"), (f"60 * {sum_rate(tx, RUN)}", "tpmTotal")),
              w=12, no_value=TPCC_ONLY),
        panel("timeseries", "tpmC by thread step",
              "New-Orders committed per minute in each thread step's measured window (warm-up excluded).",
              "opm", targets((f"60 * sum by (threads) (rate({tx}{{{MEASURED}, {NEW_ORDER}}}[{RI}]))", "{{threads}} threads")),
              w=12, no_value=TPCC_ONLY),
        panel("timeseries", "TPC-C p95 latency by transaction type",
              "95th percentile latency of each transaction type (committed ones), from the native histogram k6_tpcc_latency_seconds.",
              "s", targets((per_type("0.95"), "{{txn}}")), w=8, no_value=TPCC_ONLY),
        panel("timeseries", "TPC-C p99 latency by transaction type",
              "99th percentile latency of each transaction type (committed ones), from the native histogram k6_tpcc_latency_seconds.",
              "s", targets((per_type("0.99"), "{{txn}}")), w=8, no_value=TPCC_ONLY),
        panel("timeseries", "TPC-C errors by transaction type",
              "Failed transactions per second by type (without ignore_error a failure stops its thread for the rest of the step, as in go-tpc).",
              "cps", targets((zero_if_absent(f"sum by (txn) (rate(k6_tpcc_errors_total{{{RUN}}}[{RI}]))",
                                             sum_rate(tx, RUN), "txn", "none"), "{{txn}}")),
              w=8, custom={"drawStyle": "bars", "fillOpacity": 60}, no_value=TPCC_ONLY),
    ]


def resource_panels():
    """The database's and the load generator's CPU, memory, disk and network."""
    return [
        row("Resources: the target and the load generator"),
        panel("timeseries", "Database CPU",
              "CPU cores used by each database process: tidb-server, TiKV and PD (their own metrics), mysqld/mariadbd (process-exporter); 1 = one core.",
              "short", targets(
                  (f"sum by (job, instance) (rate(process_cpu_seconds_total{{{SEL['db_tidb']}}}[{RI}]))", "{{job}} {{instance}}"),
                  (f"sum by (groupname, instance) (rate(namedprocess_namegroup_cpu_seconds_total{{{SEL['db_mysql']}}}[{RI}]))", "{{groupname}} {{instance}}")),
              w=12, min_=0),
        panel("timeseries", "Database memory",
              "Resident memory of each database process (tidb-server, TiKV, PD; mysqld/mariadbd from process-exporter).",
              "bytes", targets(
                  (f"sum by (job, instance) (process_resident_memory_bytes{{{SEL['db_tidb']}}})", "{{job}} {{instance}}"),
                  (f'sum by (groupname, instance) (namedprocess_namegroup_memory_bytes{{{SEL["db_mysql"]}, memtype="resident"}})', "{{groupname}} {{instance}}")),
              w=12, min_=0),
        panel("timeseries", "Load generator CPU",
              "CPU cores the run's k6 process(es) used, user + system, per load generator instance; a value near k6's cores means the load generator, not the database, set the pace.",
              "short", targets((f"sum by (instance_id) (rate(k6_oltp_client_cpu_seconds_total{{{K6}}}[{RI}]))", "k6 {{instance_id}}")),
              w=12, min_=0),
        panel("timeseries", "Load generator memory",
              "Resident memory of the run's k6 process(es), per load generator instance.",
              "bytes", targets((f"sum by (instance_id) (k6_oltp_client_rss_bytes{{{K6}}})", "k6 {{instance_id}}")),
              w=12, min_=0),
        panel("timeseries", "Database hosts: disk",
              "Bytes per second read (negative) and written on the hosts node_exporter watches (locally the one host the database and k6 share).",
              "Bps", targets(
                  (f"-sum by (instance) (rate(node_disk_read_bytes_total{{{SEL['nodes']}}}[{RI}]))", "{{instance}} read"),
                  (f"sum by (instance) (rate(node_disk_written_bytes_total{{{SEL['nodes']}}}[{RI}]))", "{{instance}} write")),
              w=12),
        panel("timeseries", "Database hosts: network",
              "Bytes per second received (negative) and sent on the hosts node_exporter watches, loopback included (a single-host stack talks over it).",
              "Bps", targets(
                  (f'-sum by (instance) (rate(node_network_receive_bytes_total{{{SEL["nodes"]}, device!~"{NET_DEVICES_EXCLUDED}"}}[{RI}]))', "{{instance}} in"),
                  (f'sum by (instance) (rate(node_network_transmit_bytes_total{{{SEL["nodes"]}, device!~"{NET_DEVICES_EXCLUDED}"}}[{RI}]))', "{{instance}} out")),
              w=12),
    ]


def loadgen_panels():
    """K6's VUs and iterations."""
    return [
        row("Load generator"),
        panel("timeseries", "k6 VUs",
              "Virtual users running, and the maximum allocated. A VU runs one sysbench thread (one connection), or threads_per_vu of them: the step's thread count is in the threads label and the step annotations.",
              "short", targets((f"sum(k6_vus{{{K6}}})", "VUs"), (f"sum(k6_vus_max{{{K6}}})", "VUs max")),
              w=12),
        panel("timeseries", "k6 iterations",
              "k6 iterations per second, as k6 itself counts them: each VU runs its events back to back in iterations of up to one second, a VU of several threads (threads_per_vu) in one iteration per warm-up and measured window (events per second are the TPS panel).",
              "ops", targets((f"sum(rate(k6_iterations_total{{{K6}}}[{RI}]))", "iterations/s")),
              w=12),
    ]


def benchmark_run():
    items = [*run_panels(), *step_table_panels(), *throughput_panels(), *latency_panels(), *error_panels(),
             *tpcc_panels(), *resource_panels(), *loadgen_panels()]
    variables = [
        testid_var(single=True),
        query_var("workload", "Workload", f'label_values({{{RUN_SERIES}, testid="$testid"}}, workload)',
                  "The workload(s) of the run: a sysbench workload, or tpcc.", multi=True, include_all=True),
        query_var("version", "Version", f'label_values({{{RUN_SERIES}, testid="$testid"}}, version)',
                  "The version of the target under test, read from it when the run started.",
                  multi=True, include_all=True),
        query_var("threads", "Threads", f'label_values({{{RUN_SERIES}, testid="$testid"}}, threads)',
                  "The thread steps of the run (thread count of each step).",
                  multi=True, include_all=True, sort=3),
        LOOKBACK,
    ]
    return dashboard("tbs-benchmark-run", "Benchmark run",
                     "One k6 run, sysbench or TPC-C: QPS, TPS (TPC-C: tpmC, tpmTotal), latency and errors over time and per thread step, with the run and its steps marked.",
                     ["benchmark", "k6"], variables, items)




def ab_barchart(title, description, unit, expr_a, expr_b):
    """Bars per thread step, run A beside run B: two instant table queries (one row per step),
    merged and sorted by threads as numbers, the threads then shown as category labels."""
    return panel("barchart", title, description, unit,
                 [target(expr_a, ref="A", instant=True, fmt="table"),
                  target(expr_b, ref="B", instant=True, fmt="table")],
                 w=12, h=9,
                 transformations=[
                     {"id": "merge", "options": {}},
                     {"id": "convertFieldType", "options": {"conversions": [
                         {"targetField": "threads", "destinationType": "number"}], "fields": {}}},
                     {"id": "sortBy", "options": {"fields": {}, "sort": [{"field": "threads", "desc": False}]}},
                     {"id": "convertFieldType", "options": {"conversions": [
                         {"targetField": "threads", "destinationType": "string"}], "fields": {}}},
                     {"id": "organize", "options": {"excludeByName": {"Time": True},
                                                    "renameByName": {"Value #A": "run A", "Value #B": "run B"}}}])


# ---------------------------------------------------------------------------------------------
# 5. Run comparison
# ---------------------------------------------------------------------------------------------
def run_compare():
    a, b = matchers("run_a"), matchers("run_b")
    ma, mb = matchers("marker_a"), matchers("marker_b")
    win = "$lookback"
    qps_a = step_rate("k6_oltp_queries_total", a, ma, win)
    qps_b = step_rate("k6_oltp_queries_total", b, mb, win)
    p95_a = step_quantile(0.95, a, win)
    p95_b = step_quantile(0.95, b, win)
    change = lambda new, old: f"(({new}) - on (threads) ({old})) / on (threads) ({old}) * 100"  # noqa: E731

    def run_info(run):
        return target(f'max by (testid, workload, version) (max_over_time(k6_oltp_marker{{testid="${run}", event="run_start"}}[{win}]))',
                      legend="{{workload}} on {{version}}", instant=True)

    items = [
        row("Runs"),
        panel("stat", "Run A", "Run A: its workload and version under test, and when it started.",
              "dateTimeAsIso", [run_info("run_a")], w=12, h=4, options={"textMode": "value_and_name"}),
        panel("stat", "Run B", "Run B: its workload and version under test, and when it started.",
              "dateTimeAsIso", [run_info("run_b")], w=12, h=4, options={"textMode": "value_and_name"}),
        row("Per thread step (measured windows)"),
        panel("table", "QPS and p95 per thread step",
              "Each thread step of run A beside run B: QPS and p95 latency over the measured windows, and the change from A to B in percent.",
              "none",
              [target(qps_a, ref="A", instant=True, fmt="table"),
               target(qps_b, ref="B", instant=True, fmt="table"),
               target(change(qps_b, qps_a), ref="C", instant=True, fmt="table"),
               target(p95_a, ref="D", instant=True, fmt="table"),
               target(p95_b, ref="E", instant=True, fmt="table"),
               target(change(p95_b, p95_a), ref="F", instant=True, fmt="table")],
              w=24, h=8,
              overrides=[unit_override("Threads", "none", 0),
                         unit_override("QPS A", "ops", 1), unit_override("QPS B", "ops", 1),
                         unit_override("QPS change", "percent", 1),
                         unit_override("p95 A (ms)", "ms", 2), unit_override("p95 B (ms)", "ms", 2),
                         unit_override("p95 change", "percent", 1)],
              transformations=step_table_transformations([("threads", "Threads"), ("Value #A", "QPS A"),
                  ("Value #B", "QPS B"), ("Value #C", "QPS change"), ("Value #D", "p95 A (ms)"),
                  ("Value #E", "p95 B (ms)"), ("Value #F", "p95 change")])),
        ab_barchart("QPS per thread step", "QPS of each thread step, run A beside run B.", "ops", qps_a, qps_b),
        ab_barchart("p95 per thread step", "p95 latency of each thread step in milliseconds, run A beside run B.", "ms",
                    p95_a, p95_b),
    ]
    variables = [
        query_var("run_a", "Run A", "label_values(k6_oltp_queries_total, testid)",
                  "The baseline run (testid).", sort=2),
        query_var("run_b", "Run B", "label_values(k6_oltp_queries_total, testid)",
                  "The run compared with the baseline (testid).", sort=2),
        LOOKBACK,
        query_var("testid", "Annotated runs", "label_values(k6_oltp_marker, testid)",
                  "Runs whose markers are drawn (kept for the run annotations).",
                  multi=True, include_all=True, sort=2, hide=2),
    ]
    return dashboard("tbs-run-compare", "Run comparison",
                     "Two runs side by side: QPS and p95 per thread step and the change in percent, like the published sysbench reports.",
                     ["benchmark", "k6", "compare"], variables, items, time_from="now-7d",
                     refresh="")
