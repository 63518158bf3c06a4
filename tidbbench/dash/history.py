"""7. History: QPS and p95 per workload x threads across runs (TPC-C's: tpmC), from the team's history store
(PostgreSQL, docs/history-store.md; the tables of tidbbench/history/schema.py), with
the detected change points as annotations. Grafana's built-in PostgreSQL data source, uid
`history`. tests/test_history_dashboard.py runs every query here against a real store."""
from tidbbench.dash.base import dashboard, panel, row, unit_override
from tidbbench.history import noise as hnoise

HISTORY = {"type": "grafana-postgresql-datasource", "uid": "history"}

# The series the variables choose (multi-value: Grafana's SQL data sources expand a multi-value
# variable to a quoted, comma-separated list, so `IN ($x)` takes one value, several or All).
POINT_FILTER = ("p.target IN ($target) AND p.workload IN ($workload) AND p.threads IN ($threads) "
                "AND p.series IN ($series)")
# One line per series: workload x threads on a target (options_hash tells runs with other
# options apart: the same workload and threads with other options is another line).
SERIES_NAME = ("p.workload || ' x ' || p.threads || ' threads (' || p.target || ', options ' || "
               "left(p.options_hash, 8) || ')'")
# A run's Benchmark run dashboard opens from an hour before its start to six hours after (the
# history keeps no end time; the run's own markers then bound its panels).
RUN_FROM = "((extract(epoch FROM r.started_at) - 3600) * 1000)::bigint"
RUN_TO = "((extract(epoch FROM r.started_at) + 6 * 3600) * 1000)::bigint"


def sql_target(sql, ref="A", fmt="table"):
    return {"datasource": HISTORY, "refId": ref, "rawSql": sql, "format": fmt, "rawQuery": True,
            "editorMode": "code"}


def sql_var(name, label, sql, description, sort=1):
    return {"name": name, "label": label, "description": description, "type": "query",
            "datasource": HISTORY, "definition": sql, "query": sql, "refresh": 2, "sort": sort,
            "hide": 0, "multi": True, "includeAll": True, "options": [], "regex": "",
            "skipUrlSync": False, "current": {"selected": True, "text": ["All"], "value": ["$__all"]}}


def across_runs(title, description, column, unit, label):
    """A time series per workload x threads: one point per run at its start (x = started_at),
    hovering shows the run's version and testid, a click opens its Benchmark run dashboard."""
    sql = (f'SELECT r.started_at AS "time", {SERIES_NAME} AS series, p.{column} AS "{label}", '
           f"r.version, r.testid, {RUN_FROM} AS run_from, {RUN_TO} AS run_to\n"
           f"FROM points p JOIN runs r ON r.run_key = p.run_key\n"
           f"WHERE $__timeFilter(r.started_at) AND {POINT_FILTER} AND p.{column} IS NOT NULL\n"
           f"ORDER BY 1, 2")
    hidden = {"id": "custom.hideFrom", "value": {"viz": True, "legend": True, "tooltip": False}}
    gone = {"id": "custom.hideFrom", "value": {"viz": True, "legend": True, "tooltip": True}}
    return panel(
        "timeseries", title, description, unit, [sql_target(sql)], w=24, h=9, ds=HISTORY,
        custom={"showPoints": "always", "pointSize": 6, "spanNulls": True, "fillOpacity": 0},
        options={"tooltip": {"mode": "multi", "sort": "desc"},
                 "legend": {"displayMode": "table", "placement": "bottom",
                            "calcs": ["min", "max", "lastNotNull"], "showLegend": True}},
        links=[{"title": "Benchmark run ${__data.fields.testid} (version ${__data.fields.version})",
                "url": "/d/tbs-benchmark-run?var-testid=${__data.fields.testid}"
                       "&from=${__data.fields.run_from}&to=${__data.fields.run_to}",
                "targetBlank": False}],
        overrides=[{"matcher": {"id": "byName", "options": "version"}, "properties": [hidden]},
                   {"matcher": {"id": "byName", "options": "testid"}, "properties": [hidden]},
                   {"matcher": {"id": "byName", "options": "run_from"}, "properties": [gone]},
                   {"matcher": {"id": "byName", "options": "run_to"}, "properties": [gone]},
                   {"matcher": {"id": "byName", "options": label},
                    "properties": [{"id": "displayName", "value": "${__field.labels.series}"}]}],
        transformations=[{"id": "partitionByValues",
                          "options": {"fields": ["series"], "keepFields": False, "naming": {"asLabels": True}}}])


