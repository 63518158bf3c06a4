// The target database: the first connection (with a message that names the target), what it
// is, which sysbench tables it has and its global variables.
import { where } from './config.js';

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
