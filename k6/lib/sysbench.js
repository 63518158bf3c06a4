// sysbench 1.0.20's OLTP workloads (src/lua/*.lua), statement for statement.
//
// The workloads are declared in k6/contract.json (`workloads`: each one's parts, in order, and
// whether BEGIN/COMMIT wrap them); PARTS below are the parts. An event is made from (conn, w)
// by bindEvent, where `conn` runs the statements and counts
// queries by kind (conn.ex / conn.exn with conn.n's counts, and conn.read / conn.write* for
// statements with arguments, sent as server-side prepared statements by our driver as
// sysbench prepares them; conn.text for statements sysbench sends as plain queries) and `w`
// holds the options, the random functions and per-VU state of a step.
import { READS, WRITES, OTHERS } from './conn.js';
import { workloadSpec } from './config.js';
import tbs from 'k6/x/tbs';

export const C_TEMPLATE = '###########-###########-###########-###########-###########-' +
  '###########-###########-###########-###########-###########';
export const PAD_TEMPLATE = '###########-###########-###########-###########-###########';

const SQL = {
  point_selects: 'SELECT c FROM sbtest%u WHERE id=?',
  simple_ranges: 'SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ?',
  sum_ranges: 'SELECT SUM(k) FROM sbtest%u WHERE id BETWEEN ? AND ?',
  order_ranges: 'SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c',
  distinct_ranges: 'SELECT DISTINCT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c',
  index_updates: 'UPDATE sbtest%u SET k=k+1 WHERE id=?',
  non_index_updates: 'UPDATE sbtest%u SET c=? WHERE id=?',
  deletes: 'DELETE FROM sbtest%u WHERE id=?',
  inserts: 'INSERT INTO sbtest%u (id, k, c, pad) VALUES (?, ?, ?, ?)',
};

// The events, made once per VU and step by bindEvent(conn, w): each is a closure over the
// options, the random functions (native: k6/x/tbs), the statement functions and counts
// (conn.js Conn: ex, exn, n) and the statement texts it needs, so that running it reads
// locals, not object properties. (With 64 VUs on one client core every property lookup
// misses the CPU cache in another VU's runtime: about a tenth of k6's CPU per query on
// point select; docs/bench.md.) The random draws come in sysbench's order: the table, then
// per statement its ids and strings; a part with a count of 0 still draws its table, as
// sysbench's execute_* functions do.
// textsOf(w, key) -> the statement's text per table (index 1..tables), built once per VU and
// step: an array, not an object per table (each property of a JavaScript object costs every
// VU hundreds of bytes; docs/bench.md).
function textsOf(w, key) {
  const texts = [null];
  for (let t = 1; t <= w.o.tables; t++) texts.push(SQL[key].replace('%u', String(t)));
  return texts;
}

function pointSelectsOf(conn, w) {
  const { ex, n: counts } = conn;
  const texts = textsOf(w, 'point_selects');
  const { uniform, def } = w.rand;
  const tables = w.o.tables;
  const size = w.o.table_size;
  const n = w.count('point_selects');
  return () => {
    const s = texts[uniform(1, tables)];
    for (let i = 0; i < n; i++) { ex(s, def(1, size)); counts[READS]++; }
  };
}

function rangeOf(conn, w, key) {
  const { ex, n: counts } = conn;
  const texts = textsOf(w, key);
  const { uniform, def } = w.rand;
  const tables = w.o.tables;
  const size = w.o.table_size;
  const n = w.count(key);
  const span = w.o.range_size - 1;
  return () => {
    const s = texts[uniform(1, tables)];
    for (let i = 0; i < n; i++) {
      const id = def(1, size);
      ex(s, id, id + span); counts[READS]++;
    }
  };
}

