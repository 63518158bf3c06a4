"""Exact per-step figures from Prometheus (docs/CONTRACT.md), and the cross-check against
the run manifest's k6 summary.

For a step with measured window [measure_start, measure_end] (epoch ms), every query is
evaluated at measure_end + the step's tail (its graceful stop, option grace_time, plus one push
interval of k6/contract.json's timing, plus 1 s: 6 s by default) over a range reaching back to measure_start, on the
series labelled testid, threads and warmup="false" (born in that phase, so their cumulative
values are the phase's totals). The queries (queries, transactions, errors, the histogram and
its quantile) are contract/promql.json's "step" templates.
"""
import json
import math
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from tidbbench.selectors import SEL

from tidbbench import ReportError, contract, sbhist

QPS_TOLERANCE = 0.02  # QPS from Prometheus vs k6's summary
DEFAULT_BUCKET_FACTOR = 2 ** (2 ** -3)  # native histogram schema 3


def http_fetch(url, timeout=15):
    """GET url -> parsed JSON. Prometheus answers errors with JSON too."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        try:
            return json.load(e)
        except Exception:
            raise ReportError(f"Prometheus answered HTTP {e.code} for {url}")
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise ReportError(f"cannot reach Prometheus at {url.split('/api/')[0]}: {reason}")


class Prometheus:
    """Instant queries against the HTTP API. `fetch(url) -> dict` is injectable (tests replay
    recorded answers); TBS_PROM_RECORD=<file> appends every answer to a JSON-lines file."""

    def __init__(self, url, fetch=None):
        self.url = url.rstrip("/")
        self.fetch = fetch or http_fetch
        self.record = os.environ.get("TBS_PROM_RECORD")

    def _get(self, path, params=None):
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        body = self.fetch(url)
        if self.record:
            with open(self.record, "a") as f:
                f.write(json.dumps({"path": path, "params": params or {}, "response": body}) + "\n")
        return body

    def query(self, expr, at):
        body = self._get("/api/v1/query", {"query": expr, "time": at})
        if body.get("status") != "success":
            raise ReportError(f"Prometheus at {self.url} rejected the query {expr}: "
                              f"{body.get('errorType', '')} {body.get('error', body)}")
        return body["data"]["result"]

    def version(self):
        try:
            body = self._get("/api/v1/status/buildinfo")
            return body.get("data", {}).get("version", "") if body.get("status") == "success" else ""
        except ReportError:
            return ""


@dataclass
class StepFigures:
    threads: int
    seconds: float
    queries: float
    transactions: float
    errors: float
    qps: float
    tps: float
    p95_ms: float
    avg_ms: float
    count: float
    bucket_factor: float
    k6: dict = field(default_factory=dict)  # the manifest's step (k6's own summary)
    source: str = "prometheus"  # or disturb.SOURCE_K6: Prometheus has no data for the step
    at: float = 0.0
    range_ms: int = 0
    db_cores: float = None  # CPU cores the target used on average over the measured window
    k6_cores: float = None  # CPU cores the load generator (k6) used over the measured window
    pct: float = 95  # the run's `percentile` option (sysbench's --percentile)
    pct_ms: float = None  # that percentile by sysbench's method (k6's per-step histogram, the manifest)
    db_short: bool = False  # the measured window is too short for the database's scraped CPU counters
    k6_short: bool = False  # ... for k6's pushed CPU counter

    @property
    def lat_ms(self):
        """The latency percentile the report's tables show: sysbench's method from the manifest
        (1,024 log buckets, nearest rank); Prometheus' p95 for manifests made before it."""
        return self.pct_ms if self.pct_ms is not None else self.p95_ms


    @property
    def qps_per_core(self):
        return self.qps / self.db_cores if self.db_cores else None


def _scalar(result):
    if not result:
        return None
    v = float(result[0]["value"][1])
    return None if math.isnan(v) else v


def _fmt_at(ms):
    return f"{ms / 1000:.3f}"


def step_query_params(testid, step):
    w = step["window"]
    at_ms = int(w["measure_end"]) + contract.step_tail_ms(w)  # evaluated this long after measure_end
    range_ms = at_ms - int(w["measure_start"])
    sel = contract.step_selector(testid, step["threads"])
    if step.get("instances"):  # a merged run (tidbbench/merge.py): only the instances that finished the step
        sel += f',instance_id=~"{"|".join(re.escape(str(i)) for i in step["instances"])}"'
    return sel, _fmt_at(at_ms), range_ms


