"""The history's embedded index, results/history.sqlite (standard library sqlite3): every run
manifest (results/<testid>.json: a run, a sweep's or a plan's sample, a merged multi-instance run)
as one row of `runs`, each of its thread steps as one row of `points`, and the change points
found in each series (`change_points`, written by tidbbench/history/cp.py through
`replace_change_points`). The results files stay the truth: the index is derived from them and
`rebuild` makes it again. Every write is one transaction, so a failed ingest leaves the index as
it was.

The tables are a contract (docs/history.md): helper code mirrors them into PostgreSQL and a
Grafana dashboard reads them there, so names and columns only ever grow at the end.

A series is one workload x thread step x options x target: runs whose options differ (any k6
option but the ones naming the run, its target or its thread steps: SERIES_FREE) never share a
series, unless the user lists the option with `--ignore-option` (kept in the index's `meta`)."""
import datetime
import hashlib
import json
import os
import re
import sqlite3
from pathlib import Path

from tidbbench import ReportError, commands
from tidbbench.history import schema
from tidbbench.report.differs import VOLATILE  # variables that change by themselves: not in the fingerprint

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs(
  run_key TEXT PRIMARY KEY, testid TEXT, started_at TEXT, target TEXT, product TEXT, version TEXT,
  git_hash TEXT, fingerprint TEXT, host TEXT, source_file TEXT, source_sha256 TEXT, ingested_at TEXT);
CREATE TABLE IF NOT EXISTS points(
  run_key TEXT, series TEXT, workload TEXT, threads INTEGER, options_hash TEXT, target TEXT,
  qps REAL, tps REAL, p95_ms REAL, p99_ms REAL, errors_per_s REAL,
  client_cpu_per_query REAL, server_cpu_per_query REAL,
  PRIMARY KEY(run_key, series));
