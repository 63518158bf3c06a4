"""Per-step figures (docs/CONTRACT.md) as PromQL for the dashboards: each step phase's series are
born in that phase, so max_over_time of a counter is the phase's total and last_over_time of the
histogram is its whole distribution; dividing by the measured seconds (measure_end -
measure_start) gives rates. The queries are contract/promql.json's, which the report reads too."""


import json
import os

from tidbbench.dash.base import SEL


def measured_seconds(marker_sel, window):
    end = f'max by (threads) (max_over_time(k6_oltp_marker{{{marker_sel}, event="measure_end"}}[{window}]))'
    start = f'max by (threads) (max_over_time(k6_oltp_marker{{{marker_sel}, event="measure_start"}}[{window}]))'
    return f"((({end}) - on (threads) ({start})) / 1000)"


# The per-step PromQL (contract/promql.json, which the report reads too), with one row per step.
# (this file: tidbbench/dash/steps.py; contract/ is the checkout's, mounted beside grafana/ in compose)
PROMQL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "contract", "promql.json")
with open(PROMQL, encoding="utf-8") as _f:
    _PROMQL = json.load(_f)
STEP_QUERIES = _PROMQL["step"]["queries"]
TPCC_STEP_QUERIES = _PROMQL["tpcc_step"]["queries"]
STEP_QUERY_OF = {"k6_oltp_queries_total": "queries", "k6_oltp_transactions_total": "transactions",
                 "k6_oltp_errors_total": "errors"}


def step_query(name, sel, window, q=""):
    return (STEP_QUERIES[name].replace("<BY>", " by (threads) ").replace("<SEL>", sel)
            .replace("<RANGE>", window).replace("<Q>", str(q)))


def step_total(metric, sel, window):
    return step_query(STEP_QUERY_OF[metric], sel, window)


def step_rate(metric, sel, marker_sel, window):
    return f"{step_total(metric, sel, window)} / on (threads) {measured_seconds(marker_sel, window)}"


def step_quantile(q, sel, window, scale=1000):
    """The step's quantile from its whole cumulative native histogram (docs/CONTRACT.md; needs
    Prometheus v3: 2.x before native histogram support in last_over_time returns floats)."""
    return f"{step_query('quantile', sel, window, q)} * {scale}"


def step_errors(sel, window):
    return (f"{step_total('k6_oltp_errors_total', sel, window)} or on (threads) "
            f"(0 * {step_total('k6_oltp_queries_total', sel, window)})")


def db_cpu(run_sel, fn):
    """fn(selector) over the run's target processes: TiDB + TiKV + PD for a TiDB run,
    mysqld/mariadbd (process-exporter) for a MySQL-compatible one; present only while the run's
    series are. fn is e.g. a counter's sum or its samples' timestamp."""
    tidb = (f"{fn('process_cpu_seconds_total{' + SEL['db_tidb'] + '}')} and on () "
            f"count(k6_oltp_queries_total{{{run_sel}, {SEL['version_tidb']}}})")
    mysql = (f"{fn('namedprocess_namegroup_cpu_seconds_total{' + SEL['db_mysql'] + '}')} and on () "
             f"count(k6_oltp_queries_total{{{run_sel}, {SEL['version_mysql']}}})")
    return f"({tidb}) or ({mysql})"


def step_cores(counter, stamp, meas_sel, window):
    """CPU cores a counter of CPU seconds grew by per second during each thread step's measured
    phase (the times its series exist), one row per step: the counter's rise over the rise of
    its samples' timestamps, as the report computes it with @ at the window's ends. Steps without
    a measured total are left out."""
    mask = f"(0 * count by (threads) (k6_oltp_queries_total{{{meas_sel}}}) + 1)"

    def spread(e):
        m = f"(({e}) * on () group_right () {mask})[{window}:5s]"
        return f"(max_over_time({m}) - min_over_time({m}))"
    return (f"({spread(counter)} / {spread(stamp)}) "
            f"and on (threads) {step_total('k6_oltp_queries_total', meas_sel, window)}")


def db_step_cores(run_sel, meas_sel, window):
    return step_cores(db_cpu(run_sel, lambda m: f"sum({m})"),
                      db_cpu(run_sel, lambda m: f"max(timestamp({m}))"), meas_sel, window)


def k6_step_cores(k6_sel, meas_sel, window):
    """CPU cores the load generator (all k6 instances of the run) used per step (docs/CONTRACT.md)."""
    m = f"k6_oltp_client_cpu_seconds_total{{{k6_sel}}}"
    return step_cores(f"sum({m})", f"max(timestamp({m}))", meas_sel, window)


# ---- k6/tpcc.js (docs/tpcc.md): tpmC, tpmTotal and per transaction type, from contract/promql.json's
# tpcc_step queries. `by` is "threads" (a row per step) or "threads, txn" (a row per step and type).
def tpcc_step_query(name, sel, window, by="threads", q=""):
    return (TPCC_STEP_QUERIES[name].replace("<BY>", f" by ({by}) ").replace("<SEL>", sel)
            .replace("<RANGE>", window).replace("<Q>", str(q)))


def tpcc_step_tpm(sel, marker_sel, window, by="threads"):
    """Committed transactions per minute of each step's measured window (with txn="new_order" in
    sel: tpmC), per `by`."""
    return (f"60 * {tpcc_step_query('transactions', sel, window, by)} / on (threads) group_left () "
            f"{measured_seconds(marker_sel, window)}")


def tpcc_step_quantile(q, sel, window, by="threads", scale=1000):
    return f"{tpcc_step_query('quantile', sel, window, by, q)} * {scale}"


def tpcc_step_errors(sel, window, by="threads"):
    """Failed transactions of each step (0 where none failed while transactions committed)."""
    return (f"{tpcc_step_query('errors', sel, window, by)} or on ({by}) "
            f"(0 * {tpcc_step_query('transactions', sel, window, by)})")
