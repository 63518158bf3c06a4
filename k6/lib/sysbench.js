// sysbench 1.0.20's OLTP workloads (src/lua/*.lua), statement for statement.
//
// An event is a function (conn, w) where `conn` counts queries by kind (conn.read / conn.write
// for statements with arguments, sent as server-side prepared statements by our driver as
// sysbench prepares them; conn.text for statements sysbench sends as plain queries) and `w`
// holds the options, the random functions and per-VU state.

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

// Statement texts per table, built once per VU (no string formatting on the hot path).
export function statements(tables) {
  const st = [null];
  for (let t = 1; t <= tables; t++) {
    const m = {};
    for (const [k, v] of Object.entries(SQL)) m[k] = v.replace('%u', String(t));
    st.push(m);
  }
  return st;
}

const tableNum = (w) => w.rand.uniform(1, w.o.tables);
const getId = (w) => w.rand.def(1, w.o.table_size);

function pointSelects(conn, w) {
  const s = w.st[tableNum(w)].point_selects;
  for (let i = 0; i < w.pointSelects; i++) conn.read1(s, getId(w));
}

function range(conn, w, key) {
  const s = w.st[tableNum(w)][key];
  for (let i = 0; i < w.o[key]; i++) {
    const id = getId(w);
    conn.read2(s, id, id + w.o.range_size - 1);
  }
}

function rangeSelects(conn, w) {
  if (!w.o.range_selects) return;
  range(conn, w, 'simple_ranges');
  range(conn, w, 'sum_ranges');
  range(conn, w, 'order_ranges');
  range(conn, w, 'distinct_ranges');
}

function indexUpdates(conn, w) {
  const s = w.st[tableNum(w)].index_updates;
  for (let i = 0; i < w.o.index_updates; i++) conn.write1(s, getId(w));
}

function nonIndexUpdates(conn, w) {
  const s = w.st[tableNum(w)].non_index_updates;
  for (let i = 0; i < w.o.non_index_updates; i++) conn.write2(s, w.rand.string(C_TEMPLATE), getId(w));
}

function deleteInserts(conn, w) {
  const st = w.st[tableNum(w)];
  for (let i = 0; i < w.o.delete_inserts; i++) {
    const id = getId(w);
    const k = getId(w);
    const c = w.rand.string(C_TEMPLATE);
    const pad = w.rand.string(PAD_TEMPLATE);
    conn.write1(st.deletes, id);
    conn.write4(st.inserts, id, k, c, pad);
  }
}

function inTrx(body) {
  return (conn, w) => {
    if (!w.o.skip_trx) conn.begin();
    body(conn, w);
    if (!w.o.skip_trx) conn.commit();
  };
}

// sysbench.rand.unique(): a permutation of 32-bit indices (preshing's RandomSequence), so
// distinct indices give distinct ids. Each VU draws from its own slice of indices.
const PRIME = 4294967291;
function permute(x) {
  if (x >= PRIME) return x;
  const residue = Number((BigInt(x) * BigInt(x)) % BigInt(PRIME));
  return x <= PRIME / 2 ? residue : PRIME - residue;
}
// `slot` (the VU number) gives each VU its own run of 2^22 indices.
export function uniqueSequence(seedIndex, seedOffset, slot) {
  let index = (permute((permute(seedIndex >>> 0) + 0x682f0161) >>> 0) + slot * 4194304) >>> 0;
  const offset = permute((permute(seedOffset >>> 0) + 0x46790905) >>> 0);
  return () => {
    const i = index;
    index = (index + 1) >>> 0;
    return permute((((permute(i) + offset) >>> 0) ^ 0x5bf03635) >>> 0);
  };
}