CREATE TABLE IF NOT EXISTS change_points(
  series TEXT, metric TEXT, run_key_before TEXT, run_key_after TEXT, at TEXT,
  mean_before REAL, mean_after REAL, magnitude_pct REAL, ci_low_pct REAL, ci_high_pct REAL, pvalue REAL,
  direction TEXT, evidence TEXT,
  PRIMARY KEY(series, metric, run_key_after));
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE INDEX IF NOT EXISTS points_series ON points(series);
"""
RUN_COLS = ["run_key", "testid", "started_at", "target", "product", "version", "git_hash", "fingerprint", "host",
            "source_file", "source_sha256", "ingested_at"]
POINT_COLS = schema.columns("points")  # SCHEMA's, then the TPC-C figures (added by grow())
CP_COLS = ["series", "metric", "run_key_before", "run_key_after", "at", "mean_before", "mean_after", "magnitude_pct",
           "ci_low_pct", "ci_high_pct", "pvalue", "direction", "evidence"]

# options that name the run, its target (the series' own `target`), its thread steps (the series'
# own `threads`) or only how it is printed or prepared: never part of a series' options hash
SERIES_FREE = {"workload", "threads", "testid", "results_dir", "mysql_password", "mysql_password_file", "mysql_host",
               "mysql_port", "mysql_db", "start_at", "version", "command", "recreate", "prepare_batch", "prepare_mode",
               "report_interval", "mysql_ssl_ca", "tidb_status_addr", "tikv_status_addr", "pd_addr"}
INSTANCE_RE = re.compile(r"\.instance-\d+\.json$")
GIT_RE = re.compile(r"Git Commit Hash:\s*([0-9a-f]{7,40})", re.I)


def iso(ms):
    """epoch ms -> ISO-8601 UTC (seconds, 'Z')."""
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_iso():
    return iso(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)


def default_index(results):
    return Path(results) / "history.sqlite"


def connect(path, create=False):
    """The index at `path`; ReportError (exit 2) when it is missing (create=False) or not an index."""
    p = Path(path)
    if not p.is_file() and not create:
        raise ReportError(f"no history index {p}: nothing has been ingested; run `scripts/history ingest` "
                          "(it indexes the run manifests of results/)", code=2)
    try:
        conn = sqlite3.connect(str(p), timeout=30)
        conn.executescript(SCHEMA)
        grow(conn)
    except sqlite3.DatabaseError as e:
        raise ReportError(f"{p} is not a history index ({e}): move it away and run `scripts/history rebuild`", code=2)
    conn.row_factory = sqlite3.Row
    return conn


def grow(conn):
    """Adds the columns schema.py has and the index lacks (an index made before TPC-C's figures
    existed, or SCHEMA's tables), at the end, in schema.py's order: the tables only ever grow."""
    with conn:
        for t in schema.ORDER:
            have = [r[1] for r in conn.execute(f"PRAGMA table_info({t})")]
            for c, st, _ in schema.grown_columns(t, have):
                conn.execute(f"ALTER TABLE {t} ADD COLUMN {c} {st}")


def meta_get(conn, key, default=None):
    r = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return json.loads(r["value"]) if r else default


def meta_set(conn, key, value):
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value)))


# -- reading a results folder

def scan(paths, bad=None):
    """[(kind, path, data)] of the JSON files under the given folders or files: kind "run" (a run
    manifest with thread steps), "sweep" (lists runs), "skip" (a per-instance file, a plan, a run
    without steps: data says why). A file that is not JSON, or JSON that is none of these, raises
    ReportError naming it (exit 2); with a list `bad`, its message is appended there instead and
    the file is left out."""
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.glob("*.json") if f.is_file())
        elif p.is_file():
            files.append(p)
        else:
            raise ReportError(f"no such results folder or file: {p}", code=2)
    out = []
    for f in files:
        try:
            out += _classify(f)
        except ReportError as e:
            if bad is None:
                raise
            bad.append(str(e))
    return out


def _classify(f):
    """[(kind, path, data)] of one file (see scan)."""
    if INSTANCE_RE.search(f.name):
        return [("skip", f, "one instance of a split run (its merged results/<testid>.json is the run)")]
    try:
        m = json.loads(f.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"corrupt results file {f}: not valid JSON ({e}); nothing was ingested "
                          "(fix or move it away, or give --skip-bad)", code=2)
    if not isinstance(m, dict):
        raise ReportError(f"corrupt results file {f}: a JSON object is expected; nothing was ingested", code=2)
    if "runs" in m:
        return [("sweep", f, m)]
    if "arms" in m:
        return [("skip", f, "a plan manifest (its samples are run manifests of their own)")]
    if "steps" in m:
        if not isinstance(m["steps"], list):
            raise ReportError(f"corrupt results file {f}: 'steps' is not a list; nothing was ingested", code=2)
        if not m["steps"]:
            return [("skip", f, "a run without thread steps (it stopped before its first step)")]
        return [("run", f, m)]
    raise ReportError(f"corrupt results file {f}: neither a run manifest (steps) nor a sweep (runs); "
                      "nothing was ingested", code=2)


def target_of(m):
    t = m.get("target") or {}
    return f"{t.get('host', '?')}:{t.get('port', '?')}/{t.get('db', '?')}"


def options_hash(options, ignore=()):
    keep = {k: commands.value_text(v) for k, v in sorted((options or {}).items())
            if k not in SERIES_FREE and k not in ignore}
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:8]


def fingerprint_parts(m, entry=None, sweep=None):
    """What the run recorded about its settings, as the "what differs" section compares them: the
    global variables (less the volatile ones), version, options, the load generator's host and
    the sample's host, the data (reset, ANALYZE)."""
    load_generator = m.get("load_generator") or {}
    host = (entry or {}).get("host") or {}
    return {
        "variables": {k: v for k, v in (m.get("target_variables") or {}).items() if k not in VOLATILE},
        "version": m.get("version_full") or m.get("version") or "",
        "product": m.get("product", ""),
        "options": {k: commands.value_text(v) for k, v in (m.get("options") or {}).items()
                    if k not in commands.NEVER and k != "mysql_password"},
        "host": {k: load_generator.get(k) for k in ("hostname", "cpu_model", "cpu_cores", "memory_gib", "gomaxprocs", "k6")}
        | {f"sample_{k}": host.get(k) for k in ("kernel", "cores", "memory_gib")},
        "data": {k: (sweep or {}).get(k) for k in ("reset", "analyze")},
    }


def fingerprint(m, entry=None, sweep=None):
    return hashlib.sha256(json.dumps(fingerprint_parts(m, entry, sweep), sort_keys=True, default=str)
                          .encode()).hexdigest()[:16]


def git_hash(m):
    g = GIT_RE.search(m.get("version_full") or "")
    if g:
        return g.group(1)
    # TiDB's development builds carry the commit in the version: v1.1.0-beta.0.<date>-<hash>
    g = re.search(r"-([0-9a-f]{12,40})(?:\+|$)", m.get("version") or "")
    return g.group(1) if g else ""


def started_ms(m):
    if isinstance(m.get("run_start"), (int, float)):
        return m["run_start"]
    w = (m["steps"][0].get("window") or {})
    return w.get("step_start") or w.get("measure_start") or 0


def _num(x):
    return float(x) if isinstance(x, (int, float)) else None


def tpcc_step_point(step):
    """A TPC-C step's figures (k6/lib/tpccsummary.js): tpmC, tpmTotal, TPS (committed transactions
    per second), errors per second and each transaction type's p95 and p99 (our histogram, as every
    OLTP step's latency); no QPS, no per-query figures."""
    el = _num(step.get("elapsed_s")) or _num(step.get("seconds"))
    tx, errors = _num(step.get("transactions")), _num(step.get("errors"))
    out = {"qps": None, "tps": tx / el if tx is not None and el else None, "p95_ms": None, "p99_ms": None,
           "errors_per_s": errors / el if errors is not None and el else None,
           "client_cpu_per_query": None, "server_cpu_per_query": None,
           "tpmc": _num(step.get("tpmC")), "tpm_total": _num(step.get("tpmTotal"))}
    txns = step.get("txns") or {}
    for t in schema.TPCC_TXNS:
        lat = (txns.get(t) or {}).get("latency_ms") or {}
        for q in ("p95", "p99"):
            out[f"{t}_{q}_ms"] = _num(lat.get(q))
    return out


def step_point(m, step):
    """The figures of one thread step, from the manifest (k6's own summary of the step)."""
    if m.get("workload") == "tpcc":
        return tpcc_step_point(step)
    el = _num(step.get("elapsed_s")) or _num(step.get("seconds"))
    lat = step.get("latency_ms") or {}
    qps = _num(step.get("qps"))
    q_total = _num((step.get("queries") or {}).get("total"))
    cpu = _num(step.get("client_cpu_s"))
    errors = _num(step.get("errors"))
    return {
        "qps": qps, "tps": _num(step.get("tps")), "p95_ms": _num(lat.get("p95")), "p99_ms": _num(lat.get("p99")),
        "errors_per_s": errors / el if errors is not None and el else None,
        "client_cpu_per_query": cpu / q_total if cpu is not None and q_total else None,
        "server_cpu_per_query": None,
    } | {c: None for c, _, _ in schema.TPCC_COLUMNS}


def throughput(m, step):
    """A step's main figure: QPS, or a TPC-C step's tpmC (what `vs_ref` divides)."""
    return _num(step.get("tpmC")) if m.get("workload") == "tpcc" else _num(step.get("qps"))


def vs_ref(m, step, ref):
    """The step's throughput over the reference run's at the same thread step; None when the run
    has no reference, or either figure is missing or 0."""
    if not ref:
        return None
    theirs = next((s for s in ref.get("steps") or [] if s.get("threads") == step.get("threads")), None)
    mine, base = throughput(m, step), throughput(ref, theirs) if theirs else None
    return mine / base if mine is not None and base else None


DUET = "duet"  # what a duet sample's options hash adds: it ran beside its partner, a series of its own


def run_rows(path, m, sha, entry=None, sweep=None, ignore=(), ref=None):
    """(runs row, [points rows]) of one run manifest; `ref` (testid, manifest): the reference run
    it is paired with (a plan's reference arm), which its points' vs_ref divides by."""
    testid = m.get("testid") or path.stem
    target = target_of(m)
    run = {"run_key": testid, "testid": testid, "started_at": iso(started_ms(m)), "target": target,
           "product": m.get("product", ""), "version": m.get("version", ""), "git_hash": git_hash(m),
           "fingerprint": fingerprint(m, entry, sweep), "host": (m.get("load_generator") or {}).get("hostname", ""),
           "source_file": str(path.resolve()), "source_sha256": sha, "ingested_at": now_iso()}
    workload = m.get("workload") or (m.get("options") or {}).get("workload", "")
    options = dict(m.get("options") or {})
    if (entry or {}).get("duet_with"):
        # a duet's run shared the host with its partner (half its CPU, on the local stack): its
        # figures are never on the level of a run alone, so it never shares that run's series
        options[DUET] = True
    oh = options_hash(options, ignore)
    points = []
    for s in m["steps"]:
        t = s.get("threads")
        if not isinstance(t, int):
            raise ReportError(f"corrupt results file {path}: a step without its thread count; nothing was ingested",
                              code=2)
        p = {"run_key": testid, "series": series_key(workload, t, oh, target), "workload": workload, "threads": t,
             "options_hash": oh, "target": target}
        p.update(step_point(m, s))
        p["ref_run_key"] = ref[0] if ref else None
        p["vs_ref"] = vs_ref(m, s, ref[1] if ref else None)
        points.append(p)
    return run, points


def series_key(workload, threads, ohash, target):
    return f"{workload}/{threads}t/{ohash}/{target}"


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class Ingest:
    """What one ingest did: counts and notes."""

    def __init__(self):
        self.added, self.replaced, self.unchanged, self.skipped, self.notes = 0, 0, 0, 0, []
        self.series = set()


def sweep_entries(found):
    """(folder, testid) -> (its sweep entry, the sweep manifest), and -> (the sweep, why) for the
    samples a plan rejected as disturbed and reran (tidbbench/sweep/plan.py): their reruns are the
    series' points, not they."""
    entries, rejected = {}, {}
    for kind, f, m in found:
        if kind != "sweep":
            continue
        for e in m.get("runs") or []:
            if isinstance(e, dict) and e.get("testid"):
                entries[(f.parent.resolve(), e["testid"])] = (e, m)
        for e in m.get("rejected") or []:
            if isinstance(e, dict) and e.get("testid"):
                rejected[(f.parent.resolve(), e["testid"])] = (m.get("sweep") or f.stem, e.get("rejected", ""))
    return entries, rejected


def reference_runs(entries):
    """(folder, testid) -> the testid of the reference sample it is paired with: a plan's sample
    of an arm other than the plan's `reference` arm, and that arm's sample of the same workload and
    round (its accepted one: a rerun's, when the plan reran it)."""
    ref_of = {}
    for (folder, testid), (e, m) in entries.items():
        if m.get("reference") and m.get("arm") == m["reference"]:
            ref_of[(folder, m.get("plan"), e.get("workload"), e.get("repeat"))] = testid
    out = {}
    for (folder, testid), (e, m) in entries.items():
        if m.get("reference") and m.get("arm") != m["reference"]:
            r = ref_of.get((folder, m.get("plan"), e.get("workload"), e.get("repeat")))
            if r:
                out[(folder, testid)] = r
    return out


def ingest(conn, paths, skip_bad=False, ignore=None, server_cpu=None):
    """Indexes the run manifests under `paths` in one transaction (all or nothing). A file
    indexed before with the same content is left as it is (idempotent); a testid indexed from
    another file with other content is the same run re-written (a re-merged split run) when its
    run_start is the same, and replaces it; else ReportError (a different run with that testid).
    `server_cpu(manifest, step) -> CPU seconds per query or None` adds the server's CPU (from
    Prometheus). Returns an Ingest."""
    res = Ingest()
    ignore = set(ignore if ignore is not None else meta_get(conn, "ignore_options", []))
    bad = [] if skip_bad else None
    found = scan(paths, bad)
    for b in bad or []:
        res.notes.append(f"skipped: {b}")
        res.skipped += 1
    entries, rejected = sweep_entries(found)
    refs = reference_runs(entries)
    runs_by_id = {(f.parent.resolve(), m.get("testid") or f.stem): m for kind, f, m in found if kind == "run"}
    seen = {}
    with conn:  # one transaction: commits at the end, rolls back on any exception
        meta_set(conn, "ignore_options", sorted(ignore))
        for kind, f, m in found:
            if kind == "skip":
                res.skipped += 1
                res.notes.append(f"skipped {f.name}: {m}")
                continue
            if kind != "run":
                continue
            rej = rejected.get((f.parent.resolve(), m.get("testid") or f.stem))
            if rej:
                res.skipped += 1
                res.notes.append(f"skipped {f.name}: {rej[0]} rejected it as disturbed ({rej[1]}) and reran it")
                continue
            sha = sha256(f)
            testid = m.get("testid") or f.stem
            if testid in seen and seen[testid] != sha:
                raise ReportError(f"testid '{testid}' is in two different files given to this ingest ({f}); "
                                  "nothing was ingested", code=2)
            seen[testid] = sha
            old = conn.execute("SELECT source_sha256, source_file, started_at FROM runs WHERE run_key = ?",
                               (testid,)).fetchone()
            entry, sweep = entries.get((f.parent.resolve(), testid), (None, None))
            ref_id = refs.get((f.parent.resolve(), testid))
            ref = (ref_id, runs_by_id.get((f.parent.resolve(), ref_id))) if ref_id else None
            try:
                run, points = run_rows(f, m, sha, entry, sweep, ignore, ref)
            except (KeyError, TypeError, AttributeError, ValueError) as e:
                raise ReportError(f"corrupt results file {f}: {type(e).__name__} {e}; nothing was ingested", code=2)
            if old and old["source_sha256"] == sha:
                missing = conn.execute("SELECT COUNT(*) FROM points WHERE run_key = ? AND server_cpu_per_query IS NULL",
                                       (testid,)).fetchone()[0]
                if server_cpu and missing:  # fill in what Prometheus did not answer before
                    for p, s in zip(points, m["steps"]):
                        v = server_cpu(m, s)
                        if v is not None:
                            conn.execute("UPDATE points SET server_cpu_per_query = ? WHERE run_key = ? AND series = ?",
                                         (v, testid, p["series"]))
                res.unchanged += 1
                continue
            if old:
                if old["started_at"] != run["started_at"]:
                    raise ReportError(
                        f"testid '{testid}' of {f} (started {run['started_at']}) is already in the history from "
                        f"{old['source_file']} (started {old['started_at']}): a different run with the same testid; "
                        "nothing was ingested (rename one of them)", code=2)
                conn.execute("DELETE FROM points WHERE run_key = ?", (testid,))
                conn.execute("DELETE FROM runs WHERE run_key = ?", (testid,))
                res.replaced += 1
            else:
                res.added += 1
            if server_cpu:
                for p, s in zip(points, m["steps"]):
                    p["server_cpu_per_query"] = server_cpu(m, s)
            conn.execute(f"INSERT INTO runs({','.join(RUN_COLS)}) VALUES ({','.join('?' * len(RUN_COLS))})",
                         [run[c] for c in RUN_COLS])
            for p in points:
                conn.execute(f"INSERT INTO points({','.join(POINT_COLS)}) VALUES ({','.join('?' * len(POINT_COLS))})",
                             [p[c] for c in POINT_COLS])
                res.series.add(p["series"])
    return res


def rebuild(index, sources, ignore, server_cpu=None, skip_bad=False):
    """A new index from the results files, built beside the old one and renamed over it at the end
    (the old one stays whole until then). Server CPU figures of unchanged files are carried over
    from the old index when Prometheus no longer has them."""
    index = Path(index)
    tmp = index.with_name(index.name + f".rebuild-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    old = {}
    if index.is_file():
        try:
            oc = connect(index)
            for r in oc.execute("SELECT p.run_key, p.series, r.source_sha256, p.server_cpu_per_query FROM points p "
                                "JOIN runs r USING(run_key) WHERE p.server_cpu_per_query IS NOT NULL"):
                old[(r[0], r[1], r[2])] = r[3]
            oc.close()
        except ReportError:
            pass
    try:
        conn = connect(tmp, create=True)
        res = ingest(conn, sources, skip_bad=skip_bad, ignore=ignore, server_cpu=server_cpu)
        with conn:
            for (rk, s, sha), v in old.items():
                conn.execute("UPDATE points SET server_cpu_per_query = ? WHERE run_key = ? AND series = ? AND "
                             "server_cpu_per_query IS NULL AND run_key IN (SELECT run_key FROM runs WHERE "
                             "source_sha256 = ?)", (v, rk, s, sha))
        conn.close()
        os.replace(tmp, index)
    finally:
        tmp.unlink(missing_ok=True)
    return res


# -- reading the index

def series_list(conn):
    """[{series, workload, threads, options_hash, target, runs, first, last}] by series."""
    return [dict(r) for r in conn.execute(
        "SELECT p.series, p.workload, p.threads, p.options_hash, p.target, COUNT(*) AS runs, "
        "MIN(r.started_at) AS first, MAX(r.started_at) AS last FROM points p JOIN runs r USING(run_key) "
        "GROUP BY p.series ORDER BY p.workload, p.target, p.options_hash, p.threads")]


def series_points(conn, series):
    """The series' points with their run, oldest first."""
    return [dict(r) for r in conn.execute(
        "SELECT p.*, r.started_at, r.testid, r.version, r.git_hash, r.fingerprint, r.source_file FROM points p "
        "JOIN runs r USING(run_key) WHERE p.series = ? ORDER BY r.started_at, r.run_key", (series,))]


def replace_change_points(conn, cells, rows, params=None):
    """Replaces the stored change points of the (series, metric) cells with `rows` (dicts of
    CP_COLS), in one transaction; `params` (the detection's) go to meta."""
    with conn:
        for s, m in cells:
            conn.execute("DELETE FROM change_points WHERE series = ? AND metric = ?", (s, m))
        for r in rows:
            conn.execute(f"INSERT INTO change_points({','.join(CP_COLS)}) VALUES ({','.join('?' * len(CP_COLS))})",
                         [r[c] for c in CP_COLS])
        if params is not None:
            meta_set(conn, "change_point_params", params)


def stored_change_points(conn, series=None):
    q = "SELECT * FROM change_points" + (" WHERE series = ?" if series else "") + " ORDER BY at, series, metric"
    return [dict(r) for r in conn.execute(q, (series,) if series else ())]
