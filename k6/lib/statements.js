// The statements behind a step's QPS: per thread step, the target's statement digests of the
// run's own database (option mysql_db) with their executions, total and average latency and
// plan digest over the step's measured window, the top `statements_top` by total latency.
//
// One extra VU (scenario `statements`, on the first load generator only) reads the target's
// cumulative statement summary twice per step, on a connection of its own whose default
// database is information_schema (so its own statements are recorded under that schema, never
// the run's), and sleeps in between: no benchmark thread waits for it, and nothing it does is
// counted in the oltp_* metrics. The step's figures are the difference of the two snapshots:
//   - TiDB: information_schema.CLUSTER_STATEMENTS_SUMMARY_HISTORY (every TiDB of the cluster;
//     STATEMENTS_SUMMARY_HISTORY when the cluster table cannot be read), which holds the current
//     summary window too, so a window that rolls over between the snapshots is still counted
//     whole: rows are told apart by instance, window, digest and plan digest. Latencies in ns.
//   - MySQL, MariaDB: performance_schema.events_statements_summary_by_digest (one row per
//     schema and digest since the table was last reset; FIRST_SEEN tells a reset row from the
//     old one). Latencies in ps. No plan digest.
// A counter that goes down, or a row of the first snapshot missing from the second (the summary
// reset or its entries evicted, the server restarted), makes the step's statements `partial`
// (its figures are then the rows that could be differenced) instead of negative numbers.
// Averages are total / executions of the step; max and p95 (MySQL 8's QUANTILE_95) are
// cumulative on the server, so they are given only for digests first seen within the step.
//
// The snapshots reach handleSummary (another JavaScript runtime) as k6/x/tbs's process-wide
// notes (JSON under a name per step and phase). Nothing here ever fails the run: a failed
// read becomes {available: false, why}.
import exec from 'k6/execution';
import { sleep } from 'k6';
import sql from 'k6/x/sql';
import driver from 'k6/x/sql/driver/mysql';
import tbs from 'k6/x/tbs';
import { dsn } from './config.js';
import { asText } from './target.js';
import { gateNames, gateParties } from './steps.js';

const PREFIX = 'statements/';
const TEXT_MAX = 400; // characters of a digest text kept in the manifest
const PLAN_MAX = 3000; // characters of a plan (TiDB's PLAN column) kept in the manifest
const BEFORE_LOAD_MS = 250; // the start snapshot this long before the load begins (no warm-up)
const BEFORE_NEXT_MS = 250; // the end snapshot this long before the next step's connect phase
const ROWS_MAX = 5000; // rows read per snapshot at most

// statementsScenario(o, totalSeconds) -> the `statements` scenario (none with statements_top=0):
// one VU per load generator (as the monitor: execution segments split a scenario's VUs), of
// which only the first load generator's reads (capture).
export function statementsScenario(o, totalSeconds) {
  if (!o.statements_top) return {};
  const n = Math.max(1, Math.floor(Number(__ENV.TBS_INSTANCES) || 1));
  return {
    statements: {
      executor: 'per-vu-iterations', exec: 'statements', vus: n, iterations: 1,
      maxDuration: `${totalSeconds + 15}s`, gracefulStop: '0s', tags: { statements: 'true' },
    },
  };
}

// snapshotTimes(o, w) -> [start, end] (ms from the scenarios' start) of step window w: the
// measured window's start (just before the load when there is no warm-up: the connect phase
// runs no statement of the workload), and after the step's graceful tail, when its last
// events have ended (k6 counts those in the step too), before the next step connects.
export function snapshotTimes(o, w) {
  const start = o.warmup_time > 0 ? w.measure_start : Math.max(w.connect, w.start - BEFORE_LOAD_MS);
  const end = Math.max(w.measure_end, w.end - BEFORE_NEXT_MS);
  return [start, end];
}

const num = (v) => {
  const x = Number(asText(v));
  return Number.isFinite(x) ? x : 0;
};
const col = (r, k) => (r[k] !== undefined ? r[k] : r[k.toUpperCase()]);

