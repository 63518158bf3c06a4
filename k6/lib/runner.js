// The engine shared by oltp.js and prepare.js: connection per VU, query counting by kind,
// sysbench's error handling (ignore list, restart of the event, reconnects), metrics, thread
// steps as k6 scenarios, and the per-step summary.
import sql from 'k6/x/sql';
import driver from 'k6/x/sql/driver/mysql';
import exec from 'k6/execution';
import { Counter, Gauge, Trend } from 'k6/metrics';
import { dsn, where } from './config.js';

// The metrics of docs/CONTRACT.md (Prometheus names get a k6_ prefix and a unit suffix).
export const metrics = {
  queries: new Counter('oltp_queries'),
  transactions: new Counter('oltp_transactions'),
  errors: new Counter('oltp_errors'),
  reconnects: new Counter('oltp_reconnects'),
  latency: new Trend('oltp_latency', true),
  marker: new Gauge('oltp_marker'),
};

// Connection-loss errors after which sysbench reconnects (oltp_common.lua's hook).
const LOST = new Set([2013, 2055, 2006, 2011]);

export function openDb(o) {
  // One pool per VU limited to one connection: one database connection per VU, as sysbench
  // has one per thread. It connects on first use.
  return sql.open(driver, dsn(o), { max_open_conns: 1, max_idle_conns: 1 });
}

// errorCode(e) -> MySQL error number, or a client error number for network failures
// (2003 cannot connect, 2013 lost connection), 'canceled' when k6 interrupted the call, or
// 'unknown'.
export function errorCode(e) {
  const m = String((e && e.message) || e);
  const r = /Error (\d{3,5})\b/.exec(m);
  if (r) return Number(r[1]);
  if (/context canceled|context deadline exceeded/.test(m)) return 'canceled';
  if (/dial tcp|connection refused|no such host|network is unreachable/.test(m)) return 2003;
  if (/invalid connection|bad connection|broken pipe|connection reset|EOF|use of closed network connection|i\/o timeout/i.test(m)) return 2013;
  return 'unknown';
}

// Conn counts queries by kind the way sysbench's driver classifies them: a statement that
// returned a result set is a read, one that changed rows is a write, anything else (BEGIN,
// COMMIT, a DELETE that found nothing) is other.
//
// Reads go through db.exec: the driver reads the whole result set off the wire and discards
// it, as sysbench's client buffers rows it never looks at, instead of turning every row into
// a JS object. Every statement sent through read() is a SELECT, which always returns a result
// set, so it counts as a read.
export class Conn {
  constructor(db) {
    this.db = db;
    // db.exec looked up once: every property access on a Go object builds a new function.
    this.ex = db.exec.bind(db);
    this.r = 0; this.w = 0; this.o = 0; this.tx = 0;
    this.inTx = false;
  }

  read(q, ...args) { this.ex(q, ...args); this.r++; }

  read1(q, a) { this.ex(q, a); this.r++; } // the hot paths, without rest/spread

  read2(q, a, b) { this.ex(q, a, b); this.r++; }

  write1(q, a) { this.counted(this.ex(q, a)); }

  write2(q, a, b) { this.counted(this.ex(q, a, b)); }

  write4(q, a, b, c, d) { this.counted(this.ex(q, a, b, c, d)); }

  counted(res) { if (res.rowsAffected() > 0) this.w++; else this.o++; }

  text(q) { this.counted(this.ex(q)); }

  begin() { this.ex('BEGIN'); this.o++; this.inTx = true; }

  commit() { this.ex('COMMIT'); this.o++; this.inTx = false; }

  // After a failed statement inside a transaction: roll back before the event restarts,
  // so nothing of the failed attempt is committed by the next BEGIN.
  rollback() {
    if (!this.inTx) return;
    this.inTx = false;
    try { this.ex('ROLLBACK'); this.o++; } catch (_) { /* the connection is gone */ }
  }

  // flush adds the counts gathered since the last flush to the metrics (events run in
  // batches; runEvents flushes at least every FLUSH_MS and at every step boundary).
  flush() {
    if (this.r) metrics.queries.add(this.r, READ);
    if (this.w) metrics.queries.add(this.w, WRITE);
    if (this.o) metrics.queries.add(this.o, OTHER);
    if (this.tx) metrics.transactions.add(this.tx);
    this.r = 0; this.w = 0; this.o = 0; this.tx = 0;
  }
}

const NO_TAGS = {};
const READ = { kind: 'read' };
const WRITE = { kind: 'write' };
const OTHER = { kind: 'other' };
// k6/execution builds a new object on every `exec.instance` access; its accessors read live
// state, so one object per VU serves every call. currentTestRunDuration: ms, ns resolution.
let instance = null;
const now = () => (instance || (instance = exec.instance)).currentTestRunDuration;

// runEvent runs one sysbench event to completion: on an ignored error it rolls back and
// restarts the event (reconnecting first after a lost connection), as sysbench does; any
// other error aborts the whole test with sysbench's kind of message. `start` is now().
// Returns the event's end (now()), or -1 when k6 interrupted the event at the end of a step.
export function runEvent(conn, event, w, o, start) {
  for (;;) {
    try {
      event(conn, w);
      const end = now();
      conn.tx++;
      metrics.latency.add(end - start);
      return end;
    } catch (e) {
      conn.flush();
      const code = errorCode(e);
      if (code === 'canceled') return -1;
      const ignored = o.mysql_ignore_errors === 'all' || o.mysql_ignore_errors.includes(code);
      metrics.errors.add(1, { code: String(code), ignored: String(ignored) });
      if (!ignored) {
        const msg = `error ${code} from ${where(o)}: ${String(e.message || e).replace(/^GoError: /, '')}`;
        console.error(`FATAL: ${msg}`);
        exec.test.abort(msg);
      }
      conn.rollback();
      if (LOST.has(code)) metrics.reconnects.add(1, NO_TAGS);
      // restart the event
    }
  }
}

