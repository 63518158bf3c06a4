// Options, under sysbench 1.0.20's own names and defaults (`-` written as `_`), read from
// `-e name=value` (k6's __ENV). Bad values stop the run before any query, naming the option.
import tbs from 'k6/x/tbs';
import { RAND_TYPES } from './rand.js';

// The shared contract (k6/contract.json): workloads, options with types, defaults and help,
// presets, the testid rule, timing. Also read by tidbbench/ and the README.
//
// Every VU runs this module (k6 runs the init context once per VU): parsing the whole file in
// each was a tenth of a VU's memory (its help texts, and the latency histogram, which only
// k6/x/tbs and Python read; docs/bench.md). So the first runtime of the process reads it and
// keeps what a VU may need as k6/x/tbs notes, one per part (per option [type, default, valid
// values], the workloads, presets, testid rule, timing: 3 KB of JSON in all); `-e help=1`
// (one VU) reads the file whole for the help texts. Even the slim parts and the options, parsed
// in every VU, were about 75 KiB of JavaScript objects per VU (an array per option), and a
// load-generating VU reads only its options (vuOptions: parsed once per process), the timing
// and one workload: so each part is parsed in a VU when it is first read (CONTRACT's getters).
const WHOLE = __ENV.help !== undefined;
// k6 resolves open() from the file that calls it: this one (k6/lib/), or k6/oltp.js, the bundle
// scripts/bundle makes of k6/src/oltp.js and k6/lib/, which defines TBS_CONTRACT_FILE.
// eslint-disable-next-line no-undef
const CONTRACT_FILE = typeof TBS_CONTRACT_FILE === 'string' ? TBS_CONTRACT_FILE : '../contract.json';
const SLIM_NOTE = 'contract/slim/';
const WORKLOAD_NOTE = 'contract/slim/workload/';
const PARTS = ['workloads', 'testid', 'options', 'presets', 'timing'];

function slim(c) {
  const options = {};
  for (const [name, spec] of Object.entries(c.options)) options[name] = [spec.type, spec.default, spec.valid || null];
  return { workloads: c.workloads, testid: c.testid, options, presets: c.presets, timing: c.timing };
}

let whole = null; // -e help=1: the whole file
if (WHOLE) whole = JSON.parse(open(CONTRACT_FILE));
else if (tbs.noteText(`${SLIM_NOTE}timing`) === null) {
  const s = slim(JSON.parse(open(CONTRACT_FILE)));
  for (const k of PARTS) tbs.note(SLIM_NOTE + k, JSON.stringify(s[k])); // the first write wins: every VU gets the same text
  for (const [name, d] of Object.entries(s.workloads)) tbs.note(`${WORKLOAD_NOTE}${name}`, JSON.stringify(d));
}

// CONTRACT.<part>: the slim contract's part, parsed on first use (the whole file's with -e help=1).
export const CONTRACT = {};
for (const k of PARTS) {
  let v;
  Object.defineProperty(CONTRACT, k, {
    enumerable: true,
    get: () => {
      if (v === undefined) v = whole ? (k === 'options' ? slim(whole).options : whole[k]) : tbs.noteValue(SLIM_NOTE + k);
      return v;
    },
  });
}
// workloadSpec(name) -> one workload's declaration (CONTRACT.workloads[name]) or undefined. A
// load-generating VU reads only its own (its note, written with the slim parts): JSON.parse of
// every workload in every VU, to read one, cost each VU many times what its own alone does (the
// figures: docs/bench.md, "Measured on 2026-11-26 (night)").
const workloadSpecs = new Map();
export function workloadSpec(name) {
  if (whole) return whole.workloads[name];
  if (!workloadSpecs.has(name)) {
    const d = tbs.noteValue(`${WORKLOAD_NOTE}${name}`);
    workloadSpecs.set(name, d === null ? undefined : d);
  }
  return workloadSpecs.get(name);
}

// The whole file's option entries (with their help texts), -e help=1 only.
const HELP = () => whole.options;
// compiled when a testid is given (a RegExp with a {0,63} repeat is tens of KiB per VU)
let testidRe = null;
const TESTID = { test: (s) => (testidRe || (testidRe = new RegExp(CONTRACT.testid.pattern))).test(s) };