function tidbQuery(table) {
  const inst = table.startsWith('CLUSTER_') ? 'INSTANCE' : "''";
  return `SELECT ${inst} AS inst, SUMMARY_BEGIN_TIME AS win, DIGEST AS d, PLAN_DIGEST AS pd, EXEC_COUNT AS n, ` +
    'SUM_LATENCY AS lat, MAX_LATENCY AS mx, PLAN_CACHE_HITS AS hits, SUM_ERRORS AS err, ' +
    // the plan's text only for the current window's rows (the step's): the older windows' rows
    // are there for their counts
    "AVG_PROCESSED_KEYS * EXEC_COUNT AS rowsx, DIGEST_TEXT AS txt, IF(SUMMARY_END_TIME >= NOW(), PLAN, '') AS plan " +
    `FROM information_schema.${table} WHERE SCHEMA_NAME = ? LIMIT ${ROWS_MAX}`;
}

function mysqlQuery(quantile) {
  return 'SELECT \'\' AS inst, FIRST_SEEN AS win, DIGEST AS d, \'\' AS pd, COUNT_STAR AS n, SUM_TIMER_WAIT AS lat, ' +
    `MAX_TIMER_WAIT AS mx, SUM_ERRORS AS err, SUM_ROWS_EXAMINED AS rowsx, DIGEST_TEXT AS txt${quantile ? ', QUANTILE_95 AS p95' : ''} ` +
    `FROM performance_schema.events_statements_summary_by_digest WHERE SCHEMA_NAME = ? LIMIT ${ROWS_MAX}`;
}

const isOn = (v) => ['1', 'on', 'true'].includes(asText(v).trim().toLowerCase());

// Reader: the snapshots of one target. snapshot() -> {at, source, rows} | {at, unavailable} |
// {at, error}; a row is [instance, window, digest, plan digest, executions, total ms, max ms,
// plan cache hits, errors, rows examined, p95 ms, text, plan (TiDB's, as text)].
export class Reader {
  constructor(o, product) {
    this.o = o;
    this.product = product;
    this.db = null;
    this.query = null; // the query that worked, and its source and unit
  }

  open() {
    if (this.db) return this.db;
    // its own connection, default database information_schema; reads time out rather than
    // hold the run's end
    const d = `${dsn({ ...this.o, mysql_db: 'information_schema' })}&readTimeout=20s&writeTimeout=20s`;
    this.db = sql.open(driver, d, { max_open_conns: 1, max_idle_conns: 1 });
    return this.db;
  }

  close() {
    if (this.db) {
      try { this.db.close(); } catch (_) { /* gone */ }
    }
    this.db = null;
  }

  one(q) {
    const r = this.open().query(q)[0] || {};
    return r[Object.keys(r)[0]];
  }

  // why statements cannot be read from this target, or ''
  unavailable() {
    if (this.product === 'tidb') {
      return isOn(this.one('SELECT @@GLOBAL.tidb_enable_stmt_summary AS v')) ? ''
        : 'tidb_enable_stmt_summary is OFF (SET GLOBAL tidb_enable_stmt_summary = ON to record statements)';
    }
    if (!isOn(this.one('SELECT @@GLOBAL.performance_schema AS v'))) {
      return 'performance_schema is OFF (a startup option: performance_schema=ON in the server\'s configuration)';
    }
    try {
      const r = this.open().query("SELECT ENABLED AS e FROM performance_schema.setup_consumers WHERE NAME = 'statements_digest'");
      if (r.length && asText(r[0].e || r[0].E).toUpperCase() !== 'YES') {
        return 'the performance_schema consumer statements_digest is disabled (UPDATE performance_schema.setup_consumers SET ENABLED = \'YES\' WHERE NAME = \'statements_digest\')';
      }
    } catch (e) {
      return denied(e, this.o) || '';
    }
    return '';
  }

  candidates() {
    if (this.product === 'tidb') {
      return [['information_schema.cluster_statements_summary_history', tidbQuery('CLUSTER_STATEMENTS_SUMMARY_HISTORY'), 1e6],
        ['information_schema.statements_summary_history', tidbQuery('STATEMENTS_SUMMARY_HISTORY'), 1e6]];
    }
    return [['performance_schema.events_statements_summary_by_digest', mysqlQuery(true), 1e9],
      ['performance_schema.events_statements_summary_by_digest', mysqlQuery(false), 1e9]];
  }

