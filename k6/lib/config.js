// Options, under sysbench 1.0.20's own names and defaults (`-` written as `_`), read from
// `-e name=value` (k6's __ENV). Bad values stop the run before any query, naming the option.
import { RAND_TYPES } from './rand.js';

export const WORKLOADS = [
  'oltp_point_select', 'oltp_read_only', 'oltp_read_write', 'oltp_write_only',
  'oltp_update_index', 'oltp_update_non_index', 'oltp_insert', 'oltp_delete',
  'select_random_points', 'select_random_ranges', 'bulk_insert',
];

// name: [type, default, description]. Defaults are sysbench 1.0.20's, except where noted.
const SPEC = {
  // -- where: the defaults point at the local stack's target (scripts/stack up)
  mysql_host: ['string', '127.0.0.1', 'MySQL server host (sysbench: localhost)'],
  mysql_port: ['int+', 4000, 'MySQL server port (sysbench: 3306; 4000 is TiDB\'s)'],
  mysql_user: ['string', 'sbtest', 'MySQL user'],
  mysql_password: ['string', '', 'MySQL password'],
  mysql_db: ['string', 'sbtest', 'MySQL database name'],
  mysql_ignore_errors: ['errors', [1213, 1020, 1205], 'error codes to ignore (restart the event), or "all"'],
  mysql_storage_engine: ['string', 'innodb', 'storage engine, if MySQL is used'],
  create_table_options: ['string', '', 'extra CREATE TABLE options (sysbench 1.1)'],
  // -- what and how long
  workload: ['workload', 'oltp_point_select', 'sysbench test name'],
  threads: ['threads', [1], 'number of threads; a list (150,300,600) runs one step per value'],
  time: ['int+', 10, 'seconds each thread step is measured'],
  warmup_time: ['int0', 0, 'seconds of warm-up before each step\'s measurement (sysbench 1.1)'],
  report_interval: ['int0', 0, 'seconds between sysbench-style progress lines (0: off)'],
  // -- OLTP
  tables: ['int+', 1, 'number of tables'],
  table_size: ['int0', 10000, 'number of rows per table'],
  range_size: ['int+', 100, 'range size for range SELECT queries'],
  point_selects: ['int0', 10, 'number of point SELECT queries per transaction'],
  simple_ranges: ['int0', 1, 'number of simple range SELECT queries per transaction'],
  sum_ranges: ['int0', 1, 'number of SELECT SUM() queries per transaction'],
  order_ranges: ['int0', 1, 'number of SELECT ORDER BY queries per transaction'],
  distinct_ranges: ['int0', 1, 'number of SELECT DISTINCT queries per transaction'],
  index_updates: ['int0', 1, 'number of UPDATE index queries per transaction'],
  non_index_updates: ['int0', 1, 'number of UPDATE non-index queries per transaction'],
  delete_inserts: ['int0', 1, 'number of DELETE/INSERT combinations per transaction'],
  range_selects: ['bool', true, 'enable/disable all range SELECT queries'],
  auto_inc: ['bool', true, 'use AUTO_INCREMENT column as primary key'],
  skip_trx: ['bool', false, 'don\'t start explicit transactions (AUTOCOMMIT mode)'],
  secondary: ['bool', false, 'use a secondary index in place of the PRIMARY KEY'],
  create_secondary: ['bool', true, 'create a secondary index in addition to the PRIMARY KEY'],
  // select_random_points / select_random_ranges
  random_points: ['int+', 10, 'number of random points in the IN() clause (select_random_points)'],
  number_of_ranges: ['int+', 10, 'number of random BETWEEN ranges (select_random_ranges)'],
  delta: ['int+', 5, 'size of BETWEEN ranges (select_random_ranges)'],
  // -- random numbers
  rand_type: ['rand', 'special', 'random numbers distribution'],
  rand_seed: ['int0', 0, 'seed for the random generator; 0 uses Math.random'],
  rand_spec_iter: ['int+', 12, 'iterations for the special and gaussian distributions'],
  rand_spec_pct: ['pct', 1, 'percentage of the range where special values fall'],
  rand_spec_res: ['pct<100', 75, 'percentage of special values to use'],
  rand_pareto_h: ['unit', 0.2, 'shape parameter of the Pareto distribution'],
  rand_zipfian_exp: ['num0', 0.8, 'shape parameter of the Zipfian distribution'],
  // -- ours
  preset: ['preset', '', 'a named set of defaults: tidb'],
  testid: ['id', '', 'run id tagged on every sample (generated when not given)'],
  version: ['string', '', 'version of the target (read from the server when not given)'],
  results_dir: ['string', 'results', 'where the run summary JSON is written'],
  command: ['command', 'prepare', 'prepare.js: prepare, cleanup or prewarm'],
  recreate: ['bool', false, 'prepare.js: drop and recreate tables that exist'],
  prepare_batch: ['int+', 1000, 'prepare.js: rows per multi-row INSERT (prepare_mode=client)'],
  prepare_mode: ['prepare_mode', 'auto', 'prepare.js: server (rows made by INSERT ... SELECT on the server), client (multi-row INSERTs sent by k6, as sysbench), or auto (server unless rand_seed or rand_type=zipfian)'],
};

