// What disturbed each step (issue #43): one extra VU (scenario `disturb`, one per load
// generator, each measuring its own host) reads the host's CPU counters (k6/x/tbs hostSample:
// /proc/stat, /proc/pressure/cpu, the database's and k6's /proc/<pid>/stat) at the start and the
// end of each step's measured window, and times the canary (k6/x/tbs canary: a fixed CPU
// calibration) just before the step's load and just after its window. The reads reach
// handleSummary as notes; stepDisturbance makes the manifest's steps[i].disturbance
// (docs/CONTRACT.md; docs/report.md: the figures and the rule that calls a sample disturbed).
//
// The database's CPU is that of the process listening on the target's port, when the target is
// on this host (a loopback address): the local stack's TiDB or MariaDB. A remote target (compose's
// containers, another machine) is not measured, and the manifest says why; the other processes'
// CPU then cannot be told from the database's and is null.
import exec from 'k6/execution';
import { sleep } from 'k6';
import tbs from 'k6/x/tbs';
import { gateNames, gateParties } from './steps.js';

const PREFIX = 'disturb/';
const CANARY_REPEATS = 3; // the canary's fastest of 3 timings (about 11 ms each on a quiet 2-core VM)
const CANARY_LEAD_MS = 400; // without a start barrier: the canary this long before the load begins
const AFTER_MS = 100; // the end canary this long after the window: the step's last events end first
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/i;

// disturbScenario(o, totalSeconds) -> the `disturb` scenario: one VU per load generator.
export function disturbScenario(o, totalSeconds) {
  const n = Math.max(1, Math.floor(Number(__ENV.TBS_INSTANCES) || 1));
  return {
    disturb: {
      executor: 'per-vu-iterations', exec: 'disturb', vus: n, iterations: 1,
      maxDuration: `${totalSeconds + 15}s`, gracefulStop: '0s', tags: { disturb: 'true' },
    },
  };
}

// database(o) -> {pid, name, why}: the target's process on this host, or why it is not measured.
export function database(o) {
  if (!LOOPBACK.test(String(o.mysql_host))) {
    return { pid: 0, name: '', why: `the database (${o.mysql_host}:${o.mysql_port}) is not on this host: its CPU is not measured here (its own host's metrics are in Prometheus)` };
  }
  return tbs.listenerPid(Number(o.mysql_port));
}

// watch: the disturb VU's one iteration: per step, the canary before the load, the counters at
// the measured window's start and end, the canary after. A step that begins once its VUs are
// connected (steps.js gateParties) counts this VU as a party: it times the canary once the step's
// VUs have connected, and the load begins after it.
export function watch(o, data, windows) {
  const base = exec.scenario.startTime;
  const db = database(o);
  tbs.note(`${PREFIX}${data.testid}/database`, JSON.stringify(db));
  const save = (w, phase, v) => tbs.note(`${PREFIX}${data.testid}/t${w.threads}/${phase}`, JSON.stringify(v));
  const until = (t) => { const wait = t - Date.now(); if (wait > 0) sleep(wait / 1000); };
  for (const w of windows) {
    let go = base + w.start;
    const parties = gateParties(o, data, w.threads);
    if (parties) {
      const gates = gateNames(data.testid, w.threads);
      until(base + w.connect);
      tbs.barrier(gates.connected, w.threads).wait(base + w.start);
      const gate = tbs.barrier(gates.go, parties);
      try { save(w, 'canary_before', tbs.canary(CANARY_REPEATS)); } finally { gate.arrive(); }
      const at = gate.wait(base + w.start);
      if (at > 0) go = Math.min(at, base + w.start);
    } else {
      until(Math.max(base + w.connect, go - CANARY_LEAD_MS));
      save(w, 'canary_before', tbs.canary(CANARY_REPEATS));
    }
    until(go + o.warmup_time * 1000);
    save(w, 'start', tbs.hostSample(db.pid));
    until(go + o.warmup_time * 1000 + o.time * 1000);
    save(w, 'end', tbs.hostSample(db.pid));
    until(Date.now() + AFTER_MS);
    save(w, 'canary_after', tbs.canary(CANARY_REPEATS));
  }
}

// stepDisturbance(notes, testid, threads) -> the step's `disturbance` for the manifest (notes:
// tbs.notes()); undefined when this process has none of its reads (an older build's run).
export function stepDisturbance(notes, testid, threads) {
  const get = (k) => (notes[`${PREFIX}${testid}/${k}`] !== undefined ? JSON.parse(notes[`${PREFIX}${testid}/${k}`]) : undefined);
  const t = `t${threads}`;
  const a = get(`${t}/start`);
  const b = get(`${t}/end`);
  const before = get(`${t}/canary_before`);
  const after = get(`${t}/canary_after`);
  if (!a && !before) return undefined;
  const d = a && b ? tbs.disturbance(a, b) : { available: false, why: 'the run ended before the step\'s measured window did' };
  const db = get('database') || {};
  if (db.pid) d.db_process = `${db.name} (pid ${db.pid})`;
  else if (!d.db_why) d.db_why = db.why || 'not looked for';
  d.canary_before_ns = before ? before.min_ns : null;
  d.canary_after_ns = after ? after.min_ns : null;
  d.canary_repeats = CANARY_REPEATS;
  d.canary_work = (before || after || {}).work || null;
  return d;
}