  snapshot() {
    const at = Date.now();
    try {
      const why = this.unavailable();
      if (why) return { at, unavailable: why };
      let rows = null;
      let err = null;
      for (const c of this.query ? [this.query] : this.candidates()) {
        try {
          rows = this.open().query(c[1], this.o.mysql_db);
          this.query = c;
          break;
        } catch (e) {
          err = err || e;
        }
      }
      if (!rows) {
        const d = denied(err, this.o);
        return d ? { at, unavailable: d } : { at, error: message(err) };
      }
      const [source, , unit] = this.query;
      return { at, source, rows: rows.map((r) => toRow(r, unit)), truncated: rows.length >= ROWS_MAX };
    } catch (e) {
      this.close(); // a fresh connection next time
      return { at, error: message(e) };
    }
  }
}

function message(e) {
  return String((e && e.message) || e).replace(/^GoError: /, '').slice(0, 300);
}

// a privilege error -> the reason, naming the grant it needs
function denied(e, o) {
  const m = message(e);
  if (!/Error 114[23]|denied/i.test(m)) return '';
  return `the user '${o.mysql_user}' may not read performance_schema (${m}): GRANT SELECT ON performance_schema.* TO '${o.mysql_user}'`;
}

// a text column: the driver gives its bytes; they are UTF-8 (TiDB's plans draw their tree with
// box-drawing characters, and print µs)
function text(v) {
  const s = asText(v);
  if (!(v instanceof ArrayBuffer || Array.isArray(v)) || !/[\x80-\xff]/.test(s)) return s;
  try {
    return decodeURIComponent(s.replace(/%/g, '%25').replace(/[\x80-\xff]/g, (c) => `%${c.charCodeAt(0).toString(16)}`));
  } catch (_) {
    return s; // not UTF-8: as it came
  }
}

function toRow(r, unit) {
  const p95 = col(r, 'p95');
  return [asText(col(r, 'inst')), asText(col(r, 'win')), asText(col(r, 'd')), asText(col(r, 'pd')),
    num(col(r, 'n')), num(col(r, 'lat')) / unit, num(col(r, 'mx')) / unit, num(col(r, 'hits')),
    num(col(r, 'err')), num(col(r, 'rowsx')), p95 === undefined || p95 === null ? null : num(p95) / unit,
    text(col(r, 'txt')).slice(0, TEXT_MAX), text(col(r, 'plan')).slice(0, PLAN_MAX)];
}

// capture: the statements VU's one iteration: two snapshots per step (snapshotTimes), kept as
// notes for handleSummary. Only the first load generator (lane 0) reads.
//
// A step that begins once its VUs are connected (steps.js gateParties) has no fixed start: without
// a warm-up this VU takes the start snapshot when all the step's VUs have connected and is the
// last party of the step's start barrier (the load begins after the snapshot); with a warm-up it
// waits for the load's start and snapshots when the warm-up ends.
export function capture(o, data, windows) {
  if (data.lane !== 0) return;
  const base = exec.scenario.startTime; // the scenarios' start: this scenario's startTime is 0
  const reader = new Reader(o, data.product);
  const save = (w, phase) => tbs.note(`${PREFIX}${data.testid}/t${w.threads}/${phase}`, JSON.stringify(reader.snapshot()));
  const until = (t) => { const wait = t - Date.now(); if (wait > 0) sleep(wait / 1000); };
  try {
    for (const w of windows) {
      const times = snapshotTimes(o, w);
      const parties = gateParties(o, data, w.threads);
      if (parties) {
        const gates = gateNames(data.testid, w.threads);
        until(base + w.connect);
        if (o.warmup_time === 0) {
          tbs.barrier(gates.connected, w.threads).wait(base + w.start);
          try { save(w, 'start'); } finally { tbs.barrier(gates.go, parties).arrive(); }
        } else {
          const go = tbs.barrier(gates.go, parties).wait(base + w.start);
          until((go > 0 ? Math.min(go, base + w.start) : base + w.start) + o.warmup_time * 1000);
          save(w, 'start');
        }
      } else {
        until(base + times[0]);
        save(w, 'start');
      }
      until(base + times[1]);
      save(w, 'end');
    }
  } finally {
    reader.close();
  }
}

function rowKey(r) {
  return `${r[0]}\u0000${r[1]}\u0000${r[2]}\u0000${r[3]}`;
}