// How often a VU running events back to back adds its counts to the metrics (ms).
export const FLUSH_MS = 200;
// The longest batch of events in one k6 iteration (ms): k6's per-iteration work is spread
// over thousands of events, and k6's own iteration metrics still tick every second.
export const BATCH_MS = 1000;

// runEvents runs events back to back until `until` (epoch ms; at least one event), the
// way a sysbench thread loops, without k6's per-iteration cost on every event. The query
// and transaction counts go to the metrics every FLUSH_MS and when it returns, so a
// caller that ends the batch at a step boundary gets exact counts on each side of it; each
// event's latency is one sample. Returns false when k6 interrupted an event.
export function runEvents(conn, event, w, o, until) {
  let t = now();
  const stop = until - (Date.now() - t); // on the now() clock
  let flushAt = t + FLUSH_MS;
  do {
    t = runEvent(conn, event, w, o, t);
    if (t < 0) { conn.flush(); return false; }
    if (t >= flushAt) { conn.flush(); flushAt = t + FLUSH_MS; }
  } while (t < stop);
  conn.flush();
  return true;
}

// ---------------------------------------------------------------- thread steps

export const GRACE_S = 3; // a step's in-flight events may finish; the next step starts after

// stepScenarios(o, exec) -> k6 scenarios: one per thread step, run one after another, each
// `warmup_time + time` long (warm-up first, tagged warmup=true).
export function stepScenarios(o, fn = 'default') {
  const scenarios = {};
  let offset = 0;
  for (const n of o.threads) {
    scenarios[`t${n}`] = {
      executor: 'constant-vus', exec: fn, vus: n,
      duration: `${o.warmup_time + o.time}s`, startTime: `${offset}s`, gracefulStop: `${GRACE_S}s`,
      tags: { threads: String(n) },
    };
    offset += o.warmup_time + o.time + GRACE_S;
  }
  return scenarios;
}

// The step windows, relative to the start of the scenarios (ms).
export function stepWindows(o) {
  let offset = 0;
  return o.threads.map((n) => {
    const w = { threads: n, start: offset, measure_start: offset + o.warmup_time * 1000 };
    w.measure_end = w.measure_start + o.time * 1000;
    offset += (o.warmup_time + o.time + GRACE_S) * 1000;
    return w;
  });
}

// Submetrics per step (thresholds without conditions make k6 track them for the summary).
export function stepThresholds(o) {
  const th = {};
  for (const n of o.threads) {
    const sel = `threads:${n},warmup:false`;
    for (const m of ['oltp_queries', 'oltp_transactions', 'oltp_errors', 'oltp_reconnects', 'oltp_latency']) th[`${m}{${sel}}`] = [];
    for (const k of ['read', 'write', 'other']) th[`oltp_queries{${sel},kind:${k}}`] = [];
  }
  return th;
}

export function newTestId() {
  const d = new Date();
  const p = (x) => String(x).padStart(2, '0');
  const rnd = Math.floor(Math.random() * 0x10000).toString(16).padStart(4, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}-${rnd}`;
}

// ---------------------------------------------------------------- target checks

// connectOrExplain runs a first query and turns a connection failure into a message that
// names host, port and user (never the password).
export function connectOrExplain(db, o) {
  try {
    return db.query('SELECT VERSION() AS v')[0].v;
  } catch (e) {
    const m = String(e.message || e).replace(/^GoError: /, '');
    throw new Error(`cannot connect to MySQL at ${where(o)}: ${m}`);
  }
}

export function asText(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (v instanceof ArrayBuffer) return String.fromCharCode.apply(null, new Uint8Array(v));
  if (Array.isArray(v)) return String.fromCharCode.apply(null, v);
  return String(v);
}

// targetInfo(db) -> { product: 'tidb'|'mysql', version, full }: version is the release for
// TiDB (from tidb_version()) and VERSION() otherwise.
export function targetInfo(db, versionString) {
  const v = asText(versionString);
  try {
    const full = asText(db.query('SELECT tidb_version() AS v')[0].v);
    const rel = /Release Version:\s*(\S+)/.exec(full);
    return { product: 'tidb', version: rel ? rel[1] : v, full };
  } catch (_) {
    return { product: /mariadb/i.test(v) ? 'mariadb' : 'mysql', version: v, full: v };
  }
}

export function existingTables(db) {
  const rows = db.query("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'sbtest%'");
  return new Set(rows.map((r) => asText(r.t || r.T || r.TABLE_NAME || r.table_name)));
}

// The target's global variables at the start of a run (for the run manifest, as the seeds
// list their settings).
export function globalVariables(db) {
  const out = {};
  try {
    for (const r of db.query('SHOW GLOBAL VARIABLES')) {
      out[asText(r.Variable_name)] = asText(r.Value);
    }
  } catch (e) {
    out['(error)'] = String(e.message || e);
  }
  return out;
}

// hostFacts: the load generator's CPU model, cores and memory, and k6's version. k6 cannot
// read /proc, so scripts/k6 passes them in TBS_HOST_FACTS (JSON); a stock k6 run has none.
export function hostFacts() {
  try {
    return JSON.parse(__ENV.TBS_HOST_FACTS || '{}');
  } catch (_) {
    return {};
  }
}
