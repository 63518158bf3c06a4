// TPC-C as go-tpc v1.0.7 (`tiup bench tpcc`) runs it, in k6 (docs/tpcc.md):
//   k6 run -e tpcc_command=prepare -e warehouses=4 -e threads=4 tpcc.js   # go-tpc tpcc prepare
//   k6 run -e warehouses=4 -e threads=4,8 -e time=60 tpcc.js             # go-tpc tpcc run, a step per thread count
//   k6 run -e tpcc_command=check -e warehouses=4 tpcc.js                  # go-tpc tpcc check
//   k6 run -e tpcc_command=cleanup tpcc.js                                # go-tpc tpcc cleanup
// go-tpc's own tpcc package runs the workload (k6/x/tbs tpcc.go: schema, data, the five
// transactions, their mix, the checks); this script gives it k6's thread steps (as oltp.js:
// each step a separate run on fresh connections, one go-tpc thread per VU), the metrics of
// docs/CONTRACT.md (tpcc_transactions, tpcc_errors, tpcc_latency per transaction type, the
// markers) and the run manifest (lib/tpccsummary.js: tpmC per step).
import exec from 'k6/execution';
import { sleep } from 'k6';
import tbs from 'k6/x/tbs';
import { vuOptions, optionHelp, dsn, where, OptionError } from '../lib/config.js';
import { metrics } from '../lib/metrics.js';
import { openDb } from '../lib/conn.js';
import { gateNames, gateParties, histName, stepScenarios, stepWindows, connectSeconds } from '../lib/steps.js';
import { asText, connectOrExplain, globalVariables, targetInfo } from '../lib/target.js';
import { hostFacts, instanceOf, newTestId } from '../lib/run.js';
import { capture as captureStatements, statementsScenario } from '../lib/statements.js';

const summaryLib = __VU === 0 ? require('../lib/tpccsummary.js') : null;

// go-tpc's tables (k6/x/tbs TpccTables).
export const TABLES = ['item', 'customer', 'district', 'history', 'new_order', 'order_line', 'orders', 'stock', 'warehouse'];

// checkOptions: what tpcc.js adds to the contract's checks, before anything connects.
export function checkOptions(o) {
  const bad = (name, v, why) => new OptionError(`invalid option ${name}=${v}: ${why}`);
  if (o.parts > o.warehouses) throw bad('parts', o.parts, `must be from 1 to warehouses (${o.warehouses}): go-tpc partitions by warehouse`);
  if (o.tpcc_command !== 'run' && o.threads.length > 1) {
    throw bad('threads', o.threads.join(','), `tpcc_command=${o.tpcc_command} runs on one thread count (the thread steps are run's)`);
  }
  if (o.rate) throw bad('rate', o.rate, 'tpcc.js runs transactions back to back, as go-tpc (wait=true for TPC-C\'s keying and think times)');
  return o;
}

const o = __VU === 0 && !__ENV.help ? checkOptions(vuOptions(__ENV)) : vuOptions(__ENV);
const CMD = o.tpcc_command;
// one go-tpc thread per VU: stepScenarios' threads_per_vu is 1
const so = { ...o, threads_per_vu: 1, native_loop: false };
const windows = stepWindows(so);
const testid = __VU === 0 ? o.testid || newTestId() : '';
const host = __VU === 0 ? hostFacts() : null;

function runOptions() {
  if (o.help) return { scenarios: { help: { executor: 'shared-iterations', exec: 'help', vus: 1, iterations: 1 } } };
  const tags = { testid, workload: 'tpcc' };
  if (CMD !== 'run') {
    return {
      scenarios: { command: { executor: 'shared-iterations', exec: 'command', vus: 1, iterations: 1, maxDuration: '72h' } },
      tags: { ...tags, command: CMD }, setupTimeout: '60s', summaryTrendStats: ['avg', 'max', 'count'],
    };
  }
  const totalSeconds = Math.ceil(windows[windows.length - 1].end / 1000);
  return {
    scenarios: { ...stepScenarios(so), ...statementsScenario(o, totalSeconds) },
    tags, summaryTrendStats: ['avg', 'min', 'max', 'count'], setupTimeout: '60s', teardownTimeout: '60s',
  };
}

export const options = __VU === 0 ? runOptions() : undefined;

const spec = { dsn: dsn(o), warehouses: o.warehouses, parts: o.parts, wait: o.wait, check_all: o.check_all, ignore_error: o.ignore_error, no_check: o.no_check };
const tpcc = o.help ? null : tbs.tpcc('tpcc', spec);
const rec = o.help || CMD !== 'run' ? null : tbs.tpccRecorder();

function tableSet(db) {
  return new Set(db.query('SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE()')
    .map((r) => asText(r.t || r.T || r.TABLE_NAME || r.table_name).toLowerCase()));
}

const rowsOf = (db, t) => Number(asText(db.query(`SELECT COUNT(*) AS n FROM ${t}`)[0].n));

const CLEANUP = 'k6 run -e tpcc_command=cleanup tpcc.js';

