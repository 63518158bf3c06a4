// sysbench's OLTP workloads in k6: `k6 run -e workload=oltp_read_write -e threads=150,300 oltp.js`.
// Options are sysbench 1.0.20's, under its names with `_` for `-` (k6/contract.json lists
// them; `-e help=1` prints them). One database connection per sysbench thread, and one thread
// per VU or, on the native loop, threads_per_vu of them; one k6 scenario per thread step;
// metrics as in docs/CONTRACT.md.
//
// Each thread step is a separate sysbench run: its threads open fresh connections and prepare
// their statements before the step's load begins, the previous step's connections are
// closed, every thread id 0..threads-1 is used once, random streams are fresh, and the
// step's latency goes into its own sysbench histogram (k6/x/tbs).
import exec from 'k6/execution';
import { sleep } from 'k6';
import tbs from 'k6/x/tbs';
import { vuOptions, optionHelp, hashText, workloadSpec } from '../lib/config.js';
import { makeRand } from '../lib/rand.js';
import { bindEvent, nativeLoop, workState, flushBulk } from '../lib/sysbench.js';
import { metrics, tally } from '../lib/metrics.js';
import { Conn, connectUntil, openDb } from '../lib/conn.js';
import { BATCH_MS, FLUSH_MS, runEvents, runLoops, runQueued } from '../lib/events.js';
import { connectSeconds, gateNames, gateParties, histName, queueName, stepScenarios, stepThreads, stepThresholds, stepWindows, threadsPerVu } from '../lib/steps.js';
import { asText, connectOrExplain, existingTables, globalVariables, targetInfo } from '../lib/target.js';
import { hostFacts, instanceOf, newTestId, segmentFraction } from '../lib/run.js';
import { monitorScenario, monitor as monitorTick } from '../lib/progress.js';
import { capture as captureStatements, statementsScenario } from '../lib/statements.js';
import { disturbScenario, watch as watchDisturbance } from '../lib/disturb.js';
import { capture as captureProfiles, profileScenario } from '../lib/profiles.js';

// The end-of-test summary (lib/summary.js) is loaded only where handleSummary runs: k6 runs it,
// setup and teardown in runtimes of their own, whose __VU is 0. k6 runs this init code once per
// VU, and each module costs every VU its memory (docs/bench.md).
const summaryLib = __VU === 0 ? require('../lib/summary.js') : null;

const o = vuOptions(__ENV);
const windows = stepWindows(o);

// The run's options. k6 reads them from the first runtime (__VU 0, which also runs setup,
// teardown and handleSummary) and copies the run's consolidated options into the `options`
// object every other VU exports: in the VUs it is left undefined, which spares each VU the
// scenarios and thresholds in two copies (docs/bench.md). The testid and host facts are read
// by setup only.
const testid = __VU === 0 ? o.testid || newTestId() : '';
const host = __VU === 0 ? hostFacts() : null;

function runOptions() {
  if (o.help) return { scenarios: { help: { executor: 'shared-iterations', exec: 'help', vus: 1, iterations: 1 } } };
  const totalSeconds = Math.ceil(windows[windows.length - 1].end / 1000);
  const startWait = o.start_at ? Math.max(0, (o.start_at - Date.now()) / 1000) : 0;
  return {
    scenarios: { ...stepScenarios(o), ...monitorScenario(o, totalSeconds), ...statementsScenario(o, totalSeconds), ...disturbScenario(o, totalSeconds), ...profileScenario(o, totalSeconds) },
    thresholds: stepThresholds(o),
    tags: { testid, workload: o.workload },
    summaryTrendStats: ['avg', 'min', 'max', 'count'],
    setupTimeout: `${Math.ceil(startWait) + 60}s`,
    teardownTimeout: '60s',
  };
}

export const options = __VU === 0 ? runOptions() : undefined;

// ---- per VU (its first sysbench thread's connection and recorder; threads_per_vu adds more)
const conn = new Conn(o);
const rec = tbs.recorder('oltp_latency', o.rate ? 'oltp_response_latency' : '');
// The per-event calls as native functions (k6/x/tbs: rec.done / rec.doneDue without sobek's
// reflection wrapper, a few µs per event at full speed; docs/bench.md).
const done = rec.doneFn();
const doneDue = o.rate ? rec.doneDueFn() : null;
conn.samples = rec; // conn.flush() also sends the recorder's batched latency samples
// progress lines: every event's latency, warm-up included, also goes to the run's tally, whose
// interval percentile they print (lib/progress.js)
if (o.report_interval) rec.tally(tally);
const now = () => tbs.now();
let scenario = '';
let scenarioInfo = null; // exec.scenario, built once per VU (its accessors read live state)
let vuTags = null; // exec.vu.metrics.tags, read once per VU (the same object every time)
let w = null; // the first thread's work state
let event = null; // the step's event (sysbench.js bindEvent), made by activate
// or, with native_loop (the default), the group of the VU's threads on the native loop
// (k6/x/tbs group(): one thread, or threads_per_vu) and the threads: { conn, rec, w } each
let group = null;
let mine = [];
const spare = []; // the VU's further threads' connections and recorders, kept from step to step
let hist = null;
let respHist = null;
let queue = null;
let measureStart = 0;
let warming = false;
let nextCheck = 0; // epoch ms of the next moment this VU must look at its step (slow path)
let stepEnd = 0; // epoch ms: the end of this VU's step (its measured window)
let stepTag = '';

