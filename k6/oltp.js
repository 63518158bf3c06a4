// sysbench's OLTP workloads in k6: `k6 run -e workload=oltp_read_write -e threads=150,300 oltp.js`.
// Options are sysbench 1.0.20's, under its names with `_` for `-` (see k6/lib/config.js or
// `-e help=1`... the README lists them). One database connection per VU; one k6 scenario per
// thread step; metrics as in docs/CONTRACT.md.
import exec from 'k6/execution';
import { parseOptions } from './lib/config.js';
import { makeRand, seededSource } from './lib/rand.js';
import { EVENTS, workState, uniqueSequence } from './lib/sysbench.js';
import * as R from './lib/runner.js';
import { summarize } from './lib/summary.js';
import { progressScenario, progressLine } from './lib/progress.js';

const o = parseOptions(__ENV);
const testid = o.testid || R.newTestId();
const host = R.hostFacts();

const steps = R.stepScenarios(o);
const windows = R.stepWindows(o);
const totalSeconds = o.threads.length * (o.warmup_time + o.time + R.GRACE_S);

export const options = {
  scenarios: { ...steps, ...progressScenario(o, totalSeconds) },
  thresholds: R.stepThresholds(o),
  tags: { testid, workload: o.workload },
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(95)', 'p(99)', 'count'],
  setupTimeout: '60s',
  teardownTimeout: '60s',
};

// ---- per VU
const db = R.openDb(o);
const conn = new R.Conn(db);
const event = EVENTS[o.workload];
let scenario = '';
let scenarioInfo = null; // exec.scenario, built once per VU (its accessors read live state)
let w = null;
let measureStart = 0;
let warming = false;
let nextCheck = 0; // epoch ms of the next moment this VU must look at its step (slow path)
let stepEnd = 0; // epoch ms: the end of this VU's step (its scenario's duration)

function hashString(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

// activate: the VU enters a new thread step (scenario).
function activate(data) {
  scenario = exec.scenario.name;
  const threads = Number(scenario.slice(1));
  const vu = exec.vu.idInTest;
  const random = o.rand_seed ? seededSource(o.rand_seed, vu) : Math.random;
  w = workState(o, makeRand(o, random), (vu - 1) % threads, threads);
  const seed = o.rand_seed || hashString(data.testid);
  w.unique = uniqueSequence(seed, seed ^ 0x5bd1e995, vu);
  const tags = exec.vu.metrics.tags;
  tags.version = data.version;
  const start = exec.scenario.startTime;
  measureStart = start + o.warmup_time * 1000;
  stepEnd = measureStart + o.time * 1000;
  warming = o.warmup_time > 0;
  tags.warmup = String(warming);
  if (exec.scenario.iterationInTest === 0) {
    const t = { version: data.version, threads: String(threads) };
    R.metrics.marker.add(start, { ...t, event: 'step_start', warmup: String(warming) });
    R.metrics.marker.add(measureStart, { ...t, event: 'measure_start', warmup: 'false' });
    R.metrics.marker.add(measureStart + o.time * 1000, { ...t, event: 'measure_end', warmup: 'false' });
  }
  if (o.workload === 'bulk_insert') w.flushAfter = measureStart + o.time * 1000 - 500;
  nextCheck = warming ? measureStart : nextStepStart(threads, data);
}

// The next step's planned start (the executors start right after setup, so its real start is
// not earlier); until then nothing about this VU's step can change but the warm-up flag.
function nextStepStart(threads, data) {
  const i = o.threads.indexOf(threads);
  return i + 1 < windows.length ? data.run_start + windows[i + 1].start - 50 : Infinity;
}

export function setup() {
  const sdb = R.openDb(o);
  const v = R.connectOrExplain(sdb, o);
  const info = R.targetInfo(sdb, v);
  const bulk = o.workload === 'bulk_insert';
  const need = bulk ? Math.max(...o.threads) : o.tables;
  if (o.workload.startsWith('select_random_') && o.tables !== 1) {
    throw new Error(`invalid option tables=${o.tables}: ${o.workload} supports only tables=1`);
  }
  const have = R.existingTables(sdb);
  const missing = [];
  for (let t = 1; t <= need; t++) if (!have.has(`sbtest${t}`)) missing.push(`sbtest${t}`);
  if (missing.length) {
    const how = bulk ? `k6 run -e workload=bulk_insert -e threads=${need} prepare.js`
      : `k6 run -e tables=${need} -e table_size=${o.table_size} prepare.js`;
    throw new Error(`table ${missing[0]} does not exist in database '${o.mysql_db}' at ${o.mysql_host}:${o.mysql_port} ` +
      `(${missing.length} of ${need} tables missing): run prepare first: ${how}`);
  }
  const variables = R.globalVariables(sdb);
  sdb.close();
  const version = o.version || info.version;
  const id = exec.test.options.tags.testid;
  const runStart = Date.now();
  R.metrics.marker.add(runStart, { event: 'run_start', version, threads: o.threads.join(','), warmup: 'false' });
  console.log(`testid=${id} workload=${o.workload} target=${o.mysql_host}:${o.mysql_port} version=${version} threads=${o.threads.join(',')}`);
  return {
    testid: id, version, product: info.product, version_full: info.full, run_start: runStart,
    variables, host,
  };
}

export default function (data) {
  if (Date.now() >= nextCheck) { // the slow path: a new step, or the end of the warm-up
    if (!scenarioInfo) scenarioInfo = exec.scenario;
    if (scenarioInfo.name !== scenario) {
      activate(data);
    } else if (warming && Date.now() >= measureStart) {
      warming = false;
      exec.vu.metrics.tags.warmup = 'false';
      nextCheck = nextStepStart(Number(scenario.slice(1)), data);
    }
  }
  // Events back to back for up to a second, never across a boundary (the end of the
  // warm-up, the end of the step): one k6 iteration per batch, not per event.
  R.runEvents(conn, event, w, o, Math.min(nextCheck, stepEnd, Date.now() + R.BATCH_MS));
}

// One extra VU prints sysbench-style lines every report_interval seconds (lib/progress.js).
export function progress(data) {
  const line = progressLine(o, data, __ENV, R.GRACE_S);
  if (line) console.log(line);
}

export function teardown(data) {
  R.metrics.marker.add(Date.now(), { event: 'run_end', version: data.version, threads: o.threads.join(','), warmup: 'false' });
}

export function handleSummary(data) {
  return summarize(data, o);
}