def change_point_text():
    """The annotation's text (HTML, the evidence escaped, its lines kept): the evidence summary, then links to the run after the change and the
    A-vs-B report of its two sides (scripts/report BEFORE AFTER writes results/report-BEFORE-vs-AFTER/)."""
    return ("format('<b>%s %s %s%s%%</b> (%s x %s threads, %s)<br/>%s<br/>"
            "<a href=\"/d/tbs-benchmark-run?var-testid=%s&from=%s&to=%s\">Benchmark run %s (after)</a>"
            " | <a href=\"/d/tbs-benchmark-run?var-testid=%s&from=%s&to=%s\">%s (before)</a><br/>"
            "A vs B: <code>scripts/report %s %s</code> &rarr; results/report-%s-vs-%s/report.html', "
            "upper(cp.metric), cp.direction, CASE WHEN cp.magnitude_pct >= 0 THEN '+' ELSE '' END, "
            "round(cp.magnitude_pct::numeric, 1), p.workload, p.threads, p.target, "
            "replace(replace(replace(replace(cp.evidence, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), chr(10), '<br/>'), "
            f"a.testid, {RUN_FROM.replace('r.', 'a.')}, {RUN_TO.replace('r.', 'a.')}, a.testid, "
            f"b.testid, {RUN_FROM.replace('r.', 'b.')}, {RUN_TO.replace('r.', 'b.')}, b.testid, "
            "b.testid, a.testid, b.testid, a.testid)")


CHANGE_POINTS_FROM = ("FROM change_points cp\n"
                      "JOIN runs a ON a.run_key = cp.run_key_after\n"
                      "LEFT JOIN runs b ON b.run_key = cp.run_key_before\n"
                      "JOIN (SELECT DISTINCT series, workload, threads, target FROM points) p ON p.series = cp.series\n"
                      "WHERE $__timeFilter(cp.at) AND p.target IN ($target) AND p.workload IN ($workload) "
                      "AND p.threads IN ($threads) AND p.series IN ($series)")


def change_point_annotation():
    sql = (f'SELECT cp.at AS "time", {change_point_text()} AS text, '
           f"cp.direction || ',' || cp.metric || ',' || p.workload AS tags\n"
           f"{CHANGE_POINTS_FROM}\nORDER BY 1")
    return {"name": "Change points", "datasource": HISTORY, "enable": True, "hide": False,
            "iconColor": "#F2495C", "target": sql_target(sql, ref="Anno")}


def t_table(params):
    """VALUES (df, t) of Student's t quantile at 1 - max_pvalue / 2, for every df a series' level of 2 to
    `window` runs and `min_segment` runs after a step has (tidbbench/history/noise.py, as scripts/history)."""
    q = 1 - params.max_pvalue / 2
    dfs = range(params.min_segment, params.window + params.min_segment - 1)
    return "VALUES " + ", ".join(f"({df}, {hnoise.t_quantile(q, df):.6f})" for df in dfs)


