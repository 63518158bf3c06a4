#!/usr/bin/env python3
"""Dashboards as code for tidb-bench-stack.

Writes grafana/dashboards/<folder>/<name>.json from the definitions below. The generated JSON is
committed; tests/test_dashboards.py regenerates it and fails on any drift.

    python3 grafana/generate.py            # (re)write grafana/dashboards/
    python3 grafana/generate.py --out DIR  # write somewhere else (the drift test does this)

Only the Python standard library is used. Conventions:
  * every label matcher comes from SEL (the one selector config) so the dashboards agree;
  * panels get their shared defaults (datasource by uid, unit, legend, tooltip) from panel();
  * datasources are referenced by the provisioned uids `prometheus` and `loki`, never by
    ${DS_...} inputs;
  * every dashboard carries the run annotations (k6_oltp_marker, value = time in epoch ms).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pingcap  # noqa: E402  (uids and titles of PingCAP's dashboards, for the run links)

PROM = {"type": "prometheus", "uid": "prometheus"}
LOKI = {"type": "loki", "uid": "loki"}

# Grafana's $__rate_interval is at least 4 scrape intervals (datasource timeInterval: 5s).
RI = "$__rate_interval"

# ---------------------------------------------------------------------------------------------
# The one selector config. Every query's label matchers are taken from here.
# ---------------------------------------------------------------------------------------------
SEL = {
    # k6 series of the chosen run (benchmark dashboard: one testid; filters are multi-value).
    "run": 'testid="$testid", workload=~"$workload", version=~"$version", threads=~"$threads"',
    # ... restricted to the measured windows (warm-up excluded).
    "measured": 'testid="$testid", workload=~"$workload", version=~"$version", '
                'threads=~"$threads", warmup="false"',
    # k6 built-ins carry only testid (and scenario).
    "k6": 'testid="$testid"',
    # Markers: annotations on every dashboard accept one or several testids.
    "marker": 'testid=~"$testid"',
    # The two runs of the comparison dashboard.
    "run_a": 'testid="$run_a", warmup="false"',
    "run_b": 'testid="$run_b", warmup="false"',
    "marker_a": 'testid="$run_a"',
    "marker_b": 'testid="$run_b"',
    # Targets scraped by Prometheus (job names from prometheus/prometheus.yml).
    "tidb": 'job="tidb", instance=~"$tidb_instance"',
    "tikv": 'job="tikv", instance=~"$tikv_instance"',
    "pd": 'job="pd"',
    "mysql": 'job="mysqld", instance=~"$mysql_instance"',
    "node": 'job="node", instance=~"$host"',
    # every host of the node job (dashboards without a host variable)
    "nodes": 'job="node"',
    # Loki streams carry a `service` label (tidb, tikv, pd, k6, ...).
    "logs": 'service=~"$service"',
    # The target's processes, for its resource use: TiDB, TiKV and PD export their own process
    # metrics; MySQL/MariaDB's come from process-exporter (job "process", one group per name).
    "db_tidb": 'job=~"tidb|tikv|pd"',
    "db_mysql": 'job="process", groupname=~"mariadbd|mysqld"',
    # Which of the two a run measured, from its version label: TiDB's release starts with "v"
    # (v8.5.6, v1.1.0-beta...+module-build), MySQL's and MariaDB's with a digit (10.11.14-MariaDB).
    "version_tidb": 'version=~"v.*"',
    "version_mysql": 'version!~"v.*"',
}

# Network devices that are not a host's own traffic.
# (lo stays: on a single host the load generator and the database talk over it.)
NET_DEVICES_EXCLUDED = "veth.*|docker.*|br-.*|cni.*|flannel.*|virbr.*"
FS_TYPES_EXCLUDED = "tmpfs|overlay|squashfs|nsfs|ramfs|devtmpfs|autofs|fuse.*"


def s(key, extra=""):
    """Label matchers of SEL[key], plus extra matchers, without braces."""
    return SEL[key] + (", " + extra if extra else "")


# ---------------------------------------------------------------------------------------------
# Shared building blocks
# ---------------------------------------------------------------------------------------------
def target(expr, legend="", ref="A", instant=False, fmt=None, ds=PROM, hide=False):
    t = {"datasource": ds, "refId": ref, "expr": expr}
    if ds is PROM:
        t["editorMode"] = "code"
        t["range"] = not instant
        t["instant"] = instant
        if legend:
            t["legendFormat"] = legend
        if fmt:
            t["format"] = fmt
    else:
        t["editorMode"] = "code"
        t["queryType"] = "range"
        if legend:
            t["legendFormat"] = legend
    if hide:
        t["hide"] = True
    return t


def targets(*specs, **kw):
    """targets((expr, legend), ...) with refIds A, B, C, ..."""
    out = []
    for i, spec in enumerate(specs):
        expr, legend = spec if isinstance(spec, tuple) else (spec, "")
        out.append(target(expr, legend, ref=chr(ord("A") + i), **kw))
    return out


def panel(kind, title, description, unit, tgts, w=12, h=8, ds=PROM, options=None,
          custom=None, overrides=None, decimals=None, min_=None, transformations=None,
          links=None, max_=None):
    assert description and "\n" not in description, title
    assert unit, title
    defaults = {"unit": unit}
    if decimals is not None:
        defaults["decimals"] = decimals
    if min_ is not None:
        defaults["min"] = min_
    if max_ is not None:
        defaults["max"] = max_
    if kind == "timeseries":
        defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10,
                              "showPoints": "never", "spanNulls": False}
        defaults["custom"].update(custom or {})
    elif custom:
        defaults["custom"] = custom
    if links:
        defaults["links"] = links
    opts = {}
    if kind == "timeseries":
        opts = {"legend": {"displayMode": "table", "placement": "bottom",
                           "calcs": ["mean", "max", "lastNotNull"], "showLegend": True},
                "tooltip": {"mode": "multi", "sort": "desc"}}
    elif kind == "stat":
        opts = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                "colorMode": "none", "graphMode": "none", "textMode": "auto",
                "justifyMode": "auto", "orientation": "auto"}
    elif kind == "table":
        opts = {"showHeader": True, "cellHeight": "sm", "footer": {"show": False}}
    elif kind == "barchart":
        opts = {"orientation": "auto", "showValue": "auto", "groupWidth": 0.7, "barWidth": 0.97,
                "stacking": "none", "xTickLabelRotation": 0,
                "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                "tooltip": {"mode": "multi", "sort": "none"}}
    elif kind == "logs":
        opts = {"showTime": True, "showLabels": True, "wrapLogMessage": True,
                "sortOrder": "Descending", "enableLogDetails": True, "dedupStrategy": "none",
                "prettifyLogMessage": False, "showCommonLabels": False}
    opts.update(options or {})
    p = {"type": kind, "title": title, "description": description, "datasource": ds,
         "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
         "options": opts, "targets": tgts, "_w": w, "_h": h}
    if transformations:
        p["transformations"] = transformations
    return p


def row(title):
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def unit_override(field, unit, decimals=None, display=None):
    props = [{"id": "unit", "value": unit}]
    if decimals is not None:
        props.append({"id": "decimals", "value": decimals})
    if display:
        props.append({"id": "displayName", "value": display})
    return {"matcher": {"id": "byName", "options": field}, "properties": props}


def layout(items):
    """Give every panel an id and a gridPos, packing left to right in rows of 24 columns."""
    out, x, y, line_h, pid = [], 0, 0, 0, 0
    for it in items:
        pid += 1
        it = dict(it)
        if it["type"] == "row":
            if x:
                y += line_h
            it["id"] = pid
            it["gridPos"] = {"h": 1, "w": 24, "x": 0, "y": y}
            y += 1
            x, line_h = 0, 0
            out.append(it)
            continue
        w, h = it.pop("_w"), it.pop("_h")
        if x + w > 24:
            y += line_h
            x, line_h = 0, 0
        it["id"] = pid
        it["gridPos"] = {"h": h, "w": w, "x": x, "y": y}
        x += w
        line_h = max(line_h, h)
        out.append(it)
    return out


# ---------------------------------------------------------------------------------------------
# Variables
# ---------------------------------------------------------------------------------------------
def query_var(name, label, query, description, ds=PROM, multi=False, include_all=False,
              all_value=".*", sort=1, hide=0):
    v = {"name": name, "label": label, "description": description, "type": "query",
         "datasource": ds, "definition": query, "refresh": 2, "sort": sort, "hide": hide,
         "multi": multi, "includeAll": include_all, "options": [], "regex": "",
         "skipUrlSync": False}
    if ds is PROM:
        v["query"] = {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"}
    else:
        # Loki: label_values(<label>) as the variable query editor stores it.
        label_name = query[len("label_values("):-1]
        v["query"] = {"type": 1, "label": label_name, "stream": "",
                      "refId": "LokiVariableQueryEditor-VariableQuery"}
    if include_all:
        v["allValue"] = all_value
        v["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]} if multi \
            else {"selected": True, "text": "All", "value": "$__all"}
    else:
        v["current"] = {}
    return v


def custom_var(name, label, values, default, description):
    return {"name": name, "label": label, "description": description, "type": "custom",
            "query": ",".join(values), "multi": False, "includeAll": False, "hide": 0,
            "skipUrlSync": False,
            "current": {"selected": True, "text": default, "value": default},
            "options": [{"selected": v == default, "text": v, "value": v} for v in values]}


def textbox_var(name, label, default, description):
    return {"name": name, "label": label, "description": description, "type": "textbox",
            "query": default, "hide": 0, "skipUrlSync": False,
            "current": {"selected": False, "text": default, "value": default},
            "options": [{"selected": True, "text": default, "value": default}]}


def testid_var(single):
    """The run selector. Single on the run dashboard, multi (All = every run) elsewhere."""
    if single:
        return query_var("testid", "Run (testid)", "label_values(k6_oltp_queries_total, testid)",
                         "The k6 run to show: its testid label, as set by scripts/k6 run.",
                         sort=2)
    return query_var("testid", "Run (testid)", "label_values(k6_oltp_marker, testid)",
                     "k6 runs whose start, end and thread steps are marked on the graphs.",
                     multi=True, include_all=True, sort=2)


LOOKBACK = custom_var(
    "lookback", "Look back", ["1h", "6h", "1d", "7d", "30d"], "7d",
    "How far back from the end of the time range to look for the run's markers and totals.")


# ---------------------------------------------------------------------------------------------
# Annotations (run start/end, thread steps) from k6_oltp_marker, value = epoch milliseconds
# ---------------------------------------------------------------------------------------------
def marker_annotation(name, expr, title, text, tag_keys, color):
    return {"name": name, "datasource": PROM, "enable": True, "hide": False,
            "iconColor": color, "expr": expr, "step": "15s",
            "target": {"refId": "Anno", "expr": expr, "interval": "15s"},
            "titleFormat": title, "textFormat": text, "tagKeys": tag_keys,
            "useValueForTime": True}


def annotations():
    # A marker's sample can be followed at once by k6's stale marker (the run_end marker, and
    # every series at the end of the run), so a plain selector misses it at most range-query
    # steps; max_over_time over the dashboard's range keeps it at every step, and as its value
    # (the event's time) is constant, Grafana draws one event per series.
    m = s("marker")
    return {"list": [
        marker_annotation(
            "Run start / end",
            f'max by (testid, event, workload, version) '
            f'(max_over_time(k6_oltp_marker{{{m}, event=~"run_start|run_end"}}[$__range]))',
            "{{event}} {{testid}}", "{{workload}} on version {{version}}",
            "event,workload,version", "#F2495C"),
        marker_annotation(
            "Thread steps",
            f'max by (testid, threads, workload, version) '
            f'(max_over_time(k6_oltp_marker{{{m}, event="step_start"}}[$__range]))',
            "{{threads}} threads", "step start of {{testid}}: {{workload}} on version {{version}}",
            "threads", "#5794F2"),
        marker_annotation(
            "Outages",
            f'max by (testid, threads, event, outage) '
            f'(max_over_time(k6_oltp_marker{{{m}, event=~"outage_start|outage_end"}}[$__range]))',
            "{{event}} {{outage}}", "{{testid}}, {{threads}} threads: the target went away (a first "
            "connection lost) / every thread reconnected (k6/lib/runner.js)",
            "event,threads", "#FF9830"),
    ]}


def links():
    return [{"title": "TiDB bench", "type": "dashboards", "tags": ["tbs"], "asDropdown": True,
             "keepTime": True, "includeVars": True, "targetBlank": False, "icon": "external link",
             "tooltip": "", "url": ""}]


def dashboard(uid, title, description, tags, variables, items, time_from="now-1h",
              refresh="10s"):
    return {
        "uid": uid, "title": title, "description": description, "tags": ["tbs"] + tags,
        "id": None, "editable": True, "graphTooltip": 1, "schemaVersion": 39, "version": 1,
        "time": {"from": time_from, "to": "now"}, "timepicker": {}, "timezone": "",
        "refresh": refresh, "fiscalYearStartMonth": 0, "liveNow": False, "weekStart": "",
        "templating": {"list": variables}, "annotations": annotations(), "links": links(),
        "panels": layout(items),
    }


# ---------------------------------------------------------------------------------------------
# Per-step figures (docs/CONTRACT.md): each step phase's series are born in that phase, so
# max_over_time of a counter is the phase's total and last_over_time of the histogram is its
# whole distribution; dividing by the measured seconds (measure_end - measure_start) gives rates.
# ---------------------------------------------------------------------------------------------
def measured_seconds(marker_sel, window):
    end = f'max by (threads) (max_over_time(k6_oltp_marker{{{marker_sel}, event="measure_end"}}[{window}]))'
    start = f'max by (threads) (max_over_time(k6_oltp_marker{{{marker_sel}, event="measure_start"}}[{window}]))'
    return f"((({end}) - on (threads) ({start})) / 1000)"


# The per-step PromQL (contract/promql.json, which the report reads too), with one row per step.
STEP_QUERIES = json.loads(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "contract",
                                            "promql.json"), encoding="utf-8").read())["step"]["queries"]
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


def zero_if_absent(expr, base, label, value):
    """expr, or a 0 series labelled label=value while base has data (a quiet run shows 0)."""
    return f'{expr} or on () label_replace(0 * ({base}), "{label}", "{value}", "", "")'


# ---------------------------------------------------------------------------------------------
# 1. Benchmark run
# ---------------------------------------------------------------------------------------------
def benchmark_run():
    run, meas, k6 = s("run"), s("measured"), s("k6")
    marker_run = 'testid="$testid"'
    q_rate = f"sum(rate(k6_oltp_queries_total{{{run}}}[{RI}]))"
    run_links = [
        {"title": f"{t} over this run", "targetBlank": False,
         "url": f"/d/{uid}?var-testid=${{__data.fields[0]}}"
                f"&from=${{__data.fields[3]}}&to=${{__data.fields[4]}}"}
        for t, uid in [("Benchmark run", "tbs-benchmark-run"), ("Logs", "tbs-logs"),
                       ("Hosts", "tbs-hosts"), ("TiDB cluster", "tbs-tidb"),
                       ("MySQL / MariaDB", "tbs-mysql")]]
    # PingCAP's own dashboards of the TiDB that runs (grafana/pingcap.py prepares them)
    run_links += [
        {"title": f"{pingcap.title(n)} over this run", "targetBlank": False,
         "url": f"/d/{pingcap.uid(n)}?var-testid=${{__data.fields[0]}}"
                f"&from=${{__data.fields[3]}}&to=${{__data.fields[4]}}"}
        for n in pingcap.DASHBOARDS]
    run_sel = 'testid="$testid"'
    items = [
        row("Run"),
        panel("table", "Run",
              "The chosen run: its workload, the version under test and when it started and ended; the links open a dashboard over exactly this run.",
              "none",
              [target(f'max by (testid, workload, version) (max_over_time(k6_oltp_marker{{{run_sel}, event="run_start"}}[$lookback]))',
                      ref="A", instant=True, fmt="table"),
               target(f'max by (testid, workload, version) (max_over_time(k6_oltp_marker{{{run_sel}, event="run_end"}}[$lookback]))',
                      ref="B", instant=True, fmt="table")],
              w=24, h=4, links=run_links,
              overrides=[unit_override("Start", "dateTimeAsIso"), unit_override("End", "dateTimeAsIso")],
              transformations=[
                  {"id": "merge", "options": {}},
                  {"id": "organize", "options": {
                      "excludeByName": {"Time": True},
                      "indexByName": {"testid": 0, "workload": 1, "version": 2, "Value #A": 3, "Value #B": 4},
                      "renameByName": {"Value #A": "Start", "Value #B": "End"}}}]),
        row("Per thread step (measured window, warm-up excluded)"),
        panel("table", "Thread steps",
              "One row per thread step over its measured window: queries and transactions per second, p95 latency and errors, as in a sysbench report; then the CPU cores the database and k6 used on average in it, and QPS per database core.",
              "none",
              [target(step_rate("k6_oltp_queries_total", meas, marker_run, "$__range"), ref="A", instant=True, fmt="table"),
               target(step_rate("k6_oltp_transactions_total", meas, marker_run, "$__range"), ref="B", instant=True, fmt="table"),
               target(step_quantile(0.95, meas, "$__range"), ref="C", instant=True, fmt="table"),
               target(step_errors(meas, "$__range"), ref="D", instant=True, fmt="table"),
               target(db_step_cores(run, meas, "$__range"), ref="E", instant=True, fmt="table"),
               target(f"{step_rate('k6_oltp_queries_total', meas, marker_run, '$__range')} / on (threads) "
                      f"({db_step_cores(run, meas, '$__range')})", ref="F", instant=True, fmt="table"),
               target(k6_step_cores(k6, meas, "$__range"), ref="G", instant=True, fmt="table")],
              w=24, h=7,
              overrides=[unit_override("Threads", "none", 0), unit_override("QPS", "ops", 1),
                         unit_override("TPS", "ops", 1), unit_override("p95 (ms)", "ms", 2),
                         unit_override("errors", "short", 0), unit_override("DB CPU (cores)", "short", 2),
                         unit_override("QPS per DB core", "short", 1),
                         unit_override("k6 CPU (cores)", "short", 2)],
              options={"sortBy": [{"displayName": "Threads", "desc": False}]},
              transformations=[
                  {"id": "merge", "options": {}},
                  {"id": "convertFieldType", "options": {"conversions": [
                      {"targetField": "threads", "destinationType": "number"}], "fields": {}}},
                  {"id": "organize", "options": {
                      "excludeByName": {"Time": True},
                      "indexByName": {"threads": 0, "Value #A": 1, "Value #B": 2, "Value #C": 3, "Value #D": 4,
                                      "Value #E": 5, "Value #F": 6, "Value #G": 7},
                      "renameByName": {"threads": "Threads", "Value #A": "QPS", "Value #B": "TPS",
                                       "Value #C": "p95 (ms)", "Value #D": "errors",
                                       "Value #E": "DB CPU (cores)", "Value #F": "QPS per DB core",
                                       "Value #G": "k6 CPU (cores)"}}},
                  {"id": "sortBy", "options": {"fields": {}, "sort": [{"field": "Threads", "desc": False}]}}]),
        row("Throughput"),
        panel("timeseries", "QPS",
              "Queries per second of the run, all kinds together (warm-up included, shaded by the thread-step annotations).",
              "ops", targets((q_rate, "QPS")), w=8),
        panel("timeseries", "QPS by kind",
              "Queries per second split by kind: read, write and other (BEGIN/COMMIT).",
              "ops", targets((f"sum by (kind) (rate(k6_oltp_queries_total{{{run}}}[{RI}]))", "{{kind}}")),
              w=8, custom={"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 30}),
        panel("timeseries", "TPS",
              "Transactions (sysbench events) per second.",
              "ops", targets((f"sum(rate(k6_oltp_transactions_total{{{run}}}[{RI}]))", "TPS")), w=8),
        panel("timeseries", "QPS by thread step",
              "Queries per second of each thread step's measured window (warm-up excluded).",
              "ops", targets((f"sum by (threads) (rate(k6_oltp_queries_total{{{meas}}}[{RI}]))", "{{threads}} threads")),
              w=24, h=7),
        row("Latency (event latency, from the native histogram)"),
        panel("timeseries", "p95 and p99 latency",
              "95th and 99th percentile of the event (transaction) latency, from the native histogram k6_oltp_latency_seconds.",
              "s", targets(
                  (f"histogram_quantile(0.95, sum(rate(k6_oltp_latency_seconds{{{run}}}[{RI}])))", "p95"),
                  (f"histogram_quantile(0.99, sum(rate(k6_oltp_latency_seconds{{{run}}}[{RI}])))", "p99")),
              w=12),
        panel("timeseries", "Response time (rate mode)",
              "With -e rate=N (sysbench's --rate): 95th and 99th percentile of the response time, from when each event was due to its end (queue time included, free of coordinated omission), beside the service latency of the panel on the left (from when a thread took the event, sysbench's figure). Empty for runs without a rate.",
              "s", targets(
                  (f"histogram_quantile(0.95, sum(rate(k6_oltp_response_latency_seconds{{{run}}}[{RI}])))", "p95"),
                  (f"histogram_quantile(0.99, sum(rate(k6_oltp_response_latency_seconds{{{run}}}[{RI}])))", "p99")),
              w=12),
        panel("timeseries", "Mean latency",
              "Mean event latency: rate of the histogram's sum over the rate of its count.",
              "s", targets((f"histogram_sum(sum(rate(k6_oltp_latency_seconds{{{run}}}[{RI}]))) / "
                            f"histogram_count(sum(rate(k6_oltp_latency_seconds{{{run}}}[{RI}])))", "mean")),
              w=12),
        row("Errors and connections"),
        panel("timeseries", "Errors by code",
              "Failed statements per second by MySQL error code; ignored=true are the codes the run was told to ignore and retry.",
              "cps", targets((zero_if_absent(
                  f"sum by (code, ignored) (rate(k6_oltp_errors_total{{{run}}}[{RI}]))",
                  q_rate, "code", "none"), "{{code}} ignored={{ignored}}")),
              w=12, custom={"drawStyle": "bars", "fillOpacity": 60}),
        panel("timeseries", "Reconnects",
              "Reconnections per second after a lost connection (error 2013 and the like).",
              "cps", targets((zero_if_absent(
                  f"sum(rate(k6_oltp_reconnects_total{{{run}}}[{RI}]))",
                  q_rate, "event", "reconnect"), "reconnects")),
              w=12, custom={"drawStyle": "bars", "fillOpacity": 60}),
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
              "short", targets((f"sum by (instance_id) (rate(k6_oltp_client_cpu_seconds_total{{{k6}}}[{RI}]))", "k6 {{instance_id}}")),
              w=12, min_=0),
        panel("timeseries", "Load generator memory",
              "Resident memory of the run's k6 process(es), per load generator instance.",
              "bytes", targets((f"sum by (instance_id) (k6_oltp_client_rss_bytes{{{k6}}})", "k6 {{instance_id}}")),
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
        row("Load generator"),
        panel("timeseries", "k6 VUs",
              "Virtual users (one connection each) running, and the maximum allocated.",
              "short", targets((f"sum(k6_vus{{{k6}}})", "VUs"), (f"sum(k6_vus_max{{{k6}}})", "VUs max")),
              w=12),
        panel("timeseries", "k6 iterations",
              "k6 iterations per second, as k6 itself counts them: each VU runs its events back to back in iterations of up to one second (events per second are the TPS panel).",
              "ops", targets((f"sum(rate(k6_iterations_total{{{k6}}}[{RI}]))", "iterations/s")),
              w=12),
    ]
    variables = [
        testid_var(single=True),
        query_var("workload", "Workload", 'label_values(k6_oltp_queries_total{testid="$testid"}, workload)',
                  "The sysbench workload(s) of the run.", multi=True, include_all=True),
        query_var("version", "Version", 'label_values(k6_oltp_queries_total{testid="$testid"}, version)',
                  "The version of the target under test, read from it when the run started.",
                  multi=True, include_all=True),
        query_var("threads", "Threads", 'label_values(k6_oltp_queries_total{testid="$testid"}, threads)',
                  "The thread steps of the run (thread count of each step).",
                  multi=True, include_all=True, sort=3),
        LOOKBACK,
    ]
    return dashboard("tbs-benchmark-run", "Benchmark run",
                     "One k6 sysbench run: QPS, TPS, latency and errors over time and per thread step, with the run and its steps marked.",
                     ["benchmark", "k6"], variables, items)


# ---------------------------------------------------------------------------------------------
# 5. Run comparison
# ---------------------------------------------------------------------------------------------
def run_compare():
    a, b = s("run_a"), s("run_b")
    ma, mb = s("marker_a"), s("marker_b")
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
              transformations=[
                  {"id": "merge", "options": {}},
                  {"id": "convertFieldType", "options": {"conversions": [
                      {"targetField": "threads", "destinationType": "number"}], "fields": {}}},
                  {"id": "organize", "options": {
                      "excludeByName": {"Time": True},
                      "indexByName": {"threads": 0, "Value #A": 1, "Value #B": 2, "Value #C": 3,
                                      "Value #D": 4, "Value #E": 5, "Value #F": 6},
                      "renameByName": {"threads": "Threads", "Value #A": "QPS A", "Value #B": "QPS B",
                                       "Value #C": "QPS change", "Value #D": "p95 A (ms)",
                                       "Value #E": "p95 B (ms)", "Value #F": "p95 change"}}},
                  {"id": "sortBy", "options": {"fields": {}, "sort": [{"field": "Threads", "desc": False}]}}]),
        panel("barchart", "QPS per thread step",
              "QPS of each thread step, run A beside run B.", "ops",
              [target(qps_a, ref="A", instant=True, fmt="table"),
               target(qps_b, ref="B", instant=True, fmt="table")],
              w=12, h=9,
              transformations=[
                  {"id": "merge", "options": {}},
                  {"id": "convertFieldType", "options": {"conversions": [
                      {"targetField": "threads", "destinationType": "number"}], "fields": {}}},
                  {"id": "sortBy", "options": {"fields": {}, "sort": [{"field": "threads", "desc": False}]}},
                  {"id": "convertFieldType", "options": {"conversions": [
                      {"targetField": "threads", "destinationType": "string"}], "fields": {}}},
                  {"id": "organize", "options": {"excludeByName": {"Time": True},
                                                 "renameByName": {"Value #A": "run A", "Value #B": "run B"}}}]),
        panel("barchart", "p95 per thread step",
              "p95 latency of each thread step in milliseconds, run A beside run B.", "ms",
              [target(p95_a, ref="A", instant=True, fmt="table"),
               target(p95_b, ref="B", instant=True, fmt="table")],
              w=12, h=9,
              transformations=[
                  {"id": "merge", "options": {}},
                  {"id": "convertFieldType", "options": {"conversions": [
                      {"targetField": "threads", "destinationType": "number"}], "fields": {}}},
                  {"id": "sortBy", "options": {"fields": {}, "sort": [{"field": "threads", "desc": False}]}},
                  {"id": "convertFieldType", "options": {"conversions": [
                      {"targetField": "threads", "destinationType": "string"}], "fields": {}}},
                  {"id": "organize", "options": {"excludeByName": {"Time": True},
                                                 "renameByName": {"Value #A": "run A", "Value #B": "run B"}}}]),
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


# ---------------------------------------------------------------------------------------------
# 2. TiDB cluster
# ---------------------------------------------------------------------------------------------
def tidb():
    t, kv, pd = s("tidb"), s("tikv"), s("pd")
    hq = lambda q, extra="": (  # noqa: E731
        f"histogram_quantile({q}, sum by (le) (rate(tidb_server_handle_query_duration_seconds_bucket"
        f"{{{s('tidb', extra) if extra else t}}}[{RI}])))")
    items = [
        row("TiDB"),
        panel("stat", "TiDB up", "Whether Prometheus reaches each tidb-server's status port (1 = up).",
              "none", targets((f"up{{{t}}}", "{{instance}}")), w=4, h=4,
              options={"colorMode": "value", "textMode": "value_and_name"}),
        panel("stat", "Connections", "Client connections open on TiDB right now.",
              "short", targets((f"sum(tidb_server_connections{{{t}}})", "connections")), w=4, h=4),
        panel("stat", "QPS", "Statements per second executed by TiDB (all statement types).",
              "ops", targets((f"sum(rate(tidb_executor_statement_total{{{t}}}[{RI}]))", "QPS")), w=4, h=4),
        panel("stat", "p99 query duration", "99th percentile of the time TiDB took to handle a query (general SQL).",
              "s", targets((hq(0.99, 'sql_type="general"'), "p99")), w=4, h=4),
        panel("stat", "CPU", "CPU used by the tidb-server processes (1 = one core).",
              "percentunit", targets((f"sum(rate(process_cpu_seconds_total{{{t}}}[{RI}]))", "CPU")), w=4, h=4),
        panel("stat", "Memory", "Resident memory of the tidb-server processes.",
              "bytes", targets((f"sum(process_resident_memory_bytes{{{t}}})", "RSS")), w=4, h=4),
        panel("timeseries", "QPS by statement type",
              "Statements per second by type (Select, Insert, Update, Delete, Begin, Commit, ...).",
              "ops", targets((f"sum by (type) (rate(tidb_executor_statement_total{{{t}}}[{RI}]))", "{{type}}")),
              w=12, custom={"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 30}),
        panel("timeseries", "Commands by result",
              "Protocol commands per second by type (Query, StmtExecute, ...) and result (OK or Error).",
              "ops", targets((f"sum by (type, result) (rate(tidb_server_query_total{{{t}}}[{RI}]))", "{{type}} {{result}}")),
              w=12),
        panel("timeseries", "Query duration p95 / p99",
              "95th and 99th percentile of TiDB's query handling time, from its duration histogram.",
              "s", targets((hq(0.95), "p95"), (hq(0.99), "p99")), w=12),
        panel("timeseries", "Query duration p99 by statement type",
              "99th percentile of query handling time per statement type.",
              "s", targets((f"histogram_quantile(0.99, sum by (le, sql_type) (rate(tidb_server_handle_query_duration_seconds_bucket{{{t}}}[{RI}])))", "{{sql_type}}")),
              w=12),
        panel("timeseries", "Connections",
              "Client connections open per tidb-server.",
              "short", targets((f"sum by (instance) (tidb_server_connections{{{t}}})", "{{instance}}")), w=8),
        panel("timeseries", "Failed queries",
              "Statements per second that failed, by error type (for example kv:1062 duplicate key, executor:1213 deadlock).",
              "cps", targets((zero_if_absent(
                  f"sum by (type) (rate(tidb_server_execute_error_total{{{t}}}[{RI}]))",
                  f"sum(rate(tidb_server_query_total{{{t}}}[{RI}]))", "type", "none"), "{{type}}")),
              w=8, custom={"drawStyle": "bars", "fillOpacity": 60}),
        panel("timeseries", "Transaction duration p95",
              "95th percentile of transaction duration by transaction mode and outcome.",
              "s", targets((f'histogram_quantile(0.95, sum by (le, txn_mode, type) (rate(tidb_session_transaction_duration_seconds_bucket{{{t}, scope="general"}}[{RI}])))', "{{txn_mode}} {{type}}")),
              w=8),
        panel("timeseries", "KV command duration p95",
              "95th percentile of the storage commands TiDB sends (get, batch_get, commit, lock_keys, ...).",
              "s", targets((f'histogram_quantile(0.95, sum by (le, type) (rate(tidb_tikvclient_txn_cmd_duration_seconds_bucket{{{t}, scope="general"}}[{RI}])))', "{{type}}")),
              w=12),
        panel("timeseries", "TiDB CPU and memory",
              "CPU (cores, left) and resident memory (right) of each tidb-server.",
              "percentunit", targets(
                  (f"sum by (instance) (rate(process_cpu_seconds_total{{{t}}}[{RI}]))", "CPU {{instance}}"),
                  (f"sum by (instance) (process_resident_memory_bytes{{{t}}})", "RSS {{instance}}")),
              w=12, overrides=[{"matcher": {"id": "byRegexp", "options": "RSS.*"},
                                "properties": [{"id": "unit", "value": "bytes"},
                                               {"id": "custom.axisPlacement", "value": "right"}]}]),
        row("TiKV"),
        panel("timeseries", "TiKV CPU",
              "CPU used by each TiKV instance, all its threads together (1 = one core).",
              "percentunit", targets((f"sum by (instance) (rate(tikv_thread_cpu_seconds_total{{{kv}}}[{RI}]))", "{{instance}}")),
              w=12),
        panel("timeseries", "TiKV CPU by thread pool",
              "CPU by TiKV thread name (grpc, raftstore, apply, unified read pool, scheduler, ...).",
              "percentunit", targets((f"sum by (name) (rate(tikv_thread_cpu_seconds_total{{{kv}}}[{RI}]))", "{{name}}")),
              w=12, options={"legend": {"displayMode": "table", "placement": "right", "calcs": ["mean", "max"], "showLegend": True}}),
        panel("timeseries", "gRPC message duration p99",
              "99th percentile of the time TiKV took to handle each kind of gRPC message (kv_get, kv_prewrite, kv_commit, coprocessor, ...).",
              "s", targets((f'histogram_quantile(0.99, sum by (le, type) (rate(tikv_grpc_msg_duration_seconds_bucket{{{kv}, type!="kv_gc"}}[{RI}])))', "{{type}}")),
              w=12),
        panel("timeseries", "Scheduler command duration p99",
              "99th percentile of TiKV's transaction scheduler command duration by command (prewrite, commit, acquire_pessimistic_lock, ...).",
              "s", targets((f"histogram_quantile(0.99, sum by (le, type) (rate(tikv_scheduler_command_duration_seconds_bucket{{{kv}}}[{RI}])))", "{{type}}")),
              w=12),
        panel("timeseries", "Store size",
              "Capacity, available and used space of each TiKV store.",
              "bytes", targets((f'sum by (instance, type) (tikv_store_size_bytes{{{kv}, type=~"capacity|available|used"}})', "{{instance}} {{type}}")),
              w=12),
        panel("timeseries", "Engine size by column family",
              "Size of the RocksDB column families (default, write, lock, raft) on each TiKV.",
              "bytes", targets((f"sum by (instance, type) (tikv_engine_size_bytes{{{kv}}})", "{{instance}} {{type}}")),
              w=12),
        panel("timeseries", "Regions and leaders per TiKV",
              "Regions and Raft leaders held by each TiKV instance.",
              "short", targets((f'sum by (instance, type) (tikv_raftstore_region_count{{{kv}, type=~"region|leader"}})', "{{instance}} {{type}}")),
              w=12),
        row("PD"),
        panel("stat", "PD up", "Whether Prometheus reaches each PD member (1 = up).",
              "none", targets((f"up{{{pd}}}", "{{instance}}")), w=6, h=5,
              options={"colorMode": "value", "textMode": "value_and_name"}),
        panel("stat", "Stores up", "TiKV stores that PD sees up and healthy.",
              "short", targets((f'sum(pd_cluster_status{{{pd}, type="store_up_count"}})', "up")), w=6, h=5),
        panel("stat", "Stores not up", "TiKV stores that PD sees disconnected, down, unhealthy, low on space, offline or tombstoned.",
              "short", targets((f'sum(pd_cluster_status{{{pd}, type=~"store_disconnected_count|store_down_count|store_unhealth_count|store_low_space_count|store_offline_count|store_tombstone_count"}})', "not up")),
              w=6, h=5),
        panel("stat", "Regions", "Regions in the cluster (one Raft leader each, as counted by PD).",
              "short", targets((f'sum(pd_cluster_status{{{pd}, type="leader_count"}})', "regions")), w=6, h=5),
        panel("timeseries", "Store status",
              "Number of stores in each state as PD reports it.",
              "short", targets((f'sum by (type) (pd_cluster_status{{{pd}, type=~"store_.*_count"}})', "{{type}}")),
              w=8),
        panel("timeseries", "Region and leader counts",
              "Region replicas (region_count) and leaders (leader_count) over all stores, as counted by PD.",
              "short", targets((f'sum by (type) (pd_cluster_status{{{pd}, type=~"region_count|leader_count"}})', "{{type}}")),
              w=8),
        panel("timeseries", "Region health",
              "Regions with missing, extra, down, pending or offline peers; all 0 on a healthy cluster.",
              "short", targets((f'sum by (type) (pd_regions_status{{{pd}, type=~"miss-peer-region-count|extra-peer-region-count|down-peer-region-count|pending-peer-region-count|offline-peer-region-count"}})', "{{type}}")),
              w=8),
    ]
    variables = [
        testid_var(single=False),
        query_var("tidb_instance", "TiDB", 'label_values(up{job="tidb"}, instance)',
                  "tidb-server status ports scraped by Prometheus.", multi=True, include_all=True),
        query_var("tikv_instance", "TiKV", 'label_values(up{job="tikv"}, instance)',
                  "TiKV status ports scraped by Prometheus (compose cluster only).",
                  multi=True, include_all=True),
    ]
    return dashboard("tbs-tidb", "TiDB cluster",
                     "What the TiDB cluster did during the runs: TiDB statements, latency, connections and errors; TiKV CPU, latency and storage; PD health and regions.",
                     ["tidb", "tikv", "pd"], variables, items)


# ---------------------------------------------------------------------------------------------
# 3. MySQL / MariaDB (mysqld_exporter)
# ---------------------------------------------------------------------------------------------
def mysql():
    m = s("mysql")
    items = [
        row("Server"),
        panel("stat", "MySQL up", "Whether mysqld_exporter can reach the server (1 = up).",
              "none", targets((f"mysql_up{{{m}}}", "{{instance}}")), w=4, h=4,
              options={"colorMode": "value", "textMode": "value_and_name"}),
        panel("stat", "Version", "The server's version as it reports it.",
              "none", targets((f"mysql_version_info{{{m}}}", "{{version}}")), w=8, h=4,
              options={"textMode": "name"}),
        panel("stat", "Uptime", "Time since the server started.",
              "s", targets((f"mysql_global_status_uptime{{{m}}}", "uptime")), w=4, h=4),
        panel("stat", "QPS", "Statements per second executed by the server (Queries status counter).",
              "ops", targets((f"sum(rate(mysql_global_status_queries{{{m}}}[{RI}]))", "QPS")), w=4, h=4),
        panel("stat", "Threads connected", "Client connections open right now.",
              "short", targets((f"sum(mysql_global_status_threads_connected{{{m}}})", "connected")), w=4, h=4),
        panel("timeseries", "Queries and questions",
              "Statements per second: all of them (queries) and those sent by clients (questions).",
              "ops", targets(
                  (f"sum(rate(mysql_global_status_queries{{{m}}}[{RI}]))", "queries"),
                  (f"sum(rate(mysql_global_status_questions{{{m}}}[{RI}]))", "questions")),
              w=12),
        panel("timeseries", "Commands by type",
              "Statements per second by command (select, insert, update, delete, begin, commit, rollback).",
              "ops", targets((f'sum by (command) (rate(mysql_global_status_commands_total{{{m}, command=~"select|insert|update|delete|replace|begin|commit|rollback|stmt_execute"}}[{RI}]))', "{{command}}")),
              w=12, custom={"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 30}),
        panel("timeseries", "Connections",
              "Threads connected and running, against max_connections.",
              "short", targets(
                  (f"sum(mysql_global_status_threads_connected{{{m}}})", "connected"),
                  (f"sum(mysql_global_status_threads_running{{{m}}})", "running"),
                  (f"sum(mysql_global_variables_max_connections{{{m}}})", "max_connections")),
              w=8),
        panel("timeseries", "Errors and aborts",
              "Aborted connections and clients, and slow queries, per second.",
              "cps", targets(
                  (f"sum(rate(mysql_global_status_aborted_connects{{{m}}}[{RI}]))", "aborted connects"),
                  (f"sum(rate(mysql_global_status_aborted_clients{{{m}}}[{RI}]))", "aborted clients"),
                  (f"sum(rate(mysql_global_status_slow_queries{{{m}}}[{RI}]))", "slow queries")),
              w=8),
        panel("timeseries", "Network traffic",
              "Bytes per second received from and sent to clients.",
              "Bps", targets(
                  (f"sum(rate(mysql_global_status_bytes_received{{{m}}}[{RI}]))", "received"),
                  (f"sum(rate(mysql_global_status_bytes_sent{{{m}}}[{RI}]))", "sent")),
              w=8),
        row("Storage engine"),
        panel("timeseries", "Handler operations",
              "Storage-engine row operations per second: index lookups and scans (read_*), writes, updates and deletes.",
              "ops", targets((f'sum by (handler) (rate(mysql_global_status_handlers_total{{{m}, handler=~"read_key|read_next|read_rnd_next|write|update|delete"}}[{RI}]))', "{{handler}}")),
              w=8),
        panel("timeseries", "Buffer pool reads",
              "Logical read requests per second and reads that had to go to disk.",
              "ops", targets(
                  (f"sum(rate(mysql_global_status_innodb_buffer_pool_read_requests{{{m}}}[{RI}]))", "read requests"),
                  (f"sum(rate(mysql_global_status_innodb_buffer_pool_reads{{{m}}}[{RI}]))", "disk reads")),
              w=8),
        panel("timeseries", "InnoDB data I/O",
              "Bytes per second InnoDB read from and wrote to its data files.",
              "Bps", targets(
                  (f"sum(rate(mysql_global_status_innodb_data_read{{{m}}}[{RI}]))", "read"),
                  (f"sum(rate(mysql_global_status_innodb_data_written{{{m}}}[{RI}]))", "written")),
              w=8),
        row("Client side (k6)"),
        panel("timeseries", "Client p95 / p99 latency",
              "Event latency the load generator measured against this server, from the k6 native histogram (runs selected above).",
              "s", targets(
                  (f"histogram_quantile(0.95, sum(rate(k6_oltp_latency_seconds{{{s('marker')}}}[{RI}])))", "p95"),
                  (f"histogram_quantile(0.99, sum(rate(k6_oltp_latency_seconds{{{s('marker')}}}[{RI}])))", "p99")),
              w=12),
        panel("timeseries", "Client QPS",
              "Queries per second the load generator completed (runs selected above).",
              "ops", targets((f"sum(rate(k6_oltp_queries_total{{{s('marker')}}}[{RI}]))", "QPS")), w=12),
    ]
    variables = [
        testid_var(single=False),
        query_var("mysql_instance", "Server", 'label_values(mysql_up{job="mysqld"}, instance)',
                  "mysqld_exporter targets scraped by Prometheus.", multi=True, include_all=True),
    ]
    return dashboard("tbs-mysql", "MySQL / MariaDB",
                     "What a MySQL or MariaDB target did during the runs, from mysqld_exporter, with the client-side view beside it.",
                     ["mysql", "mariadb"], variables, items)


# ---------------------------------------------------------------------------------------------
# 4. Hosts (node_exporter)
# ---------------------------------------------------------------------------------------------
def hosts():
    n = s("node")
    cores = f'count by (instance) (node_cpu_seconds_total{{{n}, mode="idle"}})'
    items = [
        row("CPU and memory"),
        panel("timeseries", "CPU busy",
              "Share of all CPU time not idle, per host (database hosts and the load generator's host).",
              "percentunit", targets((f'1 - avg by (instance) (rate(node_cpu_seconds_total{{{n}, mode="idle"}}[{RI}]))', "{{instance}}")),
              w=12, min_=0, max_=1),
        panel("timeseries", "CPU by mode",
              "Share of CPU time per mode (user, system, iowait, steal, ...), per host.",
              "percentunit", targets((f'sum by (instance, mode) (rate(node_cpu_seconds_total{{{n}, mode!="idle"}}[{RI}])) / on (instance) group_left () {cores}', "{{instance}} {{mode}}")),
              w=12, custom={"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 30}),
        panel("timeseries", "Load per core",
              "1-minute load average divided by the number of cores, per host.",
              "short", targets((f"sum by (instance) (node_load1{{{n}}}) / on (instance) {cores}", "{{instance}}")),
              w=12),
        panel("timeseries", "Memory used",
              "Memory in use (total minus available), per host.",
              "bytes", targets(
                  (f"sum by (instance) (node_memory_MemTotal_bytes{{{n}}} - node_memory_MemAvailable_bytes{{{n}}})", "{{instance}} used"),
                  (f"sum by (instance) (node_memory_MemTotal_bytes{{{n}}})", "{{instance}} total")),
              w=12),
        row("Disk"),
        panel("timeseries", "Disk throughput",
              "Bytes per second read (negative) and written, per host and device.",
              "Bps", targets(
                  (f"-sum by (instance, device) (rate(node_disk_read_bytes_total{{{n}}}[{RI}]))", "{{instance}} {{device}} read"),
                  (f"sum by (instance, device) (rate(node_disk_written_bytes_total{{{n}}}[{RI}]))", "{{instance}} {{device}} write")),
              w=8),
        panel("timeseries", "Disk IOPS",
              "Read (negative) and write operations per second, per host and device.",
              "iops", targets(
                  (f"-sum by (instance, device) (rate(node_disk_reads_completed_total{{{n}}}[{RI}]))", "{{instance}} {{device}} read"),
                  (f"sum by (instance, device) (rate(node_disk_writes_completed_total{{{n}}}[{RI}]))", "{{instance}} {{device}} write")),
              w=8),
        panel("timeseries", "Disk busy",
              "Share of time each device had I/O in flight, per host.",
              "percentunit", targets((f"sum by (instance, device) (rate(node_disk_io_time_seconds_total{{{n}}}[{RI}]))", "{{instance}} {{device}}")),
              w=8),
        panel("timeseries", "Filesystem used",
              "Share of each filesystem in use, per host.",
              "percentunit", targets((f'1 - sum by (instance, mountpoint) (node_filesystem_avail_bytes{{{n}, fstype!~"{FS_TYPES_EXCLUDED}"}}) / sum by (instance, mountpoint) (node_filesystem_size_bytes{{{n}, fstype!~"{FS_TYPES_EXCLUDED}"}})', "{{instance}} {{mountpoint}}")),
              w=24, h=6, min_=0, max_=1),
        row("Network"),
        panel("timeseries", "Network traffic",
              "Bytes per second received (negative) and sent, per host and interface (loopback included: a single-host stack talks over it).",
              "Bps", targets(
                  (f'-sum by (instance, device) (rate(node_network_receive_bytes_total{{{n}, device!~"{NET_DEVICES_EXCLUDED}"}}[{RI}]))', "{{instance}} {{device}} in"),
                  (f'sum by (instance, device) (rate(node_network_transmit_bytes_total{{{n}, device!~"{NET_DEVICES_EXCLUDED}"}}[{RI}]))', "{{instance}} {{device}} out")),
              w=24),
    ]
    variables = [
        testid_var(single=False),
        query_var("host", "Host", 'label_values(node_uname_info{job="node"}, instance)',
                  "Hosts running node_exporter, the load generator's included.",
                  multi=True, include_all=True),
    ]
    return dashboard("tbs-hosts", "Hosts",
                     "CPU, memory, disk and network of every host of the stack, the load generator's included.",
                     ["hosts", "node"], variables, items)


# ---------------------------------------------------------------------------------------------
# 6. Logs (Loki)
# ---------------------------------------------------------------------------------------------
def logs():
    lg = s("logs")
    items = [
        row("Logs of the time range (open it from the Run table of the Benchmark run dashboard)"),
        panel("timeseries", "Log lines by service",
              "Log lines per interval, by service.",
              "short", [target(f'sum by (service) (count_over_time({{{lg}}} |~ "$search" [$__interval]))',
                               "{{service}}", ds=LOKI)],
              ds=LOKI, w=12, h=7, custom={"drawStyle": "bars", "fillOpacity": 60,
                                          "stacking": {"mode": "normal", "group": "A"}}),
        panel("timeseries", "Errors and warnings by service",
              "Log lines mentioning an error, warning, panic or fatal condition, by service (0 for a service with none).",
              "short", [target(f'sum by (service) (count_over_time({{{lg}}} |~ "(?i)(error|warn|panic|fatal)" [$__interval]))'
                               f' or sum by (service) (0 * count_over_time({{{lg}}} [$__interval]))',
                               "{{service}}", ds=LOKI)],
              ds=LOKI, w=12, h=7, custom={"drawStyle": "bars", "fillOpacity": 60,
                                          "stacking": {"mode": "normal", "group": "A"}}),
        panel("logs", "Logs",
              "Log lines of the chosen services in the time range, newest first, filtered by the search text.",
              "none", [target(f'{{{lg}}} |~ "$search"', ds=LOKI)], ds=LOKI, w=24, h=20),
    ]
    variables = [
        testid_var(single=False),
        query_var("service", "Service", "label_values(service)",
                  "Services shipping logs to Loki (tidb, tikv, pd, k6, ...).", ds=LOKI,
                  multi=True, include_all=True, all_value=".+"),
        textbox_var("search", "Search (regex)", "",
                    "Only lines matching this regular expression (empty = all lines)."),
    ]
    return dashboard("tbs-logs", "Logs",
                     "The logs of every service of the stack in Loki over the chosen time range, by service.",
                     ["logs", "loki"], variables, items)


# ---------------------------------------------------------------------------------------------
DASHBOARDS = {
    "benchmark/benchmark-run.json": benchmark_run,
    "benchmark/run-compare.json": run_compare,
    "databases/tidb.json": tidb,
    "databases/mysql.json": mysql,
    "hosts/hosts.json": hosts,
    "logs/logs.json": logs,
}


def render(fn):
    return json.dumps(fn(), indent=2, ensure_ascii=False) + "\n"


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(here, "dashboards"),
                    help="directory to write the dashboards' JSON into (default: grafana/dashboards)")
    args = ap.parse_args(argv)
    for rel, fn in DASHBOARDS.items():
        path = os.path.join(args.out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(render(fn))
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