function rangeSelectsOf(conn, w) {
  if (!w.o.range_selects) return () => {};
  const simple = rangeOf(conn, w, 'simple_ranges');
  const sum = rangeOf(conn, w, 'sum_ranges');
  const order = rangeOf(conn, w, 'order_ranges');
  const distinct = rangeOf(conn, w, 'distinct_ranges');
  return () => { simple(); sum(); order(); distinct(); };
}

function indexUpdatesOf(conn, w) {
  const { exn, n: counts } = conn;
  const texts = textsOf(w, 'index_updates');
  const { uniform, def } = w.rand;
  const tables = w.o.tables;
  const size = w.o.table_size;
  const n = w.count('index_updates');
  return () => {
    const s = texts[uniform(1, tables)];
    for (let i = 0; i < n; i++) counts[exn(s, def(1, size)) > 0 ? WRITES : OTHERS]++;
  };
}

function nonIndexUpdatesOf(conn, w) {
  const { exn, n: counts } = conn;
  const texts = textsOf(w, 'non_index_updates');
  const { uniform, def, string } = w.rand;
  const tables = w.o.tables;
  const size = w.o.table_size;
  const n = w.count('non_index_updates');
  return () => {
    const s = texts[uniform(1, tables)];
    for (let i = 0; i < n; i++) counts[exn(s, string(C_TEMPLATE), def(1, size)) > 0 ? WRITES : OTHERS]++;
  };
}

function deleteInsertsOf(conn, w) {
  const { exn, n: counts } = conn;
  const deletes = textsOf(w, 'deletes');
  const inserts = textsOf(w, 'inserts');
  const { uniform, def, string } = w.rand;
  const tables = w.o.tables;
  const size = w.o.table_size;
  const n = w.count('delete_inserts');
  return () => {
    const t = uniform(1, tables);
    for (let i = 0; i < n; i++) {
      const id = def(1, size);
      const k = def(1, size);
      const c = string(C_TEMPLATE);
      const pad = string(PAD_TEMPLATE);
      counts[exn(deletes[t], id) > 0 ? WRITES : OTHERS]++;
      counts[exn(inserts[t], id, k, c, pad) > 0 ? WRITES : OTHERS]++;
    }
  };
}

// BEGIN, the parts, COMMIT (unless skip_trx), as sysbench's oltp_read_only, oltp_read_write
// and oltp_write_only events.
function inTrx(conn, w, parts) {
  const body = parts.length === 1 ? parts[0] : () => { for (const p of parts) p(); };
  if (w.o.skip_trx) return body;
  const { ex, n: counts } = conn;
  return () => {
    ex('BEGIN'); counts[OTHERS]++; conn.inTx = true; // conn.begin(), inline
    body();
    ex('COMMIT'); counts[OTHERS]++; conn.inTx = false; // conn.commit()
  };
}