// unfinished: the error for a database whose prepare marker (k6/x/tbs tpccmarker.go) says a
// prepare of ours did not finish.
function unfinished(at, mk) {
  const w = mk.warehouses || o.warehouses;
  const why = mk.state === 'checking' ? "go-tpc's load ended, but its prepare check did not pass (or was stopped)"
    : 'its tables are partly loaded';
  return new Error(`${at} holds a prepare of ours that did not finish (its marker, table ${mk.table}: state ${mk.state}` +
    `${mk.started ? `, started ${mk.started} UTC` : ''}, ${w} warehouses): ${why}. ` +
    `Clean up, then prepare again: ${CLEANUP}; k6 run -e tpcc_command=prepare -e warehouses=${w} tpcc.js`);
}

// checkSchema: prepare needs none of go-tpc's tables and no prepare marker; run and check need
// all of them, a marker that says done when there is one (a database go-tpc prepared has none),
// and at least `warehouses` warehouses (counted in the tables a prepare loads first).
function checkSchema(db) {
  const have = tableSet(db);
  const mk = tpcc.marker();
  const present = TABLES.filter((t) => have.has(t));
  const at = `database '${o.mysql_db}' at ${o.mysql_host}:${o.mysql_port}`;
  if (CMD === 'prepare' && (present.length || mk.exists)) {
    const what = present.length ? `table ${present[0]} already exists in ${at} (${present.length} of ${TABLES.length} go-tpc tables exist` +
      `${mk.exists ? `, and our prepare marker ${mk.table}, state ${mk.state}` : ''})` : `our prepare marker (table ${mk.table}, state ${mk.state}) exists in ${at}`;
    throw new Error(`${what}; nothing was changed. Run cleanup first (${CLEANUP})`);
  }
  if (CMD !== 'run' && CMD !== 'check') return;
  if (mk.exists && mk.state !== 'done') throw unfinished(at, mk);
  const missing = TABLES.filter((t) => !have.has(t));
  if (missing.length) {
    throw new Error(`table ${missing[0]} does not exist in ${at} (${missing.length} of ${TABLES.length} go-tpc tables missing): ` +
      `run prepare first: k6 run -e tpcc_command=prepare -e warehouses=${o.warehouses} tpcc.js`);
  }
  const n = { warehouse: rowsOf(db, 'warehouse'), district: rowsOf(db, 'district'), item: rowsOf(db, 'item') };
  if (Math.min(n.warehouse, Math.floor(n.district / 10)) < o.warehouses || n.item !== 100000) {
    throw new Error(`${at} holds ${n.warehouse} warehouses, ${n.district} districts and ${n.item} items, ` +
      `not the ${o.warehouses} warehouses (of 10 districts each) and 100000 items that warehouses=${o.warehouses} needs: ` +
      'give the warehouses it was prepared with, or clean up and prepare again (a prepare that stopped leaves it partly loaded)');
  }
}

export function setup() {
  if (o.help) return {};
  if (CMD === 'run') tbs.checkResultsDir(o.results_dir);
  const sdb = openDb(o);
  const v = connectOrExplain(sdb, o);
  const info = targetInfo(sdb, v);
  checkSchema(sdb);
  const variables = CMD === 'run' ? globalVariables(sdb) : {};
  sdb.close();
  const version = o.version || info.version;
  const inst = instanceOf(exec.test.options);
  const runStart = Date.now();
  if (CMD === 'run') {
    metrics.marker.add(runStart, { event: 'run_start', version, threads: o.threads.join(','), warmup: 'false', testid, workload: 'tpcc', instance_id: inst.id });
    tbs.note(`${testid}/variables`, JSON.stringify(variables));
    tbs.note(`${testid}/run`, JSON.stringify({ version_full: info.full, host, txns: tpcc.txns() }));
  }
  console.log(`testid=${testid} workload=tpcc command=${CMD} target=${o.mysql_host}:${o.mysql_port} version=${version} ` +
    `warehouses=${o.warehouses} parts=${o.parts} threads=${o.threads.join(',')}`);
  return { testid, version, product: info.product, run_start: runStart, instance_id: inst.id, instances: inst.instances, lane: inst.lane };
}

// prepare / check / cleanup: one call into go-tpc, which runs its `threads` threads itself.
export function command() {
  const t0 = Date.now();
  try {
    if (CMD === 'prepare') tpcc.prepare(o.threads[0]);
    else if (CMD === 'check') tpcc.check(o.threads[0]);
    else tpcc.cleanup();
  } catch (e) {
    const m = String(e.message || e).replace(/^GoError: /, '');
    const hint = CMD === 'prepare' ? `: the prepare did not finish (its prepare marker says so: run and check refuse the database); ` +
      `clean up (${CLEANUP}) before preparing again` : '';
    const msg = `tpcc ${CMD} failed at ${where(o)}: ${m}${hint}`;
    console.error(`FATAL: ${msg}`);
    exec.test.abort(msg);
    return;
  }
  console.log(`tpcc ${CMD} done in ${((Date.now() - t0) / 1000).toFixed(1)} s` +
    `${CMD === 'prepare' ? ` (${o.warehouses} warehouses, ${o.threads[0]} threads; ${o.no_check ? "no_check: go-tpc's prepare check skipped" : "go-tpc's prepare check passed"})` : ''}` +
    `${CMD === 'check' ? ` (${o.warehouses} warehouses: every condition passed)` : ''}`);
}

