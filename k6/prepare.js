// sysbench's prepare / cleanup / prewarm (oltp_common.lua), in k6:
//   k6 run -e tables=16 -e table_size=1000000 -e threads=8 prepare.js
//   k6 run -e command=cleanup -e tables=16 prepare.js
//   k6 run -e command=prewarm -e tables=16 prepare.js
// prepare: creates sbtest1..N (sysbench's schema), fills them in parallel (`threads` VUs
// sharing chunks of 10,000 rows); the VU that finishes a table's chunks creates its secondary
// index after the data, as sysbench does, and runs ANALYZE TABLE, while other tables fill.
// Tables that exist already stop it before anything is changed, unless -e recreate=true.
// How rows are made (prepare_mode): `client` (the default; `auto` is the same), multi-row
// INSERTs of `prepare_batch` rows built by k6 (each INSERT's rows in one call to Go: k6/x/tbs
// rand.rows), as sysbench sends them; `server`, one INSERT ... SELECT per chunk whose RAND()
// expressions draw k, c and pad as sysbench does (no row crosses the network, but the server's
// CPU makes them; not with rand_seed or zipfian). Each mode's rows/s against sysbench's:
// docs/bench.md (`tools/bench --figures prepare`).
// cleanup: drops exactly sbtest1..N (for bulk_insert: sbtest1..threads).
import exec from 'k6/execution';
import tbs from 'k6/x/tbs';
import { parseOptions } from './lib/config.js';
import { makeRand } from './lib/rand.js';
import { createTableSql, insertRowsSql, insertRowsServerSql, bulkCreateSql, SERVER_CHUNK } from './lib/sysbench.js';
import { openDb } from './lib/conn.js';
import { connectOrExplain, existingTables } from './lib/target.js';
import { newTestId } from './lib/run.js';

const o = parseOptions(__ENV);
const bulk = o.workload === 'bulk_insert';
const tables = bulk ? Math.max(...o.threads) : o.tables;
// oltp_insert prepares empty tables when ids are client-generated, as sysbench does.
const rowsPerTable = (o.workload === 'oltp_insert' && !o.auto_inc) || bulk ? 0 : o.table_size;
const CHUNK = SERVER_CHUNK;
const serverRows = o.prepare_mode === 'server';
const chunksPerTable = Math.ceil(rowsPerTable / CHUNK);
const chunks = o.command === 'prepare' ? tables * chunksPerTable : 0;
const vus = Math.max(1, Math.min(o.threads[0], chunks || 1));

export const options = {
  scenarios: {
    [o.command]: {
      executor: 'shared-iterations', vus, iterations: Math.max(chunks, 1), maxDuration: '72h',
    },
  },
  tags: { testid: o.testid || newTestId(), workload: o.workload, command: o.command },
  setupTimeout: '2h',
  teardownTimeout: '72h',
  summaryTrendStats: ['avg', 'max', 'count'],
};

const db = openDb(o);

function sqlExec(q) {
  try {
    return db.exec(q);
  } catch (e) {
    throw new Error(`${String(e.message || e).replace(/^GoError: /, '')} (at ${o.mysql_host}:${o.mysql_port}, statement: ${q.slice(0, 120)}${q.length > 120 ? '...' : ''})`, { cause: e });
  }
}

export function setup() {
  const sdb = openDb(o);
  connectOrExplain(sdb, o);
  const have = existingTables(sdb);
  const mine = [];
  for (let t = 1; t <= tables; t++) mine.push(`sbtest${t}`);
  const present = mine.filter((t) => have.has(t));
  if (o.command === 'cleanup') {
    for (const t of mine) {
      console.log(`Dropping table '${t}'...`);
      sdb.exec(`DROP TABLE IF EXISTS ${t}`);
    }
    return { skip: true };
  }
  if (o.command === 'prewarm') return { skip: false };
  if (present.length && !o.recreate) {
    throw new Error(`table ${present[0]} already exists in database '${o.mysql_db}' at ${o.mysql_host}:${o.mysql_port} ` +
      `(${present.length} of ${tables} tables exist); nothing was changed. Run cleanup first ` +
      `(k6 run -e command=cleanup -e tables=${tables} prepare.js) or add -e recreate=true`);
  }
  for (const t of present) {
    console.log(`Dropping table '${t}' (recreate=true)...`);
    sdb.exec(`DROP TABLE IF EXISTS ${t}`);
  }
  for (let t = 1; t <= tables; t++) {
    console.log(`Creating table 'sbtest${t}'...`);
    sdb.exec(bulk ? bulkCreateSql(t) : createTableSql(o, t));
  }
  if (rowsPerTable > 0) {
    console.log(`Inserting ${rowsPerTable} records into each of ${tables} table(s) with ${vus} thread(s) ` +
      `(prepare_mode=${serverRows ? 'server: INSERT ... SELECT, rows made by the server' : `client: multi-row INSERTs of ${o.prepare_batch} rows`})...`);
  }
  sdb.close();
  return { skip: false, started: Date.now() };
}