def step_figures(prom, testid, step):
    """Figures of one step from Prometheus, or None when Prometheus has nothing for it."""
    sel, at, rng = step_query_params(testid, step)
    r = f"{rng}ms"

    def q(name, quantile=None):
        return prom.query(contract.step_query(name, sel, r, quantile), at)
    queries = _scalar(q("queries"))
    if queries is None:
        return None
    transactions = _scalar(q("transactions")) or 0.0
    errors = _scalar(q("errors")) or 0.0
    hist = q("histogram")
    p95 = _scalar(q("quantile", 0.95))
    count, total, factor = 0.0, 0.0, DEFAULT_BUCKET_FACTOR
    if hist and "histogram" in hist[0]:
        h = hist[0]["histogram"][1]
        count, total = float(h.get("count", 0)), float(h.get("sum", 0))
        ratios = [float(b[2]) / float(b[1]) for b in h.get("buckets", []) if float(b[1]) > 0 and float(b[2]) > 0]
        if ratios:
            factor = max(ratios)
    w = step["window"]
    # k6's own denominator: the measured time the step ran (less than planned when interrupted)
    seconds = step.get("elapsed_s") or (w["measure_end"] - w["measure_start"]) / 1000.0
    return StepFigures(
        threads=int(step["threads"]), seconds=seconds, queries=queries, transactions=transactions,
        errors=errors, qps=queries / seconds, tps=transactions / seconds,
        p95_ms=(p95 or 0.0) * 1000.0, avg_ms=(total / count * 1000.0) if count else 0.0,
        count=count, bucket_factor=factor, k6=step, at=float(at), range_ms=rng,
        **sysbench_percentile(step))


def sysbench_percentile(step):
    """{pct, pct_ms} from a manifest step: the percentile k6 computed with sysbench's method."""
    lat = step.get("latency_ms") or {}
    if lat.get("pct_value") is None:
        return {}
    return {"pct": lat.get("pct") or 95, "pct_ms": float(lat["pct_value"])}


def resource_queries(product, testid, start_ms, end_ms):
    """PromQL for the CPU cores the target and the load generator used on average between two
    times (epoch ms): each counter's last sample at the end minus its last sample at the start,
    over the time between those samples (`@` pins both; unlike increase() over the window, this
    needs no two samples inside a short step). Target: TiDB + TiKV + PD from their process
    metrics, or mysqld/mariadbd from process-exporter; k6: the contract's
    k6_oltp_client_cpu_seconds_total."""
    sel = SEL  # tidbbench/selectors.py: the one place the target's process selectors are defined
    if product == "tidb":
        metric = f"process_cpu_seconds_total{{{sel['db_tidb']}}}"
    else:
        metric = f"namedprocess_namegroup_cpu_seconds_total{{{sel['db_mysql']}}}"
    k6 = f'k6_oltp_client_cpu_seconds_total{{testid="{testid}"}}'
    s, e = f"{start_ms / 1000:.3f}", f"{end_ms / 1000:.3f}"

    def cores(m):
        return (f"(sum({m} @ {e}) - sum({m} @ {s})) / "
                f"(max(timestamp({m} @ {e})) - max(timestamp({m} @ {s})))")
    return cores(metric), cores(k6)


# A counter is read at its samples: the cores over a window are its increase between the last sample
# at or before the window's start and the last at or before its end, over the time between them. With
# samples every I seconds, the part of that span inside a window of L seconds is, whatever the
# samples' phase, at least min(1/2, L/I - 1) for I <= L < 2I (none at all below I), and at least 1/2
# from L >= 1.5 I on: shorter windows give a figure mostly made of the time before the step.
MIN_WINDOW_INTERVALS = 1.5


def _seconds(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)(ms|s|m)\s*", text)
    if not m:
        raise ReportError(f"cannot read the interval '{text}' (e.g. 5s)")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]


def scrape_interval_s():
    """The stack's scrape interval: prometheus/prometheus.yml's global scrape_interval (no job sets
    its own), the one place it is set."""
    from tidbbench import ROOT
    text = (ROOT / "prometheus" / "prometheus.yml").read_text()
    m = re.search(r"^global:\s*\n(?:[ \t]+.*\n)*?[ \t]+scrape_interval:\s*(\S+)", text, re.M)
    if not m:
        raise ReportError("prometheus/prometheus.yml has no global scrape_interval")
    return _seconds(m.group(1))


def min_windows_s():
    """(database, k6): the shortest measured windows whose CPU the report gives, in seconds: 1.5 of
    the database's scrape interval and of k6's push interval (k6/contract.json's timing)."""
    return (MIN_WINDOW_INTERVALS * scrape_interval_s(),
            MIN_WINDOW_INTERVALS * float(contract.timing()["push_interval_s"]))