// diffSnapshots(a, b, top) -> the step's statements from its start and end snapshots (pure:
// tests/test_statements.py runs it on made-up snapshots).
export function diffSnapshots(a, b, top) {
  const out = { available: true, source: b.source || a.source, at: [a.at, b.at] };
  const before = new Map();
  for (const r of a.rows) before.set(rowKey(r), r);
  const groups = new Map();
  const seen = new Set();
  let down = 0;
  for (const r of b.rows) {
    const k = rowKey(r);
    seen.add(k);
    const p = before.get(k);
    if (p && (r[4] < p[4] || r[5] < p[5] - 1e-6)) { down++; continue; }
    const n = r[4] - (p ? p[4] : 0);
    if (n <= 0) continue;
    const g = `${r[2]}\u0000${r[3]}`;
    let s = groups.get(g);
    if (!s) {
      s = { digest: r[2], plan_digest: r[3] || null, text: r[11], executions: 0, total_ms: 0, fresh: true,
        max_ms: 0, p95_ms: null, plan_cache_hits: 0, errors: 0, rows_examined: 0, plan: r[12] || '' };
      groups.set(g, s);
    }
    s.executions += n;
    s.total_ms += r[5] - (p ? p[5] : 0);
    s.plan_cache_hits += Math.max(0, r[7] - (p ? p[7] : 0));
    s.errors += Math.max(0, r[8] - (p ? p[8] : 0));
    s.rows_examined += Math.max(0, r[9] - (p ? p[9] : 0));
    if (p) s.fresh = false;
    s.max_ms = Math.max(s.max_ms, r[6]);
    if (r[10] !== null) s.p95_ms = s.p95_ms === null ? r[10] : Math.max(s.p95_ms, r[10]);
    if (r[11].length > s.text.length) s.text = r[11];
    if (!s.plan && r[12]) s.plan = r[12];
  }
  let gone = 0;
  for (const [k, p] of before) if (!seen.has(k) && p[4] > 0) gone++;
  const all = [...groups.values()];
  out.digests = all.length;
  out.executions = all.reduce((x, s) => x + s.executions, 0);
  out.total_ms = all.reduce((x, s) => x + s.total_ms, 0);
  out.top_n = top;
  out.top = all.sort((x, y) => y.total_ms - x.total_ms).slice(0, top).map((s) => ({
    digest: s.digest,
    plan_digest: s.plan_digest,
    text: s.text,
    executions: s.executions,
    total_ms: s.total_ms,
    avg_ms: s.total_ms / s.executions,
    // cumulative on the server: the step's own only when the digest was first seen in it
    max_ms: s.fresh ? s.max_ms : null,
    p95_ms: s.fresh ? s.p95_ms : null,
    plan_cache_hits: out.source && out.source.startsWith('information_schema') ? s.plan_cache_hits : null,
    errors: s.errors,
    rows_examined: s.rows_examined,
    ...(s.plan_digest && s.plan ? { plan: s.plan } : {}),
  }));
  const why = [];
  if (down) why.push(`${down} row(s) of the statement summary went down between the step's snapshots`);
  if (gone) why.push(`${gone} row(s) of the step's first snapshot were gone at its end`);
  if (b.truncated || a.truncated) why.push(`a snapshot hit the ${ROWS_MAX}-row limit`);
  if (why.length) {
    out.partial = `${why.join('; ')} (the summary was reset, entries evicted or the server restarted): ` +
      'these figures count only what could be differenced';
  }
  return out;
}

// stepStatements(notes, testid, threads, top) -> the step's `statements` for the manifest
// (notes: tbs.notes()); undefined when this process read none (statements_top=0, another load
// generator).
export function stepStatements(notes, testid, threads, top) {
  const snaps = {};
  for (const phase of ['start', 'end']) {
    const text = notes[`${PREFIX}${testid}/t${threads}/${phase}`];
    if (text !== undefined) snaps[phase] = JSON.parse(text);
  }
  const a = snaps.start;
  const b = snaps.end;
  if (!a && !b) return undefined;
  if (!b) return { available: false, why: 'the run ended before the step\'s second snapshot' };
  if (!a) return { available: false, why: 'the step\'s first snapshot is missing' };
  for (const [s, when] of [[a, 'start'], [b, 'end']]) {
    if (s.unavailable) return { available: false, why: s.unavailable };
    if (s.error) return { available: false, why: `reading the statement summary failed at the step's ${when}: ${s.error}` };
  }
  return diffSnapshots(a, b, top);
}