def noise_sql(params=hnoise.DEFAULTS, metrics=("qps", "p95_ms")):
    """Per series and metric: the runs of its current level (since its last change point, the last
    `window`), their CV and the minimum detectable change at the detection's settings,
    max(min_magnitude, t(1 - p/2, n + m - 2) x CV x sqrt(1/n + 1/m)): tidbbench/history/noise.py's."""
    m = params.min_segment
    values = ", ".join(f"('{x}', p.{x})" for x in metrics)
    return (f"WITH last_cp AS (SELECT series, metric, max(at) AS at FROM change_points GROUP BY series, metric),\n"
            f"lvl AS (SELECT p.series, p.workload, p.threads, p.target, p.options_hash, v.metric, v.x, c.at AS since,\n"
            f"  row_number() OVER (PARTITION BY p.series, v.metric ORDER BY r.started_at DESC) AS k\n"
            f"  FROM points p JOIN runs r ON r.run_key = p.run_key\n"
            f"  CROSS JOIN LATERAL (VALUES {values}) AS v(metric, x)\n"
            f"  LEFT JOIN last_cp c ON c.series = p.series AND c.metric = v.metric\n"
            f"  WHERE {POINT_FILTER} AND abs(v.x) < 'Infinity'::float8 AND (c.at IS NULL OR r.started_at >= c.at)),\n"
            f"nz AS (SELECT series, workload, threads, target, options_hash, metric, max(since) AS since, count(*) AS n,\n"
            f"  stddev_samp(x) / nullif(abs(avg(x)), 0) * 100 AS cv\n"
            f"  FROM lvl WHERE k <= {params.window} GROUP BY 1, 2, 3, 4, 5, 6 HAVING count(*) >= 2)\n"
            f'SELECT {SERIES_NAME} AS "Series", p.metric AS "Metric", p.n AS "Runs", p.since AS "Level since", '
            f'p.cv AS "CV", greatest({params.min_magnitude:g}, t.t * p.cv * sqrt(1.0 / p.n + 1.0 / {m})) '
            f'AS "Minimum detectable change"\n'
            f"FROM nz p JOIN ({t_table(params)}) AS t(df, t) ON t.df = p.n + {m - 2}\n"
            f'ORDER BY "Minimum detectable change" DESC, 1, 2')