export const EVENTS = {
  oltp_point_select: (conn, w) => pointSelects(conn, w),
  oltp_read_only: inTrx((conn, w) => { pointSelects(conn, w); rangeSelects(conn, w); }),
  oltp_read_write: inTrx((conn, w) => {
    pointSelects(conn, w); rangeSelects(conn, w);
    indexUpdates(conn, w); nonIndexUpdates(conn, w); deleteInserts(conn, w);
  }),
  oltp_write_only: inTrx((conn, w) => { indexUpdates(conn, w); nonIndexUpdates(conn, w); deleteInserts(conn, w); }),
  oltp_update_index: (conn, w) => indexUpdates(conn, w),
  oltp_update_non_index: (conn, w) => nonIndexUpdates(conn, w),
  oltp_delete: (conn, w) => conn.write1(w.st[tableNum(w)].deletes, getId(w)),
  oltp_insert: (conn, w) => {
    const table = `sbtest${w.rand.uniform(1, w.o.tables)}`;
    const k = w.rand.def(1, w.o.table_size);
    const c = w.rand.string(C_TEMPLATE);
    const pad = w.rand.string(PAD_TEMPLATE);
    const id = w.o.auto_inc ? 0 : w.unique() - 2147483648;
    conn.text(`INSERT INTO ${table} (id, k, c, pad) VALUES (${id}, ${k}, '${c}', '${pad}')`);
  },
  select_random_points: (conn, w) => {
    const args = new Array(w.o.random_points);
    const rmin = w.rlen * w.threadId;
    for (let i = 0; i < args.length; i++) args[i] = w.rand.def(rmin, rmin + w.rlen);
    conn.read(w.randomPointsSql, ...args);
  },
  select_random_ranges: (conn, w) => {
    const args = new Array(w.o.number_of_ranges * 2);
    const rmin = w.rlen * w.threadId;
    for (let i = 0; i < args.length; i += 2) {
      const v = w.rand.def(rmin, rmin + w.rlen);
      args[i] = v; args[i + 1] = v + w.o.delta;
    }
    conn.read(w.randomRangesSql, ...args);
  },
  bulk_insert: (conn, w) => {
    // sysbench's bulk_insert_next(): append a row; send when the statement reaches the
    // packet limit. The rest is sent when the VU stops (flushBulk).
    w.bulkSize += 1;
    w.bulkRows.push(`(${w.bulkSize},${w.bulkSize})`);
    w.bulkBytes += 12;
    if (w.bulkBytes >= BULK_PACKET || (w.flushAfter && Date.now() >= w.flushAfter)) flushBulk(conn, w);
  },
};

const BULK_PACKET = 512 * 1024;
export function flushBulk(conn, w) {
  if (!w.bulkRows || w.bulkRows.length === 0) return;
  const sql = `INSERT INTO sbtest${w.threadId + 1} VALUES${w.bulkRows.join(',')}`;
  w.bulkRows = []; w.bulkBytes = 0;
  conn.text(sql);
}

// Per-VU workload state.
export function workState(o, rand, threadId, threads) {
  const w = {
    o, rand, st: statements(o.tables), threadId,
    pointSelects: o.workload === 'oltp_point_select' ? 1 : o.point_selects,
    rlen: o.table_size / threads,
    bulkRows: [], bulkBytes: 0, bulkSize: 0,
  };
  const q = (n) => Array(n).fill('?').join(', ');
  w.randomPointsSql = `SELECT id, k, c, pad FROM sbtest1 WHERE k IN (${q(o.random_points)})`;
  w.randomRangesSql = `SELECT count(k) FROM sbtest1 WHERE ${Array(o.number_of_ranges).fill('k BETWEEN ? AND ?').join(' OR ')}`;
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
  const rows = [];
  for (let i = first; i <= last; i++) {
    const k = rand.def(1, o.table_size);
    const c = rand.string(C_TEMPLATE);
    const pad = rand.string(PAD_TEMPLATE);
    rows.push(o.auto_inc ? `(${k}, '${c}', '${pad}')` : `(${i}, ${k}, '${c}', '${pad}')`);
  }
  const cols = o.auto_inc ? '(k, c, pad)' : '(id, k, c, pad)';
  return `INSERT INTO sbtest${t}${cols} VALUES${rows.join(',')}`;
}

export function bulkCreateSql(t) {
  return `CREATE TABLE IF NOT EXISTS sbtest${t} (
          id INTEGER NOT NULL,
          k INTEGER DEFAULT '0' NOT NULL,
          PRIMARY KEY (id))`;
}
