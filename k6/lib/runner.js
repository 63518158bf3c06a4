// The engine shared by oltp.js and prepare.js: a connection per VU, query counting by kind,
// sysbench's error handling (ignore list, restart of the event, reconnects), metrics, thread
// steps as k6 scenarios, and what a step needs before its measured window: fresh
// connections with the workload's statements prepared.
import sql from 'k6/x/sql';
import driver from 'k6/x/sql/driver/mysql';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter, Gauge } from 'k6/metrics';
import tbs from 'k6/x/tbs';
import { dsn, where, CONTRACT } from './config.js';

// The metrics of docs/CONTRACT.md (Prometheus names get a k6_ prefix and a unit suffix).
// The event latency (oltp_latency, a Trend) is sent by k6/x/tbs's recorder, which also
// adds it to the step's sysbench histogram.
export const metrics = {
  queries: new Counter('oltp_queries'),
  transactions: new Counter('oltp_transactions'),
  errors: new Counter('oltp_errors'),
  reconnects: new Counter('oltp_reconnects'),
  marker: new Gauge('oltp_marker'),
};

// Connection-loss errors after which sysbench reconnects when they are ignored
// (drv_mysql.c check_error: CR_SERVER_LOST, CR_SERVER_GONE_ERROR, CR_TCP_CONNECTION,
// CR_SERVER_LOST_EXTENDED). 2003 (cannot connect) is what database/sql reports when a lost
// connection's automatic replacement is refused: the same event, the connection is gone.
const LOST = new Set([2013, 2055, 2006, 2011, 2003]);

// The driver's prepare-only prefix (k6/driver/mysql PrepareMarker).
const PREPARE = '/*tbs:prepare*/ ';

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

export function isIgnored(o, code) {
  return o.mysql_ignore_errors === 'all' || o.mysql_ignore_errors.includes(code);
}

// Conn is a VU's connection. It counts queries by kind the way sysbench's driver
// classifies them: a statement that returned a result set is a read, one that changed rows
// is a write, anything else (BEGIN, COMMIT, a DELETE that found nothing) is other.
//
// Reads go through exec (k6/x/tbs's execer: xk6-sql's db.exec as a native function): the
// driver reads the whole result set off the wire and discards it, as sysbench's client
// buffers rows it never looks at, instead of turning every row into a JS object. Every
// statement counted as a read (read(), n[READS]) is a SELECT, which always returns a result set.
//
// The hot path reads no property of this object: `ex`, `exn` (the execer's functions, the
// same for the VU's life; a reconnect points them at the new pool) and `n` (the counts, an
// array: element access, where sobek looks an object's property up in a map) are taken once
// by the events (sysbench.js bindEvent).
export class Conn {
  constructor(o) {
    this.o = o;
    this.db = null;
    this.x = tbs.execer();
    this.ex = this.x.exec; // (q, ...args): db.exec without its result
    this.exn = this.x.execCount; // (q, ...args) -> affected rows
    this.n = [0, 0, 0, 0]; // reads, writes, other, transactions since the last flush
    this.inTx = false;
    this.samples = null; // a k6/x/tbs recorder: flush() sends its batched samples too
  }

  // open drops the current connection (if any) and makes a new pool; the server connection
  // is made by the first statement (connect()).
  open() {
    this.close();
    this.db = openDb(this.o);
    // db.exec as native functions (k6/x/tbs exec.go): the same call on xk6-sql's pool
    // without sobek's reflection wrapper and the result object, a tenth of k6's CPU per
    // query at full speed (docs/bench.md).
    this.x.use(this.db);
    this.inTx = false;
  }

  close() {
    if (this.db) {
      try { this.db.close(); } catch (_) { /* already gone */ }
    }
    this.db = null;
    this.x.use(null);
  }

  // connect opens the server connection and prepares `statements` on it, as sysbench's
  // thread_init connects and prepares. Throws what the server or the network said.
  connect(statements) {
    if (!this.db) this.open();
    if (statements.length === 0) this.db.query('SELECT 1');
    for (const s of statements) this.ex(PREPARE + s);
  }