let rand = null;

function prewarm(t) {
  // sysbench's cmd_prewarm: load the table and its secondary index into the buffer pool.
  console.log(`Prewarming table sbtest${t}`);
  sqlExec('SET tmp_table_size=2*1024*1024*1024');
  sqlExec('SET max_heap_table_size=2*1024*1024*1024');
  sqlExec(`ANALYZE TABLE sbtest${t}`);
  db.query(`SELECT AVG(id) FROM (SELECT * FROM sbtest${t} FORCE KEY (PRIMARY) LIMIT ${o.table_size}) t`);
  db.query(`SELECT COUNT(*) FROM (SELECT * FROM sbtest${t} WHERE k LIKE '%0%' LIMIT ${o.table_size}) t`);
}

export default function (data) {
  if (data.skip) return;
  if (o.command === 'prewarm') {
    for (let t = 1; t <= tables; t++) prewarm(t);
    return;
  }
  if (chunks === 0) return;
  if (!rand) rand = makeRand(o, exec.vu.idInTest);
  const i = exec.scenario.iterationInTest;
  // interleave tables, so all of them fill at once
  const t = (i % tables) + 1;
  const c = Math.floor(i / tables);
  const first = c * CHUNK + 1;
  const last = Math.min((c + 1) * CHUNK, rowsPerTable);
  if (serverRows) {
    sqlExec(insertRowsServerSql(o, t, first, last));
  } else {
    for (let a = first; a <= last; a += o.prepare_batch) {
      sqlExec(insertRowsSql(o, rand, t, a, Math.min(a + o.prepare_batch - 1, last)));
    }
  }
  if ((i + 1) % Math.max(1, Math.floor(chunks / 20)) === 0 || i + 1 === chunks) {
    console.log(`  ... ${Math.round(((i + 1) * 100) / chunks)}% of chunks started (sbtest${t} rows ${first}-${last} done)`);
  }
  // the VU that finishes a table's chunks builds its index and statistics while the other
  // tables fill, as each sysbench thread indexes its table when it is done with it (teardown
  // used to do every table one after the other, after all the rows)
  if (tbs.counter(`prepare/sbtest${t}/chunks`).add(1) === chunksPerTable) finishTable(sqlExec, t);
}

// sbtest<t>'s secondary index (sysbench's, after the rows), then ANALYZE TABLE (ours: fresh
// statistics for the run's plans)
function finishTable(run, t) {
  if (!bulk && o.create_secondary) {
    console.log(`Creating a secondary index on 'sbtest${t}'...`);
    run(`CREATE INDEX k_${t} ON sbtest${t}(k)`);
  }
  console.log(`Analyzing table 'sbtest${t}'...`);
  run(`ANALYZE TABLE sbtest${t}`);
  tbs.counter(`prepare/sbtest${t}/done`).add(1);
}

export function teardown(data) {
  if (data.skip || o.command !== 'prepare') return;
  const tdb = openDb(o);
  for (let t = 1; t <= tables; t++) {
    // a table without rows, or one with a failed chunk (its error was printed)
    if (!tbs.counter(`prepare/sbtest${t}/done`).get()) finishTable((q) => tdb.exec(q), t);
  }
  const secs = (Date.now() - data.started) / 1000;
  const rows = rowsPerTable * tables;
  console.log(`prepare done: ${tables} table(s), ${rows} rows in ${secs.toFixed(1)}s (${(rows / secs).toFixed(0)} rows/s)`);
}

export function handleSummary() {
  return {}; // prepare's story is told by its log lines
}