// The share of the run's VUs this process runs (k6 execution segments: several load
// generators run one test, each a segment of it).
function segmentShare() {
  const seg = exec.test.options.executionSegment;
  if (!seg) return 1;
  const [from, to] = String(seg).split(':');
  const share = segmentFraction(to || '1') - segmentFraction(from || '0');
  return share > 0 && share <= 1 ? share : 1;
}

// activate: the VU's first iteration of a thread step. It is thread `iterationInTest` of
// the step; it drops its connection of an earlier step, connects and prepares afresh, then
// waits for the step's load to begin (so that every VU of the step starts its first
// iteration before any starts a second: stepScenarios): when all the step's VUs have
// connected (steps.js gateParties), or when the connect phase ends.
function activate(data) {
  scenario = scenarioInfo.name;
  const threads = stepThreads(o, scenario);
  const perVu = threadsPerVu(o, threads);
  const threadId = scenarioInfo.iterationInTest * perVu; // its accessors read the current scenario's state
  const start = scenarioInfo.startTime;
  const latest = start + connectSeconds(o, threads) * 1000; // the load's start at the latest
  const parties = gateParties(o, data, threads);
  const gates = parties ? gateNames(data.testid, threads) : null;
  stepTag = String(threads);
  for (const t of mine) t.conn.close(); // an earlier step's connections (endStep closed them unless it did not run)
  mine = [];
  if (threadId >= threads) {
    console.error(`internal: thread id ${threadId} >= threads ${threads} in step t${threads}: this VU runs no events`);
    conn.close();
    if (gates) { tbs.barrier(gates.connected, threads).arrive(); tbs.barrier(gates.go, parties).arrive(); }
    nextCheck = Infinity; stepEnd = 0;
    return;
  }
  mine = vuThreads(data, threads, threadId, perVu);
  w = mine[0].w;
  // null: not a workload the loop runs; then the JavaScript event, and one thread per VU
  group = mine[0].loop ? tbs.group(mine.map((t) => t.loop), FLUSH_MS) : null;
  event = group ? null : bindEvent(o.workload, conn, w);
  tagVu(data);
  // fresh connections and statements, before the load begins
  let connected = 0;
  for (const t of mine) if (connectUntil(t.conn, t.w.prepared, latest)) connected++;
  if (connected && o.workload === 'bulk_insert') continueBulkIds(data, threadId);
  hist = tbs.histogram(histName(data.testid, threads));
  respHist = o.rate ? tbs.histogram(histName(data.testid, threads, 'response')) : null;
  if (connected) tbs.counter(`${histName(data.testid, threads)}/ready`).add(connected);
  tbs.mark(`${histName(data.testid, threads)}/scenario_start`, start);
  const go = gates ? waitForGo(data, threads, gates, parties, latest) : latest;
  measureStart = go + o.warmup_time * 1000;
  stepEnd = measureStart + o.time * 1000;
  if (o.rate) {
    queue = tbs.queue(queueName(data.testid, threads), o.rate * segmentShare(), go, stepEnd,
      o.rand_seed ? o.rand_seed + o.threads.indexOf(threads) : 0);
  }
  if (threadId === 0) markStep(data, go);
  const wait = go - Date.now();
  if (wait > 0) sleep(wait / 1000);
  if (!warming) startMeasuring(data);
  else nextCheck = measureStart;
}

// vuThreads: the VU's threads of the step (one, or threads_per_vu on the native loop), each
// with its connection, recorder, work state and native loop.
function vuThreads(data, threads, threadId, perVu) {
  const stepIdx = o.threads.indexOf(threads);
  const seed = o.rand_seed || hashText(data.testid);
  const out = [];
  for (let j = 0; j < perVu && threadId + j < threads; j++) {
    const id = threadId + j;
    if (j > 0 && !spare[j - 1]) {
      const c = new Conn(o);
      c.samples = rec.fork();
      spare[j - 1] = c;
    }
    const c = j === 0 ? conn : spare[j - 1];
    // seeded runs: one stream per step and thread
    const tw = workState(o, makeRand(o, stepIdx * 1048576 + id), id, threads);
    // one sequence for the whole run (sysbench's is global): no id is given twice, in any
    // step or by any load generator (lanes interleave the instances' indices)
    tw.unique = tbs.unique(`${data.testid}/unique`, seed, (seed ^ 0x5bd1e995) >>> 0, data.instances || 1, data.lane || 0);
    out.push({ id, conn: c, rec: c.samples, w: tw, loop: o.native_loop ? nativeLoop(o.workload, c, tw, c.samples) : null });
  }
  return out;
}