  // (the OLTP events call this.ex / this.exn themselves and count: sysbench.js)
  read(q, ...args) { this.ex(q, ...args); this.n[READS]++; }

  write1(q, a) { this.counted(this.exn(q, a)); }

  counted(rows) { this.n[rows > 0 ? WRITES : OTHERS]++; }

  text(q) { this.counted(this.exn(q)); }

  begin() { this.ex('BEGIN'); this.n[OTHERS]++; this.inTx = true; }

  commit() { this.ex('COMMIT'); this.n[OTHERS]++; this.inTx = false; }

  // After a failed statement inside a transaction: roll back before the event restarts,
  // so nothing of the failed attempt is committed by the next BEGIN. (sysbench 1.0.20 does
  // not roll back: its next BEGIN commits the failed attempt's earlier statements. A
  // deliberate difference: docs/CONTRACT.md.)
  rollback() {
    if (!this.inTx) return;
    this.inTx = false;
    try { this.ex('ROLLBACK'); this.n[OTHERS]++; } catch (_) { /* the connection is gone */ }
  }

  // flush adds the counts gathered since the last flush to the metrics (events run in
  // batches; runEvents flushes at least every FLUSH_MS and at every step boundary).
  flush() {
    if (this.samples) this.samples.flush(); // the recorder's latency samples (k6/x/tbs), in one batch
    const n = this.n;
    if (n[READS]) metrics.queries.add(n[READS], READ);
    if (n[WRITES]) metrics.queries.add(n[WRITES], WRITE);
    if (n[OTHERS]) metrics.queries.add(n[OTHERS], OTHER);
    if (n[TXS]) metrics.transactions.add(n[TXS]);
    n[READS] = 0; n[WRITES] = 0; n[OTHERS] = 0; n[TXS] = 0;
  }
}

// Conn.n's elements
export const READS = 0;
export const WRITES = 1;
export const OTHERS = 2;
export const TXS = 3;

const NO_TAGS = {};
const READ = { kind: 'read' };
const WRITE = { kind: 'write' };
const OTHER = { kind: 'other' };

// connectUntil connects `conn` and prepares `statements`, retrying with a short backoff
// (10 ms doubling to 200 ms, as sysbench's reconnect loop retries) until it works or the
// clock passes `deadline` (epoch ms). Returns true when connected.
export function connectUntil(conn, statements, deadline) {
  let pause = 10;
  for (;;) {
    try {
      conn.open();
      conn.connect(statements);
      return true;
    } catch (e) {
      if (errorCode(e) === 'canceled') return false;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      sleep(Math.min(pause, left) / 1000);
      pause = Math.min(pause * 2, 200);
    }
  }
}

function fatal(o, code, e) {
  const msg = `error ${code} from ${where(o)}: ${String(e.message || e).replace(/^GoError: /, '')}`;
  console.error(`FATAL: ${msg}`);
  exec.test.abort(msg);
}

// runEvent runs one sysbench event to completion, as sysbench does: an ignored error rolls
// back and restarts the event and is counted as an error; an ignored lost connection is
// counted as a reconnect (not an error), the VU reconnects (retrying until `stepEnd` while
// the server is away) and prepares its statements again, then restarts the event; any other
// error aborts the whole test with sysbench's kind of message. `start` is when the event
// began (tbs clock, epoch ms); `done(start)` records the event's latency and returns the tbs
// clock (the recorder's native doneFn); returns the event's end, or -1 when it did not
// finish (k6 stopped the VU, or the step ended while the server was away). `event` is the
// VU's bound event (sysbench.js bindEvent); `w` gives the statements to prepare again.
export function runEvent(conn, event, w, o, start, done, stepEnd) {
  const n = conn.n;
  for (;;) {
    try {
      event();
      n[TXS]++;
      return done(start);
    } catch (e) {
      if (!failed(conn, e, w, o, stepEnd)) return -1;
      // restart the event
    }
  }
}