def step_resources(prom, run, fig):
    """Fills fig.db_cores and fig.k6_cores (None where Prometheus has no such series, or where the
    measured window is too short for the counters' sampling: then db_short/k6_short)."""
    w = fig.k6["window"]
    length = (int(w["measure_end"]) - int(w["measure_start"])) / 1000
    min_db, min_k6 = min_windows_s()
    fig.db_short, fig.k6_short = length < min_db, length < min_k6
    db, k6 = resource_queries(run.manifest.get("product", ""), run.testid,
                              int(w["measure_start"]), int(w["measure_end"]))
    at = _fmt_at(int(w["measure_end"]))
    def cores(expr):  # None without two samples apart, or across a restart (counter reset)
        v = _scalar(prom.query(expr, at))
        return v if v is not None and math.isfinite(v) and v >= 0 else None
    fig.db_cores = None if fig.db_short else cores(db)
    fig.k6_cores = None if fig.k6_short else cores(k6)


def run_figures(prom, run, sample=False):
    """[StepFigures] of a run; ReportError naming the testid when Prometheus has no data, unless
    the run is one sample of several (`sample`): then its figures are k6's own summary, noted."""
    out, missing = [], []
    for step in run.steps:
        f = step_figures(prom, run.testid, step)
        if f is None:
            missing.append(step)
        else:
            step_resources(prom, run, f)
            out.append(f)
    if missing and (len(missing) < len(run.steps) or sample):
        # Prometheus missed some steps (down while they ran): their figures come from k6's summary
        # in the manifest, and the report says so (tidbbench/report/disturb.py)
        from tidbbench.report.disturb import fallback_figures, fallback_note
        factor = max((f.bucket_factor for f in out), default=DEFAULT_BUCKET_FACTOR)
        out += [fallback_figures(StepFigures, s, factor) for s in missing]
        for s in missing:
            print(f"note: {fallback_note(run, s)}", file=sys.stderr)
        order = [int(s["threads"]) for s in run.steps]
        out.sort(key=lambda f: order.index(f.threads))
        missing = []
    if missing:
        from tidbbench.report.fmt import utc
        s = missing[0]
        what = "no data" if len(missing) == len(run.steps) else \
            f"no data for thread step(s) {', '.join(str(m['threads']) for m in missing)}"
        raise ReportError(
            f"Prometheus at {prom.url} has {what} for testid '{run.testid}' in its time range "
            f"{utc(run.manifest.get('run_start') or s['window']['measure_start'])} to "
            f"{utc(run.manifest.get('run_end') or missing[-1]['window']['measure_end'])} "
            f"(series k6_oltp_queries_total{{testid=\"{run.testid}\",warmup=\"false\"}}); was it run with "
            "remote write to this Prometheus (scripts/k6), and is the data still retained?", code=3)
    return out


def crosscheck(run, figs):
    """Warnings where Prometheus and k6's summary disagree: QPS by more than 2%, p95 by more
    than the histogram's bucket resolution."""
    warnings = []
    for f in figs:
        if f.source != "prometheus":
            continue  # k6's own figures: nothing to check them against
        k6_qps = f.k6.get("qps")
        if k6_qps:
            d = (f.qps - k6_qps) / k6_qps
            if abs(d) > QPS_TOLERANCE:
                warnings.append(f"{run.workload} (testid {run.testid}), {f.threads} threads: QPS from Prometheus "
                                f"{f.qps:.2f} differs from k6's summary {k6_qps:.2f} by {d * 100:+.2f}% (over 2%)")
        k6_p95 = (f.k6.get("latency_ms") or {}).get("p95")
        if k6_p95 and f.p95_ms:
            ratio = max(f.p95_ms, k6_p95) / min(f.p95_ms, k6_p95)
            # k6's p95 is sysbench's bucket value (buckets sbhist.FACTOR wide) when the manifest
            # has the sysbench histogram; older manifests carry k6's exact Trend percentile
            width = f.bucket_factor * (sbhist.FACTOR if f.pct_ms is not None else 1.0)
            if ratio > width * (1 + 1e-9):
                warnings.append(f"{run.workload} (testid {run.testid}), {f.threads} threads: p95 from Prometheus "
                                f"{f.p95_ms:.2f} ms differs from k6's summary {k6_p95:.2f} ms by a factor of "
                                f"{ratio:.3f} (over the histogram's bucket resolution {f.bucket_factor:.4f})")
    return warnings
