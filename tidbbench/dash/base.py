"""The shared building blocks of our dashboards: datasources, the one selector config (SEL),
panels and their defaults, layout, variables, the run annotations and links, dashboard().
Standard library only, no files read: tidbbench/dash/pingcap.py uses it in a plain Python container."""
# The one selector config (tidbbench/selectors.py, which the report's resource queries read too):
# every query's label matchers are taken from it.
from tidbbench.selectors import SEL

PROM = {"type": "prometheus", "uid": "prometheus"}
LOKI = {"type": "loki", "uid": "loki"}

# Grafana's $__rate_interval is at least 4 scrape intervals (datasource timeInterval: 5s).
RI = "$__rate_interval"

# Network devices that are not a host's own traffic.
# (lo stays: on a single host the load generator and the database talk over it.)
NET_DEVICES_EXCLUDED = "veth.*|docker.*|br-.*|cni.*|flannel.*|virbr.*"
FS_TYPES_EXCLUDED = "tmpfs|overlay|squashfs|nsfs|ramfs|devtmpfs|autofs|fuse.*"


def matchers(key, extra=""):
    """Label matchers of SEL[key], plus extra matchers, without braces."""
    return SEL[key] + (", " + extra if extra else "")


def sum_rate(metric, sel):
    """The per-second rate of a counter summed over its series, with label matchers sel."""
    return f"sum(rate({metric}{{{sel}}}[{RI}]))"


def p95_p99(histogram, sel):
    """(expr, legend) of the 95th and the 99th percentile of a native histogram over its series."""
    return [(f"histogram_quantile({q}, sum(rate({histogram}{{{sel}}}[{RI}])))", legend)
            for q, legend in (("0.95", "p95"), ("0.99", "p99"))]


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
          links=None, max_=None, no_value=None):
    """no_value: the text the panel shows when its queries return nothing (Grafana's "No value"),
    e.g. why a panel of one kind of run is empty for another."""
    assert description and "\n" not in description, title
    assert unit, title
    defaults = {"unit": unit}
    if no_value:
        defaults["noValue"] = no_value
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


# The series a measured run writes: k6/oltp.js's queries, k6/tpcc.js's transactions (a run of
# either lists in the run dashboard's variables; prepare, check and cleanup write neither).
RUN_SERIES = '__name__=~"k6_oltp_queries_total|k6_tpcc_transactions_total"'


def testid_var(single):
    """The run selector. Single on the run dashboard, multi (All = every run) elsewhere."""
    if single:
        return query_var("testid", "Run (testid)", f"label_values({{{RUN_SERIES}}}, testid)",
                         "The k6 run to show (k6/oltp.js or k6/tpcc.js): its testid label, as set by scripts/k6 run.",
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
    m = matchers("marker")
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
            "connection lost) / every thread reconnected (k6/lib/events.js)",
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


def zero_if_absent(expr, base, label, value):
    """expr, or a 0 series labelled label=value while base has data (a quiet run shows 0)."""
    return f'{expr} or on () label_replace(0 * ({base}), "{label}", "{value}", "", "")'