// tagVu: the VU's metric tags for the step; the connect phase and the warm-up are not measured.
function tagVu(data) {
  if (!vuTags) vuTags = exec.vu.metrics.tags; // exec.vu builds a new object at every read
  const tags = vuTags;
  tags.testid = data.testid;
  tags.workload = o.workload;
  tags.version = data.version;
  tags.instance_id = data.instance_id;
  warming = o.warmup_time > 0;
  tags.warmup = 'true';
  for (const t of mine) t.rec.use(null, null, t.id);
}

// continueBulkIds: sysbench's bulk_insert numbers rows from 1 in every run; a step goes on
// after the ids earlier steps (or runs) wrote, so no key is inserted twice: after the table's
// MAX(id), and after the ids this process gave out for the table (a statement of the last
// step may still be running on the server: flushBulk)
function continueBulkIds(data, threadId) {
  w.bulkMark = tbs.counter(`${data.testid}/bulk/sbtest${threadId + 1}`);
  const r = conn.db.query(`SELECT COALESCE(MAX(id), 0) AS m FROM sbtest${threadId + 1}`);
  w.bulkSize = Math.max(Number(asText(r[0].m || r[0].M)) || 0, w.bulkMark.get());
}

// waitForGo: the step's load begins when all its VUs have connected, at the latest when the
// connect phase ends -> that moment (every VU of the step has the same).
function waitForGo(data, threads, gates, parties, latest) {
  let go = latest;
  const con = tbs.barrier(gates.connected, threads);
  const gate = tbs.barrier(gates.go, parties);
  for (let j = 0; j < mine.length; j++) { con.arrive(); gate.arrive(); } // once per thread
  const at = gate.wait(latest); // -1: k6 stopped this VU (the run is ending)
  if (at > 0) go = Math.min(at, latest);
  tbs.mark(`${histName(data.testid, threads)}/go`, go);
  return go;
}

// markStep: thread 0's markers of the step's windows.
function markStep(data, go) {
  const t = { version: data.version, threads: stepTag };
  metrics.marker.add(go, { ...t, event: 'step_start', warmup: String(warming) });
  metrics.marker.add(measureStart, { ...t, event: 'measure_start', warmup: 'false' });
  metrics.marker.add(stepEnd, { ...t, event: 'measure_end', warmup: 'false' });
}

function startMeasuring(data) {
  warming = false;
  vuTags.warmup = 'false';
  for (const t of mine) t.rec.use(hist, respHist, t.id);
  tbs.mark(`${histName(data.testid, Number(stepTag))}/cpu_start`, tbs.cpuSeconds());
  nextCheck = nextStepStart(Number(stepTag), data);
}

// The next step's planned start (the executors start right after setup, so its real start is
// not earlier); until then nothing about this VU's step can change.
function nextStepStart(threads, data) {
  const i = o.threads.indexOf(threads);
  return i + 1 < windows.length ? data.run_start + windows[i + 1].connect - 50 : Infinity;
}

// endStep: the VU's step is over: the rest of a bulk insert goes out (sysbench's
// thread_done), and the connection is closed, so the next step starts with fresh ones.
function endStep(data) {
  if (w && o.workload === 'bulk_insert' && conn.db) {
    try { flushBulk(conn, w); } catch (_) { /* counted when it went out (flushBulk); the step is over */ }
    conn.flush();
  }
  tbs.mark(`${histName(data.testid, Number(stepTag))}/cpu_end`, tbs.cpuSeconds());
  for (const t of mine) t.conn.close();
  stepEnd = 0;
}

