// A VU's connection: the pool it opens, how errors are classified (errorCode, the ignore
// list), query counting by kind, and connecting with retries.
import sql from 'k6/x/sql';
import driver from 'k6/x/sql/driver/mysql';
import { sleep } from 'k6';
import tbs from 'k6/x/tbs';
import { dsn } from './config.js';
import { metrics, tallyCounts } from './metrics.js';

// Connection-loss errors after which sysbench reconnects when they are ignored
// (drv_mysql.c check_error: CR_SERVER_LOST, CR_SERVER_GONE_ERROR, CR_TCP_CONNECTION,
// CR_SERVER_LOST_EXTENDED). 2003 (cannot connect) is what database/sql reports when a lost
// connection's automatic replacement is refused: the same event, the connection is gone.
export const LOST = new Set([2013, 2055, 2006, 2011, 2003]);

// The driver's prepare-only prefix: its source is k6/driver/mysql PrepareMarker, which JavaScript
// cannot import; k6/jstest (TestPrepareMarkerIsTheDrivers) holds the two equal.
export const PREPARE = '/*tbs:prepare*/ ';

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

  // flush adds the counts gathered since the last flush to the metrics and the run's tally
  // (events run in batches; runEvents flushes at least every FLUSH_MS and at every step
  // boundary).
  flush() {
    if (this.samples) this.samples.flush(); // the recorder's latency samples (k6/x/tbs), in one batch
    const n = this.n;
    if (n[READS]) metrics.queries.add(n[READS], READ);
    if (n[WRITES]) metrics.queries.add(n[WRITES], WRITE);
    if (n[OTHERS]) metrics.queries.add(n[OTHERS], OTHER);
    if (n[TXS]) metrics.transactions.add(n[TXS]);
    if (n[READS] || n[WRITES] || n[OTHERS] || n[TXS]) tallyCounts(n[READS], n[WRITES], n[OTHERS], n[TXS]); // the same counts, in process
    n[READS] = 0; n[WRITES] = 0; n[OTHERS] = 0; n[TXS] = 0;
  }
}

// Conn.n's elements
export const READS = 0;
export const WRITES = 1;
export const OTHERS = 2;
export const TXS = 3;

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