// failed handles an error that ended an event attempt (runEvent's rules): true when the
// event is to be restarted (an ignored error, or a lost connection that is back), false
// when it cannot finish.
function failed(conn, e, w, o, stepEnd) {
  conn.flush();
  let code = errorCode(e);
  if (code === 'canceled') return false;
  if (LOST.has(code)) {
    if (code === 2003) code = 2013;
    if (!isIgnored(o, code)) {
      metrics.errors.add(1, { code: String(code), ignored: 'false' });
      fatal(o, code, e);
      return false;
    }
    metrics.reconnects.add(1, NO_TAGS);
    conn.inTx = false;
    outageBegins();
    const back = connectUntil(conn, w.prepared, stepEnd);
    outageEnds();
    return back; // restart the event on the new connection
  }
  const ignored = isIgnored(o, code);
  metrics.errors.add(1, { code: String(code), ignored: String(ignored) });
  if (!ignored) {
    fatal(o, code, e);
    return false;
  }
  conn.rollback();
  return true;
}

// Outages: from the moment a first VU of the process loses its connection until no VU is
// reconnecting any more, marked with k6_oltp_marker events outage_start / outage_end (label
// `outage`: its number in the run) for the dashboards' annotations.
const reconnecting = tbs.counter('outage/reconnecting');
const outageSeq = tbs.counter('outage/seq');

function outageBegins() {
  if (reconnecting.add(1) === 1) {
    const n = outageSeq.add(1);
    metrics.marker.add(Date.now(), { event: 'outage_start', outage: String(n) });
  }
}

function outageEnds() {
  if (reconnecting.add(-1) === 0) {
    metrics.marker.add(Date.now(), { event: 'outage_end', outage: String(outageSeq.get()) });
  }
}

// How often a VU running events back to back adds its counts to the metrics (ms).
export const FLUSH_MS = CONTRACT.timing.flush_ms;
// The longest batch of events in one k6 iteration (ms): k6's per-iteration work is spread
// over thousands of events, and k6's own iteration metrics still tick every second.
export const BATCH_MS = CONTRACT.timing.batch_ms;

// runEvents runs events back to back until `until` (epoch ms), the way a sysbench thread
// loops, without k6's per-iteration cost on every event. The query and transaction counts
// go to the metrics every FLUSH_MS and when it returns, so a caller that ends the batch at
// a step boundary gets exact counts on each side of it; each event's latency goes to the
// recorder (`done`). Returns false when an event did not finish.
export function runEvents(conn, event, w, o, until, done, stepEnd, now) {
  let t = now();
  if (t >= until) return true;
  let flushAt = t + FLUSH_MS;
  const n = conn.n;
  do {
    // runEvent's usual path inline (one JavaScript call less per event); after an error,
    // runEvent restarts the event from the same start
    try {
      event();
      n[TXS]++;
      t = done(t);
    } catch (e) {
      t = failed(conn, e, w, o, stepEnd) ? runEvent(conn, event, w, o, t, done, stepEnd) : -1;
    }
    if (t < 0) { conn.flush(); return false; }
    if (t >= flushAt) { conn.flush(); flushAt = t + FLUSH_MS; }
  } while (t < until);
  conn.flush();
  return true;
}

// runQueued is runEvents for rate mode: events come from the step's queue (sysbench's
// --rate); each is timed from when this VU takes it (service latency, sysbench's figure) and
// from when it was due (response latency, queue time included): `doneDue(start, due)` is
// the recorder's native doneDueFn.
export function runQueued(conn, event, w, o, until, doneDue, stepEnd, queue, now) {
  let flushAt = now() + FLUSH_MS;
  for (;;) {
    const d = queue.take(until);
    if (d < 0) break;
    const t = runEvent(conn, event, w, o, now(), (start) => doneDue(start, d), stepEnd);
    queue.release();
    if (t < 0) { conn.flush(); return false; }
    if (t >= flushAt) { conn.flush(); flushAt = t + FLUSH_MS; }
  }
  conn.flush();
  return true;
}

// ---------------------------------------------------------------- thread steps