// The parts an event is made of, by the names k6/contract.json's workloads declare (their
// `event`): make(conn, w) -> the part's function; prepares(o, count) -> the SQL keys it
// prepares per table, as sysbench's prepare_*() (sysbench 1.0.20 prepares them whatever the
// count; those with a count of 0, which no event runs, are left out here; count(key) is the
// workload's count of a statement: its option, or the workload's fixed count);
// statements(o) -> the statements it prepares once (select_random_*). Parts without
// prepares send plain text, as sysbench does.
export const PARTS = {
  point_selects: { make: pointSelectsOf, prepares: (o, count) => (count('point_selects') > 0 ? ['point_selects'] : []) },
  range_selects: {
    make: rangeSelectsOf,
    prepares: (o, count) => (o.range_selects
      ? ['simple_ranges', 'sum_ranges', 'order_ranges', 'distinct_ranges'].filter((k) => count(k) > 0) : []),
  },
  index_updates: { make: indexUpdatesOf, prepares: (o, count) => (count('index_updates') > 0 ? ['index_updates'] : []) },
  non_index_updates: { make: nonIndexUpdatesOf, prepares: (o, count) => (count('non_index_updates') > 0 ? ['non_index_updates'] : []) },
  delete_inserts: { make: deleteInsertsOf, prepares: (o, count) => (count('delete_inserts') > 0 ? ['deletes', 'inserts'] : []) },
  // oltp_delete.lua's event: one DELETE
  delete: {
    make: (conn, w) => {
      const texts = textsOf(w, 'deletes');
      return () => conn.write1(texts[w.rand.uniform(1, w.o.tables)], w.rand.def(1, w.o.table_size));
    },
    prepares: () => ['deletes'],
  },
  // oltp_insert.lua's event: one INSERT as text
  insert: {
    make: (conn, w) => () => {
      const table = `sbtest${w.rand.uniform(1, w.o.tables)}`;
      const k = w.rand.def(1, w.o.table_size);
      const c = w.rand.string(C_TEMPLATE);
      const pad = w.rand.string(PAD_TEMPLATE);
      const id = w.o.auto_inc ? 0 : w.unique.next() - 2147483648;
      conn.text(`INSERT INTO ${table} (id, k, c, pad) VALUES (${id}, ${k}, '${c}', '${pad}')`);
    },
  },
  // select_random_*: each thread draws from its own slice of k values, [rmin, rmax] with
  // rmin = trunc(rlen * thread_id), rmax = trunc(rlen * thread_id + rlen) where rlen =
  // table_size / threads: sysbench computes them in Lua doubles and sb_rand() takes
  // uint32_t arguments, which truncates them (workState).
  random_points: {
    make: (conn, w) => () => {
      const args = new Array(w.o.random_points);
      for (let i = 0; i < args.length; i++) args[i] = w.rand.def(w.rmin, w.rmax);
      conn.read(w.randomPointsSql, ...args);
    },
    statements: (o) => [randomPointsSql(o)],
  },
  random_ranges: {
    make: (conn, w) => () => {
      const args = new Array(w.o.number_of_ranges * 2);
      for (let i = 0; i < args.length; i += 2) {
        const v = w.rand.def(w.rmin, w.rmax);
        args[i] = v; args[i + 1] = v + w.o.delta;
      }
      conn.read(w.randomRangesSql, ...args);
    },
    statements: (o) => [randomRangesSql(o)],
  },
  bulk_insert: {
    make: (conn, w) => () => {
      // sysbench's bulk_insert_next() (db_driver.c): a row joins the statement unless the
      // statement would then pass the packet limit (512 KiB, counting the row, its comma and
      // the terminating NUL), in which case the statement is sent first. The rest is sent at
      // the end of the step (flushBulk), as sysbench's thread_done does.
      w.bulkSize += 1;
      const row = `(${w.bulkSize},${w.bulkSize})`;
      if (w.bulkLen + row.length + 1 + (w.bulkRows.length > 0 ? 1 : 0) > BULK_PACKET) flushBulk(conn, w);
      w.bulkLen += row.length + (w.bulkRows.length > 0 ? 1 : 0);
      w.bulkRows.push(row);
    },
  },
};

// workloadOf(name) -> the workload's declaration (k6/contract.json), its parts checked.
export function workloadOf(name) {
  const d = workloadSpec(name);
  if (!d) throw new Error(`internal: no workload '${name}' in k6/contract.json`);
  for (const p of d.event) {
    if (!PARTS[p]) throw new Error(`k6/contract.json: workload '${name}' declares part '${p}', which k6/lib/sysbench.js has not (parts: ${Object.keys(PARTS).join(', ')})`);
  }
  return d;
}

// countOf(o, name) -> key -> the workload's count of statement `key` per event: its option,
// unless the workload fixes it (oltp_point_select: one point select, as sysbench's
// oltp_point_select.lua sets sysbench.opt.point_selects = 1).
function countOf(o, name) {
  const fixed = workloadOf(name).counts || {};
  return (key) => (fixed[key] !== undefined ? fixed[key] : o[key]);
}