// The seeds' (PingCAP's published reports) choices for TiDB.
export const PRESETS = {
  tidb: { rand_type: 'uniform', mysql_ignore_errors: '1062,2013,8028,9007', auto_inc: 'false' },
};

// Lowercase variables a shell may export that are not options.
const NOT_OPTIONS = new Set(['http_proxy', 'https_proxy', 'no_proxy', 'all_proxy', 'ftp_proxy']);

export class OptionError extends Error {}

function bad(name, value, valid) {
  return new OptionError(`invalid option ${name}=${value === '' ? '(empty)' : value}: ${valid}`);
}

function parseOne(name, type, raw) {
  const s = String(raw).trim();
  const int = () => (/^-?\d+$/.test(s) ? Number(s) : NaN);
  switch (type) {
    case 'string': return s;
    case 'int+': { const v = int(); if (!(v >= 1)) throw bad(name, raw, 'must be a whole number >= 1'); return v; }
    case 'int0': { const v = int(); if (!(v >= 0)) throw bad(name, raw, 'must be a whole number >= 0'); return v; }
    case 'pct': { const v = int(); if (!(v >= 0 && v <= 100)) throw bad(name, raw, 'must be a whole number from 0 to 100'); return v; }
    case 'pct<100': { const v = int(); if (!(v >= 0 && v < 100)) throw bad(name, raw, 'must be a whole number from 0 to 99'); return v; }
    case 'unit': { const v = Number(s); if (!(s !== '' && v > 0 && v < 1)) throw bad(name, raw, 'must be a number between 0 and 1 (exclusive)'); return v; }
    case 'num0': { const v = Number(s); if (!(s !== '' && v >= 0)) throw bad(name, raw, 'must be a number >= 0'); return v; }
    case 'bool': {
      if (['on', 'true', 'yes', '1'].includes(s.toLowerCase())) return true;
      if (['off', 'false', 'no', '0'].includes(s.toLowerCase())) return false;
      throw bad(name, raw, 'must be on/off (true/false, yes/no, 1/0)');
    }
    case 'threads': {
      const parts = s.split(',');
      const out = parts.map((p) => p.trim());
      if (out.some((p) => !/^\d+$/.test(p) || Number(p) < 1)) {
        throw bad(name, raw, 'must be a thread count >= 1, or a comma-separated list of them like 150,300,600');
      }
      const nums = out.map(Number);
      if (new Set(nums).size !== nums.length) throw bad(name, raw, 'each thread count may appear once in the list');
      return nums;
    }
    case 'workload':
      if (!WORKLOADS.includes(s)) throw bad(name, raw, `unknown workload (valid: ${WORKLOADS.join(', ')})`);
      return s;
    case 'rand':
      if (!RAND_TYPES.includes(s)) throw bad(name, raw, `unknown distribution (valid: ${RAND_TYPES.join(', ')})`);
      return s;
    case 'preset':
      if (s !== '' && !PRESETS[s]) throw bad(name, raw, `unknown preset (valid: ${Object.keys(PRESETS).join(', ')})`);
      return s;
    case 'command':
      if (!['prepare', 'cleanup', 'prewarm'].includes(s)) throw bad(name, raw, 'valid: prepare, cleanup, prewarm');
      return s;
    case 'prepare_mode':
      if (!['auto', 'server', 'client'].includes(s)) throw bad(name, raw, 'valid: auto, server, client');
      return s;
    case 'id':
      if (s !== '' && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(s)) throw bad(name, raw, 'letters, digits, . _ - (at most 64)');
      return s;
    case 'errors': {
      if (s.toLowerCase() === 'all') return 'all';
      if (s === '') return [];
      const codes = s.split(',').map((p) => p.trim());
      if (codes.some((c) => !/^\d+$/.test(c))) throw bad(name, raw, 'must be all or a comma-separated list of error numbers like 1062,2013');
      return codes.map(Number);
    }
    default: throw new Error(`internal: unknown option type ${type}`);
  }
}