export const GRACE_S = CONTRACT.timing.grace_s; // a step's in-flight events may finish; the next step starts after

// connectSeconds(threads): the start of each step given to its VUs to connect and prepare
// their statements before the step's load begins (sysbench's threads do the same in
// thread_init, before its timer starts).
export function connectSeconds(threads) {
  const t = CONTRACT.timing;
  return t.connect_s + Math.ceil((threads * t.connect_s_per_1000_threads) / 1000);
}

// stepScenarios(o) -> k6 scenarios: one per thread step, run one after another, each
// connect + warmup_time + time long. Every VU's first iteration of a step connects, then
// waits for the step's load to begin: no VU starts a second iteration before all have
// started their first, so the first iterations' numbers (exec.scenario.iterationInTest, k6
// counts them across load-generator instances too) are the thread ids 0..threads-1.
export function stepScenarios(o, fn = 'default') {
  const scenarios = {};
  let offset = 0;
  for (const n of o.threads) {
    const len = connectSeconds(n) + o.warmup_time + o.time;
    scenarios[`t${n}`] = {
      executor: 'constant-vus', exec: fn, vus: n,
      duration: `${len}s`, startTime: `${offset}s`, gracefulStop: `${GRACE_S}s`,
      tags: { threads: String(n) },
    };
    offset += len + GRACE_S;
  }
  return scenarios;
}

// The step windows, relative to the start of the scenarios (ms): connect (the scenario's
// start), start (load begins: warm-up, then the measured window), measure_start, measure_end.
export function stepWindows(o) {
  let offset = 0;
  return o.threads.map((n) => {
    const c = connectSeconds(n) * 1000;
    const w = { threads: n, connect: offset, start: offset + c, measure_start: offset + c + o.warmup_time * 1000 };
    w.measure_end = w.measure_start + o.time * 1000;
    offset = w.measure_end + GRACE_S * 1000;
    return w;
  });
}

// Submetrics per step (thresholds without conditions make k6 track them for the summary).
// Latency is not among them: the step's histogram (k6/x/tbs) has it.
export function stepThresholds(o) {
  const th = {};
  for (const n of o.threads) {
    const sel = `threads:${n},warmup:false`;
    for (const m of ['oltp_queries', 'oltp_transactions', 'oltp_errors', 'oltp_reconnects']) th[`${m}{${sel}}`] = [];
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
    throw new Error(`cannot connect to MySQL at ${where(o)}: ${m}`, { cause: e });
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

// instanceOf(options) -> this process' place among the load generators of one run, from
// k6's execution segments (`--execution-segment`, `--execution-segment-sequence`, as
// `scripts/k6 run --instances N` and k6-operator pass them) and the `instance_id` tag:
// { id, instances, lane (the segment's index), segment, sequence }. A lone process is
// instance "0" of 1.
export function instanceOf(options) {
  const tags = (options && options.tags) || {};
  const segment = options && options.executionSegment ? String(options.executionSegment) : '';
  const sequence = options && options.executionSegmentSequence ? String(options.executionSegmentSequence) : '';
  let lane = 0;
  let instances = 1;
  if (sequence) {
    const points = sequence.split(',').map((x) => x.trim());
    instances = Math.max(1, points.length - 1);
    const from = segment.split(':')[0];
    const value = (x) => { const [a, b] = String(x).split('/').map(Number); return b ? a / b : Number(a); };
    const i = points.findIndex((p) => Math.abs(value(p) - value(from || '0')) < 1e-9);
    lane = i >= 0 ? i : 0;
  } else if (segment) {
    const [from, to] = segment.split(':');
    const value = (x) => { const [a, b] = String(x).split('/').map(Number); return b ? a / b : Number(a); };
    const len = value(to || '1') - value(from || '0');
    instances = len > 0 ? Math.round(1 / len) : 1;
    lane = Math.round(value(from || '0') * instances);
  }
  const id = tags.instance_id !== undefined ? String(tags.instance_id) : String(lane);
  return { id, instances, lane, segment, sequence };
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