// bindEvent(workload, conn, w) -> event(): one event of `workload` for this VU's step: its
// declared parts in order, inside BEGIN ... COMMIT when it declares trx.
export function bindEvent(workload, conn, w) {
  const d = workloadOf(workload);
  const parts = d.event.map((p) => PARTS[p].make(conn, w));
  if (d.trx) return inTrx(conn, w, parts);
  return parts.length === 1 ? parts[0] : () => { for (const p of parts) p(); };
}

// The parts k6/x/tbs's native event loop runs (k6/ext/tbs/loop.go), with the statement keys
// they use.
const LOOP_PARTS = {
  point_selects: ['point_selects'],
  range_selects: ['simple_ranges', 'sum_ranges', 'order_ranges', 'distinct_ranges'],
  index_updates: ['index_updates'],
  non_index_updates: ['non_index_updates'],
  delete_inserts: ['deletes', 'inserts'],
  delete: ['deletes'],
  insert: [],
  random_points: [],
  random_ranges: [],
};

// loopRuns(o) -> whether oltp.js runs o's workload in the native event loop: native_loop is on,
// the run is not rate-limited and every part of the workload's event is one the loop runs
// (the JavaScript path runs the others).
export function loopRuns(o) {
  return Boolean(o.native_loop) && !o.rate && workloadOf(o.workload).event.every((p) => LOOP_PARTS[p]);
}

// nativeLoop(workload, conn, w, rec) -> a thread's native event loop for this step (k6/x/tbs
// loop(): the event bindEvent makes, run in Go; a group of the VU's threads runs it, events.js
// runLoops), or null when the workload has a part the loop does not run or the step is
// rate-limited (the JavaScript path runs those). The statement texts and counts are made
// here, as for bindEvent. rec: the thread's recorder (null: none).
export function nativeLoop(workload, conn, w, rec) {
  const d = workloadOf(workload);
  if (w.o.rate || !d.event.every((p) => LOOP_PARTS[p])) return null;
  const texts = {};
  const counts = {};
  for (const p of d.event) {
    for (const k of LOOP_PARTS[p]) texts[k] = textsOf(w, k).slice(1);
    if (p !== 'range_selects') counts[p] = w.count(p) || 0;
    else for (const k of LOOP_PARTS[p]) counts[k] = w.count(k);
  }
  const random = d.event.includes('random_points') ? w.randomPointsSql : d.event.includes('random_ranges') ? w.randomRangesSql : '';
  return tbs.loop({
    parts: d.event, trx: Boolean(d.trx) && !w.o.skip_trx, counts, texts,
    tables: w.o.tables, table_size: w.o.table_size, range_size: w.o.range_size, range_selects: Boolean(w.o.range_selects),
    c_template: C_TEMPLATE, pad_template: PAD_TEMPLATE,
    random_sql: random, random_points: w.o.random_points, number_of_ranges: w.o.number_of_ranges, delta: w.o.delta,
    rmin: w.rmin, rmax: w.rmax, auto_inc: Boolean(w.o.auto_inc), unique: w.unique || null,
  }, w.rand, conn.x, rec, conn);
}

export const BULK_PACKET = 512 * 1024;
export function flushBulk(conn, w) {
  if (!w.bulkRows || w.bulkRows.length === 0) return;
  const sql = w.bulkPrefix + w.bulkRows.join(',');
  w.bulkRows = []; w.bulkLen = w.bulkPrefix.length;
  // The statement is counted (a write, as sysbench counts it) and its rows' counts go to the
  // metrics before it goes out, and its last id is marked for the process (w.bulkMark, set
  // per step in oltp.js): a statement k6 interrupts when a step's grace is over still runs
  // to its end on the server. It and its rows are then counted, and the next step's thread
  // on this table numbers after them, not from a MAX(id) that does not show them yet (that
  // was a 1062 under a slow server).
  conn.n[WRITES]++;
  conn.flush();
  if (w.bulkMark) w.bulkMark.max(w.bulkSize);
  conn.exn(sql);
}