// ---- run: a VU is one go-tpc thread of each step
let scenario = '';
let threadId = 0;
let th = null; // the VU's go-tpc thread (its connection) in the current step
let step = null;
let stepEnd = 0;
let measureStart = 0;
let warming = false;
let stopLogged = false;
let vuTags = null;

function activate(data) {
  const si = exec.scenario;
  scenario = si.name;
  const threads = Number(scenario.slice(1));
  const id = si.iterationInTest; // the step's VUs start their first iterations together (steps.js stepScenarios)
  threadId = id;
  const start = si.startTime;
  const latest = start + connectSeconds(so, threads) * 1000;
  const name = histName(data.testid, threads);
  const parties = gateParties(o, data, threads);
  const gates = parties ? gateNames(data.testid, threads) : null;
  if (th) th.close();
  th = null;
  if (!vuTags) vuTags = exec.vu.metrics.tags;
  Object.assign(vuTags, { testid: data.testid, workload: 'tpcc', version: data.version, instance_id: data.instance_id, warmup: 'true' });
  try {
    th = tbs.tpcc('tpcc', spec).thread(id, rec);
  } catch (e) {
    console.error(`tpcc thread ${id}: ${String(e.message || e).replace(/^GoError: /, '')}: it runs no transactions in step t${threads}`);
  }
  if (th) tbs.counter(`${name}/ready`).add(1);
  step = tbs.tpccStep(name);
  tbs.mark(`${name}/scenario_start`, start);
  let go = latest;
  if (gates) {
    tbs.barrier(gates.connected, threads).arrive();
    const gate = tbs.barrier(gates.go, parties);
    gate.arrive();
    const at = gate.wait(latest);
    if (at > 0) go = Math.min(at, latest);
    tbs.mark(`${name}/go`, go);
  }
  measureStart = go + o.warmup_time * 1000;
  stepEnd = th ? measureStart + o.time * 1000 : 0;
  warming = o.warmup_time > 0;
  stopLogged = false;
  if (id === 0) {
    const t = { version: data.version, threads: String(threads) };
    metrics.marker.add(go, { ...t, event: 'step_start', warmup: String(warming) });
    metrics.marker.add(measureStart, { ...t, event: 'measure_start', warmup: 'false' });
    metrics.marker.add(measureStart + o.time * 1000, { ...t, event: 'measure_end', warmup: 'false' });
  }
  const wait = go - Date.now();
  if (wait > 0) sleep(wait / 1000);
  if (th) th.use(null);
  if (!warming) startMeasuring(name);
}

function startMeasuring(name) {
  warming = false;
  vuTags.warmup = 'false';
  if (th) th.use(step);
  tbs.mark(`${name}/cpu_start`, tbs.cpuSeconds());
}

function endStep(data) {
  tbs.mark(`${histName(data.testid, Number(scenario.slice(1)))}/cpu_end`, tbs.cpuSeconds());
  if (th) {
    const why = th.stopped();
    if (why) tbs.counter(`${histName(data.testid, Number(scenario.slice(1)))}/stopped`).add(1);
    th.close();
  }
  th = null;
  stepEnd = 0;
}

export default function (data) {
  if (exec.scenario.name !== scenario) {
    activate(data);
    return;
  }
  if (!stepEnd) { sleep(1); return; }
  const now = Date.now();
  if (warming && now >= measureStart) startMeasuring(histName(data.testid, Number(scenario.slice(1))));
  if (now >= stepEnd) { endStep(data); return; }
  const until = Math.min(warming ? measureStart : stepEnd, now + 1000);
  th.run(until);
  const why = th.stopped();
  if (why && !stopLogged) {
    stopLogged = true;
    console.warn(`tpcc thread ${threadId}: stopped for the rest of the step by an error (go-tpc's rule without ignore_error): ${why}`);
  }
  if (why) { const left = stepEnd - Date.now(); if (left > 0) sleep(Math.min(left, 1000) / 1000); }
  if (Date.now() >= stepEnd) endStep(data);
}

export function statements(data) {
  captureStatements(o, data, windows);
}

export function help() {}

export function teardown(data) {
  if (o.help || CMD !== 'run' || !data.testid) return;
  metrics.marker.add(Date.now(), { event: 'run_end', version: data.version, threads: o.threads.join(','), warmup: 'false', testid: data.testid, workload: 'tpcc', instance_id: data.instance_id });
}

export function handleSummary(data) {
  if (o.help) return { stdout: `options (-e name=value; k6/contract.json has them all):\n${optionHelp()}\n` };
  if (CMD !== 'run') return { stdout: '' };
  return summaryLib.summarize(data, o, tbs);
}
