// Runs inside the built k6 (see mysql_test.go): the driver module through xk6-sql's JS API.
// Everything happens in setup(), so any failed expectation fails the run (non-zero exit).
import sql from 'k6/x/sql';
import driver from 'k6/x/sql/driver/mysql';
import tbs from 'k6/x/tbs';

export const options = { vus: 1, iterations: 1 };

function expect(what, got, want) {
  if (got !== want) throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}
const text = (v) => (typeof v === 'string' || typeof v === 'number' ? String(v) : String.fromCharCode.apply(null, new Uint8Array(v)));

export function setup() {
  const db = sql.open(driver, __ENV.DSN, { max_open_conns: 1 });
  db.exec('DROP TABLE IF EXISTS driver_smoke');
  db.exec('CREATE TABLE driver_smoke (id INT PRIMARY KEY, c CHAR(20) NOT NULL)');
  for (let i = 1; i <= 50; i++) {
    expect(`insert ${i} rowsAffected`, db.exec('INSERT INTO driver_smoke (id, c) VALUES (?, ?)', i, `v${i}`).rowsAffected(), 1);
  }
  const rows = db.query('SELECT c FROM driver_smoke WHERE id = ?', 7);
  expect('rows for id 7', rows.length, 1);
  expect('c for id 7', text(rows[0].c), 'v7');
  expect('range rows', db.query('SELECT c FROM driver_smoke WHERE id BETWEEN ? AND ?', 10, 19).length, 10);
  expect('update of a missing row', db.exec('UPDATE driver_smoke SET c = ? WHERE id = ?', 'x', 999).rowsAffected(), 0);
  db.exec('BEGIN');
  db.exec('INSERT INTO driver_smoke (id, c) VALUES (?, ?)', 51, 'v51');
  db.exec('ROLLBACK');
  expect('rows after rollback', Number(text(db.query('SELECT COUNT(*) AS n FROM driver_smoke')[0].n)), 50);
  let msg = '';
  try { db.exec('INSERT INTO driver_smoke (id, c) VALUES (?, ?)', 1, 'dup'); } catch (e) { msg = String(e.message || e); }
  if (!/Error 1062/.test(msg)) throw new Error(`duplicate key: want an 'Error 1062' message, got ${JSON.stringify(msg)}`);
  // k6/x/tbs's native exec (the scripts' hot path) does what db.exec does on the same pool
  const x = tbs.execer();
  x.use(db);
  const ex = x.exec;
  const exn = x.execCount;
  expect('native exec returns nothing', ex('UPDATE driver_smoke SET c = ? WHERE id = ?', 'n1', 1), undefined);
  expect('native count of an update', exn('UPDATE driver_smoke SET c = ? WHERE id BETWEEN ? AND ?', 'n', 1, 5), 5);
  expect('native count of an update that found nothing', exn('UPDATE driver_smoke SET c = ? WHERE id = ?', 'x', 999), 0);
  expect('native count of a text insert', exn("INSERT INTO driver_smoke (id, c) VALUES (60, 'v60'), (61, 'v61')"), 2);
  expect('native count with four arguments', exn('DELETE FROM driver_smoke WHERE id IN (?, ?, ?, ?)', 60, 61, 62, 63), 2);
  ex('SELECT c FROM driver_smoke WHERE id = ?', 2); // a result set read and discarded
  expect('row changed by native exec', text(db.query('SELECT c FROM driver_smoke WHERE id = ?', 1)[0].c), 'n');
  let native = '';
  try { exn('INSERT INTO driver_smoke (id, c) VALUES (?, ?)', 1, 'dup'); } catch (e) { native = String(e.message || e); }
  expect('native error message = db.exec error message', native, msg);
  let bad = '';
  try { tbs.execer().use({}); } catch (e) { bad = String(e.message || e); }
  if (!/sql\.open/.test(bad)) throw new Error(`execer.use of a non-database: want a clear error, got ${JSON.stringify(bad)}`);
  x.use(null); // a closed connection: the same functions then say so
  let none = '';
  try { ex('SELECT 1'); } catch (e) { none = String(e.message || e); }
  if (!/sql\.open/.test(none)) throw new Error(`exec without a database: want a clear error, got ${JSON.stringify(none)}`);
  x.use(db);
  expect('the same functions after use(db) again', exn('UPDATE driver_smoke SET c = ? WHERE id = ?', 'n2', 1), 1);
  db.exec('DROP TABLE driver_smoke');
  db.close();
  console.log('driver-smoke: ok');
}

export default function () {}