export function setup() {
  if (o.help) return {};
  // the summary's folder, before any load (the launcher checks it too; a stock `k6 run` did not)
  tbs.checkResultsDir(o.results_dir);
  const sdb = openDb(o);
  const v = connectOrExplain(sdb, o);
  const info = targetInfo(sdb, v);
  const bulk = o.workload === 'bulk_insert';
  const need = bulk ? Math.max(...o.threads) : o.tables;
  if (workloadSpec(o.workload).single_table && o.tables !== 1) {
    throw new Error(`invalid option tables=${o.tables}: ${o.workload} supports only tables=1`);
  }
  const have = existingTables(sdb);
  const missing = [];
  for (let t = 1; t <= need; t++) if (!have.has(`sbtest${t}`)) missing.push(`sbtest${t}`);
  if (missing.length) {
    const how = bulk ? `k6 run -e workload=bulk_insert -e threads=${need} prepare.js`
      : `k6 run -e tables=${need} -e table_size=${o.table_size} prepare.js`;
    throw new Error(`table ${missing[0]} does not exist in database '${o.mysql_db}' at ${o.mysql_host}:${o.mysql_port} ` +
      `(${missing.length} of ${need} tables missing): run prepare first: ${how}`);
  }
  const variables = globalVariables(sdb);
  sdb.close();
  const version = o.version || info.version;
  const runTags = exec.test.options.tags || {};
  const id = o.testid || runTags.testid || testid;
  const inst = instanceOf(exec.test.options);
  if (o.start_at) {
    const wait = o.start_at - Date.now();
    if (wait > 0) sleep(wait / 1000);
  }
  const runStart = o.start_at || Date.now();
  if (inst.lane === 0) {
    metrics.marker.add(runStart, { event: 'run_start', version, threads: o.threads.join(','), warmup: 'false', testid: id, workload: o.workload, instance_id: inst.id });
  }
  // what only handleSummary reads goes to it as notes, not in the setup data, which k6 decodes
  // from JSON for every iteration of every VU and each VU holds (the target's variables,
  // hundreds on TiDB, were a third of k6's CPU while 500 VUs connect; docs/bench.md)
  tbs.note(`${id}/variables`, JSON.stringify(variables));
  tbs.note(`${id}/run`, JSON.stringify({ version_full: info.full, host, segment: inst.segment, sequence: inst.sequence }));
  console.log(`testid=${id} workload=${o.workload} target=${o.mysql_host}:${o.mysql_port} version=${version} threads=${o.threads.join(',')}` +
    (inst.instances > 1 ? ` instance=${inst.id} segment=${inst.segment}` : ''));
  return {
    testid: id, version, product: info.product, run_start: runStart,
    instance_id: inst.id, instances: inst.instances, lane: inst.lane,
    instance_tagged: runTags.instance_id !== undefined,
  };
}

export default function (data) {
  if (Date.now() >= nextCheck) { // the slow path: a new step, or the end of the warm-up
    if (!scenarioInfo) scenarioInfo = exec.scenario;
    if (scenarioInfo.name !== scenario) {
      activate(data);
      return;
    }
    if (warming && Date.now() >= measureStart) startMeasuring(data);
  }
  if (!stepEnd) { // this VU has no part in the step (see activate): wait it out
    sleep(1);
    return;
  }
  // Events back to back for up to a second, never across a boundary (the end of the
  // warm-up, the end of the step): one k6 iteration per batch, not per event. A VU of several
  // threads runs up to the boundary in one iteration: at a batch's end each thread would wait
  // for the VU's slowest event to end.
  const until = Math.min(nextCheck, stepEnd, mine.length > 1 ? Infinity : Date.now() + BATCH_MS);
  if (queue) runQueued(conn, event, w, o, until, doneDue, stepEnd, queue, now);
  else if (group) runLoops(mine, group, o, until, stepEnd, now);
  else runEvents(conn, event, w, o, until, done, stepEnd, now);
  if (Date.now() >= stepEnd) endStep(data);
}

// One extra VU samples k6's own CPU and memory every second and prints sysbench-style
// lines every report_interval seconds (lib/progress.js).
export function monitor(data) {
  monitorTick(o, data, windows);
}

// One extra VU reads the target's statement summary at each step's boundaries, on a
// connection of its own (lib/statements.js: the per-step statements of the manifest).
export function statements(data) {
  captureStatements(o, data, windows);
}

// One extra VU reads the host's CPU counters at each step's measured window and times the canary
// around it (lib/disturb.js: the per-step disturbance of the manifest).
export function disturb(data) {
  watchDisturbance(o, data, windows);
}

// One extra VU takes the database's CPU profile over each step's measured window
// (lib/profiles.js: the per-step profiles of the manifest).
export function profiles(data) {
  captureProfiles(o, data, windows);
}

// `-e help=1`: nothing runs; the summary is the option list.
export function help() {}

export function teardown(data) {
  if (o.help || data.lane !== 0) return;
  metrics.marker.add(Date.now(), {
    event: 'run_end', version: data.version, threads: o.threads.join(','), warmup: 'false',
    testid: data.testid, workload: o.workload, instance_id: data.instance_id,
  });
}

export function handleSummary(data) {
  if (o.help) return { stdout: `options (-e name=value; k6/contract.json has them all):\n${optionHelp()}\n` };
  return summaryLib.summarize(data, o, tbs);
}