// Lowercase variables a shell may export that are not options: the proxies, and npm's (npm run
// and a shell with npm_config_* set export npm_config_*, npm_package_*, npm_lifecycle_*, ...),
// which no option's name starts with (k6/jstest/options_test.go).
const NOT_OPTIONS = new Set(['http_proxy', 'https_proxy', 'no_proxy', 'all_proxy', 'ftp_proxy', 'help']);
const NOT_OPTION_PREFIXES = ['npm_'];
const notOption = (key) => NOT_OPTIONS.has(key) || NOT_OPTION_PREFIXES.some((p) => key.startsWith(p));

// An address only: host:port, no scheme, path or user (options hostport and hostports; the
// literal is compiled only where an address is given, not in every VU).
const isHostPort = (s) => /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):\d{1,5}$/.test(s);

export class OptionError extends Error {}

function bad(name, value, valid) {
  return new OptionError(`invalid option ${name}=${value === '' ? '(empty)' : value}: ${valid}`);
}

// addressOption: option hostport's host:port, or hostports' comma list of them (kept as given,
// less the spaces around its entries), or empty. A value with a user may hold a password: it is
// not repeated in the error.
function addressOption(name, raw, s, list) {
  const parts = s === '' ? [] : (list ? s.split(',').map((p) => p.trim()) : [s]);
  if (parts.some((p) => !isHostPort(p))) {
    throw bad(name, s.includes('@') ? '(a value with user@, not shown)' : raw, list
      ? 'must be host:port, or a comma list of them (e.g. tikv:20180,tikv2:20180), or empty'
      : 'must be host:port (e.g. 127.0.0.1:10080; [::1]:10080), or empty');
  }
  return parts.join(',');
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
    case 'auto_int0': {
      if (s.toLowerCase() === 'auto') return 'auto';
      const v = int(); if (!(v >= 0)) throw bad(name, raw, 'must be auto or a whole number >= 0'); return v;
    }
    case 'auto_int+': {
      if (s.toLowerCase() === 'auto') return 'auto';
      const v = int(); if (!(v >= 1)) throw bad(name, raw, 'must be auto or a whole number >= 1'); return v;
    }
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
      if (!Object.keys(CONTRACT.workloads).includes(s)) throw bad(name, raw, `unknown workload (valid: ${Object.keys(CONTRACT.workloads).join(', ')})`);
      return s;
    case 'rand':
      if (!RAND_TYPES.includes(s)) throw bad(name, raw, `unknown distribution (valid: ${RAND_TYPES.join(', ')})`);
      return s;
    case 'preset':
      if (s !== '' && !CONTRACT.presets[s]) throw bad(name, raw, `unknown preset (valid: ${Object.keys(CONTRACT.presets).join(', ')})`);
      return s;
    case 'command':
      if (!['prepare', 'cleanup', 'prewarm'].includes(s)) throw bad(name, raw, 'valid: prepare, cleanup, prewarm');
      return s;
    case 'prepare_mode':
      if (!['auto', 'server', 'client'].includes(s)) throw bad(name, raw, 'valid: auto, server, client');
      return s;
    case 'id':
      if (s !== '' && !TESTID.test(s)) throw bad(name, raw, `letters, digits, . _ - (at most ${CONTRACT.testid.max_length}, starting with a letter or digit)`);
      return s;
    case 'hostport': // no scheme, path or user: an address only (it is printed and kept in the manifest)
    case 'hostports': return addressOption(name, raw, s, type === 'hostports');
    case 'ssl':
    case 'choice': // one of the option's own valid values
      if (!CONTRACT.options[name][2].includes(s)) throw bad(name, raw, `valid: ${CONTRACT.options[name][2].join(', ')}`);
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
  for (const k of Object.keys(CONTRACT.options)) {
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
    if (!/^[a-z][a-z0-9_]*$/.test(key) || notOption(key) || CONTRACT.options[key]) continue;
    const hint = closest(key);
    throw new OptionError(`unknown option '${key}'${hint ? ` (did you mean '${hint}'?)` : ''}; valid options: ${Object.keys(CONTRACT.options).join(', ')}`);
  }
  const presetName = env.preset !== undefined ? parseOne('preset', 'preset', env.preset) : '';
  const preset = presetName ? CONTRACT.presets[presetName] : {};
  const o = {};
  for (const [name, [type, def]] of Object.entries(CONTRACT.options)) {
    const raw = env[name] !== undefined ? env[name] : preset[name];
    o[name] = raw !== undefined ? parseOne(name, type, raw) : def;
  }
  if (o.mysql_port > 65535) throw bad('mysql_port', o.mysql_port, 'must be a TCP port from 1 to 65535');
  if (o.mysql_password_file) {
    if (o.mysql_password) throw bad('mysql_password_file', o.mysql_password_file, 'give mysql_password or mysql_password_file, not both');
    let text;
    try {
      text = open(o.mysql_password_file);
    } catch (e) {
      throw bad('mysql_password_file', o.mysql_password_file, `cannot read the file (${String(e.message || e).split('\n')[0]})`);
    }
    o.mysql_password = text.replace(/\r?\n$/, '');
    if (!o.mysql_password) throw bad('mysql_password_file', o.mysql_password_file, 'the file is empty');
  }
  if (o.mysql_ssl_ca && o.mysql_ssl !== 'verify') throw bad('mysql_ssl', o.mysql_ssl, 'mysql_ssl_ca is given: use mysql_ssl=verify');
  o.help = env.help !== undefined;
  if (o.prepare_mode === 'server' && (o.rand_seed || o.rand_type === 'zipfian')) {
    throw bad('prepare_mode', 'server', `the server's RAND() cannot give ${o.rand_seed ? 'seeded (rand_seed) values' : 'the zipfian distribution'}: use prepare_mode=client`);
  }
  return o;
}