function closest(name) {
  // a suggestion for a misspelt option: the known name with the smallest edit distance
  let best = null; let bestD = 4;
  for (const k of Object.keys(SPEC)) {
    const d = editDistance(name, k);
    if (d < bestD) { best = k; bestD = d; }
  }
  return best;
}

function editDistance(a, b) {
  const dp = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) dp[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      dp[i][j] = Math.min(dp[i - 1][j] + 1, dp[i][j - 1] + 1, dp[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return dp[a.length][b.length];
}

// parseOptions(env) -> a plain object with every option. Throws OptionError on bad input.
export function parseOptions(env) {
  for (const key of Object.keys(env)) {
    if (!/^[a-z][a-z0-9_]*$/.test(key) || NOT_OPTIONS.has(key) || SPEC[key]) continue;
    const hint = closest(key);
    throw new OptionError(`unknown option '${key}'${hint ? ` (did you mean '${hint}'?)` : ''}; valid options: ${Object.keys(SPEC).join(', ')}`);
  }
  const presetName = env.preset !== undefined ? parseOne('preset', 'preset', env.preset) : '';
  const preset = presetName ? PRESETS[presetName] : {};
  const o = {};
  for (const [name, [type, def]] of Object.entries(SPEC)) {
    const raw = env[name] !== undefined ? env[name] : preset[name];
    o[name] = raw !== undefined ? parseOne(name, type, raw) : def;
  }
  if (o.mysql_port > 65535) throw bad('mysql_port', o.mysql_port, 'must be a TCP port from 1 to 65535');
  if (o.prepare_mode === 'server' && (o.rand_seed || o.rand_type === 'zipfian')) {
    throw bad('prepare_mode', 'server', `the server's RAND() cannot give ${o.rand_seed ? 'seeded (rand_seed) values' : 'the zipfian distribution'}: use prepare_mode=client or auto`);
  }
  return o;
}

export function optionHelp() {
  return Object.entries(SPEC).map(([k, [, d, desc]]) => `  ${k}=${Array.isArray(d) ? d.join(',') : d}  ${desc}`).join('\n');
}

// dsn(o) -> go-sql-driver/mysql DSN; `where` names the server without the password.
export function dsn(o) {
  const params = 'timeout=5s&parseTime=false';
  return `${o.mysql_user}:${o.mysql_password}@tcp(${o.mysql_host}:${o.mysql_port})/${o.mysql_db}?${params}`;
}

export function where(o) {
  return `${o.mysql_host}:${o.mysql_port} as user '${o.mysql_user}' (database '${o.mysql_db}')`;
}