// The statements a workload runs with arguments: what sysbench's prepare_statements()
// prepares in thread_init, per table (the keys of its parts, in their order), or once.
export function preparedStatements(o) {
  const d = workloadOf(o.workload);
  const count = countOf(o, o.workload);
  const keys = [];
  const once = [];
  for (const p of d.event) {
    if (PARTS[p].prepares) keys.push(...PARTS[p].prepares(o, count));
    if (PARTS[p].statements) once.push(...PARTS[p].statements(o));
  }
  const out = [];
  for (let t = 1; t <= o.tables && keys.length > 0; t++) for (const k of keys) out.push(SQL[k].replace('%u', String(t)));
  return out.concat(once);
}

function randomPointsSql(o) {
  return `SELECT id, k, c, pad FROM sbtest1 WHERE k IN (${Array(o.random_points).fill('?').join(', ')})`;
}

function randomRangesSql(o) {
  return `SELECT count(k) FROM sbtest1 WHERE ${Array(o.number_of_ranges).fill('k BETWEEN ? AND ?').join(' OR ')}`;
}

// Per-VU workload state for one step: thread `threadId` of `threads`.
export function workState(o, rand, threadId, threads) {
  const rlen = o.table_size / threads;
  const w = {
    o, rand, threadId,
    count: countOf(o, o.workload),
    rmin: Math.trunc(rlen * threadId), rmax: Math.trunc(rlen * threadId + rlen),
    bulkRows: [], bulkSize: 0, bulkPrefix: `INSERT INTO sbtest${threadId + 1} VALUES`,
    prepared: preparedStatements(o),
  };
  w.bulkLen = w.bulkPrefix.length;
  w.randomPointsSql = randomPointsSql(o);
  w.randomRangesSql = randomRangesSql(o);
  return w;
}

// ---------------------------------------------------------------- prepare / cleanup

export function createTableSql(o, t, isMysqlFamily = true) {
  const idIndex = o.secondary ? 'KEY xid' : 'PRIMARY KEY';
  const idDef = o.auto_inc ? 'INTEGER NOT NULL AUTO_INCREMENT' : 'INTEGER NOT NULL';
  const engine = isMysqlFamily ? `/*! ENGINE = ${o.mysql_storage_engine} */` : '';
  return `CREATE TABLE sbtest${t}(
  id ${idDef},
  k INTEGER DEFAULT '0' NOT NULL,
  c CHAR(120) DEFAULT '' NOT NULL,
  pad CHAR(60) DEFAULT '' NOT NULL,
  ${idIndex} (id)
) ${engine} ${o.create_table_options}`;
}

// Rows first..last of sbtest<t> as one multi-row INSERT (sysbench's bulk insert format).
export function insertRowsSql(o, rand, t, first, last) {
  const cols = o.auto_inc ? '(k, c, pad)' : '(id, k, c, pad)';
  // per row (id, k, 'c', 'pad'): k from the default distribution, then c, then pad, built in Go
  // in one call (k6/ext/tbs/rand.go Rows)
  return `INSERT INTO sbtest${t}${cols} VALUES${rand.rows(first, last, o.table_size, !!o.auto_inc, C_TEMPLATE, PAD_TEMPLATE)}`;
}

// prepare_mode=server: rows first..last of sbtest<t> made by the server in one
// INSERT ... SELECT over a 10,000-row sequence (four cross-joined digit tables: no recursion
// limits, the same SQL on MySQL, MariaDB and TiDB), with RAND() expressions that draw the
// same distributions as the client: k by rand_type (not zipfian), c and pad by their
// templates. Nothing but the statement crosses the network and no row is built in JS.
export const SERVER_CHUNK = 10000;
const DIGITS = '(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 ' +
  'UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)';