def history():
    runs_sql = ('SELECT r.started_at AS "Started", r.testid AS "testid", r.version AS "Version", '
                'r.target AS "Target", r.product AS "Product", r.git_hash AS "Git hash", r.host AS "Host", '
                f"count(p.series) AS \"Series\", {RUN_FROM} AS run_from, {RUN_TO} AS run_to\n"
                "FROM runs r JOIN points p ON p.run_key = r.run_key\n"
                f"WHERE $__timeFilter(r.started_at) AND {POINT_FILTER}\n"
                "GROUP BY r.run_key ORDER BY 1 DESC")
    cp_sql = ('SELECT cp.at AS "At", p.workload AS "Workload", p.threads AS "Threads", p.target AS "Target", '
              'cp.metric AS "Metric", cp.direction AS "Direction", cp.magnitude_pct AS "Change", '
              'cp.ci_low_pct AS "CI low", cp.ci_high_pct AS "CI high", cp.pvalue AS "p", '
              'cp.mean_before AS "Mean before", cp.mean_after AS "Mean after", '
              'b.testid AS "Before", a.testid AS "After", '
              "'scripts/report ' || b.testid || ' ' || a.testid AS \"A vs B report\", "
              'cp.evidence AS "Evidence"\n'
              f"{CHANGE_POINTS_FROM}\nORDER BY 1 DESC")
    run_link = [{"title": "Benchmark run ${__data.fields.testid}",
                 "url": "/d/tbs-benchmark-run?var-testid=${__data.fields.testid}"
                        "&from=${__data.fields.run_from}&to=${__data.fields.run_to}"}]
    items = [
        row("Across runs (one point per run, at its start)"),
        across_runs("QPS per workload x threads",
                    "QPS of each thread step's measured window, one point per run at its start; hover for the run's version and testid, click to open its Benchmark run dashboard; red marks are change points.",
                    "qps", "ops", "QPS"),
        across_runs("p95 latency per workload x threads",
                    "95th percentile latency (ms) of each thread step, one point per run at its start; hover for the run's version and testid, click to open its Benchmark run dashboard.",
                    "p95_ms", "ms", "p95 (ms)"),
        across_runs("tpmC per threads (TPC-C runs)",
                    "tpmC (New-Orders committed per minute) of each thread step of a TPC-C run (k6/tpcc.js; docs/tpcc.md), one point per run at its start; hover for the run's version and testid, click to open its Benchmark run dashboard.",
                    "tpmc", "none", "tpmC"),
        row("Change points and runs"),
        panel("table", "Change points",
              "The change points detected in the chosen series: when, how large (with its 95% interval and p-value), the evidence, and the command of the A-vs-B report of the runs on both sides.",
              "none", [sql_target(cp_sql)], w=24, h=8, ds=HISTORY,
              overrides=[unit_override("At", "dateTimeAsIso"), unit_override("Change", "percent", 1),
                         unit_override("CI low", "percent", 1), unit_override("CI high", "percent", 1),
                         unit_override("p", "none", 4), unit_override("Threads", "none", 0),
                         {"matcher": {"id": "byName", "options": "After"}, "properties": [{"id": "links", "value": [
                             {"title": "Benchmark run ${__data.fields.After}",
                              "url": "/d/tbs-benchmark-run?var-testid=${__data.fields.After}"}]}]},
                         {"matcher": {"id": "byName", "options": "Before"}, "properties": [{"id": "links", "value": [
                             {"title": "Benchmark run ${__data.fields.Before}",
                              "url": "/d/tbs-benchmark-run?var-testid=${__data.fields.Before}"}]}]}]),
        panel("table", "Noise per series",
              f"Per series and metric: the CV of its runs since its last change point (the last {hnoise.DEFAULTS.window}, whatever the time range) and the smallest step the detection at its defaults can find {hnoise.DEFAULTS.min_segment} runs after it (minimum detectable change, as scripts/history prints; docs/history.md).",
              "none", [sql_target(noise_sql())], w=24, h=8, ds=HISTORY,
              overrides=[unit_override("CV", "percent", 2), unit_override("Minimum detectable change", "percent", 2),
                         unit_override("Runs", "none", 0), unit_override("Level since", "dateTimeAsIso")]),
        panel("table", "Runs",
              "The runs in the time range that have points in the chosen series: identity, version and host; the testid opens the run's Benchmark run dashboard.",
              "none", [sql_target(runs_sql)], w=24, h=8, ds=HISTORY,
              overrides=[unit_override("Started", "dateTimeAsIso"), unit_override("Series", "none", 0),
                         {"matcher": {"id": "byName", "options": "testid"},
                          "properties": [{"id": "links", "value": run_link}]},
                         {"matcher": {"id": "byRegexp", "options": "run_from|run_to"},
                          "properties": [{"id": "custom.hidden", "value": True}]}]),
    ]
    variables = [
        sql_var("target", "Target", "SELECT DISTINCT target FROM points ORDER BY 1",
                "The kind of target the runs measured (as the history records it)."),
        sql_var("workload", "Workload", "SELECT DISTINCT workload FROM points WHERE target IN ($target) ORDER BY 1",
                "The sysbench workload(s)."),
        sql_var("threads", "Threads",
                "SELECT DISTINCT threads FROM points WHERE target IN ($target) AND workload IN ($workload) ORDER BY 1",
                "The thread step(s).", sort=3),
        sql_var("series", "Series",
                "SELECT DISTINCT series FROM points WHERE target IN ($target) AND workload IN ($workload) "
                "AND threads IN ($threads) ORDER BY 1",
                "The series (workload x threads x options on a target) as the history keys them."),
    ]
    d = dashboard("tbs-history", "History",
                  "Every recorded run's QPS and p95 per workload x threads across runs (TPC-C runs: tpmC), from the team's history store, with the detected change points and their evidence.",
                  ["history"], variables, items, time_from="now-90d", refresh="")
    d["annotations"] = {"list": [change_point_annotation()]}
    return d