// vuOptions(env) -> parseOptions(env), parsed once per process: the first runtime parses (and
// throws on bad input) and keeps the result as a k6/x/tbs note: one plain object instead of the
// contract's option table in every VU. The other VUs get it as a new object built in Go
// (tbs.noteValue: the text is parsed once per process, where JSON.parse tokenized it again in
// every VU). The note is keyed by the whole environment (the same in every VU of a run), and
// stays in the process, as the environment it came from does. The figures: docs/bench.md,
// "Measured on 2026-11-26 (night)".
export function vuOptions(env) {
  // native: a sorted copy of __ENV made in JavaScript read every variable through sobek's
  // reflection on k6's Go map, in every VU (docs/bench.md, night)
  const name = `options/${tbs.envKey(env)}`;
  const noted = tbs.noteValue(name);
  if (noted !== null) return noted;
  const o = parseOptions(env);
  tbs.note(name, JSON.stringify(o));
  return o;
}

// FNV-1a of s (32 bits, over its UTF-16 code units), native (k6/x/tbs hash.go): every VU hashes
// its whole environment, a third of a VU's init CPU when the loop ran in JavaScript.
export function hashText(s) {
  return tbs.hash(s);
}

// optionHelp() -> the options, their defaults and help, one per line (`-e help=1`).
// The help texts are read with `-e help=1` only (WHOLE).
export function optionHelp() {
  if (!WHOLE) throw new Error('internal: optionHelp() needs the whole contract (-e help=1)');
  const show = (d) => (Array.isArray(d) ? d.join(',') : String(d));
  const width = Math.max(...Object.keys(CONTRACT.options).map((k) => k.length + show(CONTRACT.options[k][1]).length)) + 3;
  return Object.entries(CONTRACT.options).map(([k, [, d]]) => `  ${`${k}=${show(d)}`.padEnd(width)}${HELP()[k].help}`).join('\n');
}

// dsn(o) -> go-sql-driver/mysql DSN; `where` names the server without the password.
export function dsn(o) {
  let params = 'timeout=5s&parseTime=false';
  if (o.mysql_ssl === 'on') params += '&tls=skip-verify';
  if (o.mysql_ssl === 'verify') params += o.mysql_ssl_ca ? `&tbs_ssl_ca=${encodeURIComponent(o.mysql_ssl_ca)}` : '&tls=true';
  return `${o.mysql_user}:${o.mysql_password}@tcp(${o.mysql_host}:${o.mysql_port})/${o.mysql_db}?${params}`;
}

export function where(o) {
  return `${o.mysql_host}:${o.mysql_port} as user '${o.mysql_user}' (database '${o.mysql_db}')`;
}