export function insertRowsServerSql(o, t, first, last) {
  const n = last - first + 1;
  if (n < 1 || n > SERVER_CHUNK) throw new Error(`internal: server chunk of ${n} rows`);
  const k = sqlRand(o, 1, o.table_size);
  const c = sqlString(C_TEMPLATE);
  const pad = sqlString(PAD_TEMPLATE);
  const seq = `SELECT a.d * 1000 + b.d * 100 + c.d * 10 + e.d + 1 AS n FROM ${DIGITS} a, ${DIGITS} b, ${DIGITS} c, ${DIGITS} e`;
  // ids are given even with auto_inc: an INSERT ... SELECT is a "bulk insert" to InnoDB,
  // whose AUTO_INCREMENT may leave gaps between concurrent chunks; sysbench's tables have
  // ids 1..table_size, which its workloads draw from.
  return `INSERT INTO sbtest${t}(id, k, c, pad) SELECT ${first - 1} + s.n, ${k}, ${c}, ${pad} FROM (${seq}) s WHERE s.n <= ${n}`;
}

// A SQL expression drawing from o.rand_type over [a, b], as lib/rand.js does with RAND() in
// place of random(). Special's one uniform number both picks the branch and places the value
// in the hot spot; given the branch, that value is uniform on [q, 1), so two independent
// RAND()s give the same distribution (servers may evaluate a RAND() column twice).
export function sqlRand(o, a, b) {
  const sum = (n) => `(${Array(n).fill('RAND()').join(' + ')})`;
  const num = (x) => String(x);
  switch (o.rand_type) {
    case 'uniform': return `(${a} + FLOOR(RAND() * ${b - a + 1}))`;
    case 'gaussian': return `(${a} + FLOOR(${sum(o.rand_spec_iter)} * ${b - a + 1} / ${o.rand_spec_iter}))`;
    case 'special': {
      const t = b - a;
      const q = (100 - o.rand_spec_res) / 100;
      const d = t * (o.rand_spec_pct / 100);
      const shift = t / 2 - t * (o.rand_spec_pct / 200);
      return `(${a} + IF(RAND() < ${num(q)}, FLOOR(${sum(o.rand_spec_iter)} * ${t} / ${o.rand_spec_iter}), ` +
        `FLOOR((${num(q)} + RAND() * ${num(1 - q)}) * ${num(d + 1)} + ${num(shift)})))`;
    }
    case 'pareto': {
      const power = Math.log(o.rand_pareto_h) / Math.log(1.0 - o.rand_pareto_h);
      return `(${a} + FLOOR(${b - a + 1} * POW(RAND(), ${num(power)})))`;
    }
    default: throw new Error(`internal: no server-side ${o.rand_type}`);
  }
}

// A SQL expression for sysbench.rand.string(template): '#' a digit (six at most per RAND(),
// within the 30 random bits of MariaDB's RAND()), '@' a lowercase letter, anything else kept.
export function sqlString(template) {
  const parts = [];
  for (let i = 0; i < template.length;) {
    const ch = template[i];
    let j = i;
    while (j < template.length && template[j] === ch) j++;
    if (ch === '#') {
      for (let left = j - i; left > 0; left -= 6) {
        const m = Math.min(6, left);
        parts.push(`LPAD(FLOOR(RAND() * ${10 ** m}), ${m}, '0')`);
      }
    } else if (ch === '@') {
      for (let x = i; x < j; x++) parts.push("SUBSTRING('abcdefghijklmnopqrstuvwxyz', 1 + FLOOR(RAND() * 26), 1)");
    } else {
      parts.push(`'${template.slice(i, j).replace(/\\/g, '\\\\').replace(/'/g, "''")}'`);
    }
    i = j;
  }
  return `CONCAT(${parts.join(', ')})`;
}

export function bulkCreateSql(t) {
  return `CREATE TABLE IF NOT EXISTS sbtest${t} (
          id INTEGER NOT NULL,
          k INTEGER DEFAULT '0' NOT NULL,
          PRIMARY KEY (id))`;
}
