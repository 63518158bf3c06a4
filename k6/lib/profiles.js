// Where the database's time went: its own CPU profile over each step's measured window
// (option `profile`, on by default). One extra VU (scenario `profiles`, the first load
// generator only, as the statements VU) wakes at each step's measured start and asks the
// target's pprof server for a profile of the window's length (k6/x/tbs profile(): TiDB's status
// port, tidb_status_addr; parts of at most timing.profile_part_s seconds, merged). It runs no
// statement and no benchmark thread waits for it. The profile is written beside the run's
// results as <results_dir>/<testid>.profiles/step-<threads>.pb.gz (pprof's own format: `go tool
// pprof` opens it) and reaches handleSummary as a note; the manifest's step gets `profile`:
// the file (relative to the manifest), the window, its parts, samples and CPU seconds, the
// step's query count, or {available: false, why} in one line. Nothing here fails the run.
import exec from 'k6/execution';
import { sleep } from 'k6';
import tbs from 'k6/x/tbs';
import { CONTRACT } from './config.js';
import { gateNames, gateParties } from './steps.js';

const PREFIX = 'profiles/';
const TIDB_STATUS_PORT = 10080; // tidb-server's default --status

// profileScenario(o, totalSeconds) -> the `profiles` scenario (none with profile=false): one VU
// per load generator, of which only the first load generator's profiles (capture).
export function profileScenario(o, totalSeconds) {
  if (!o.profile) return {};
  const n = Math.max(1, Math.floor(Number(__ENV.TBS_INSTANCES) || 1));
  return {
    profiles: {
      executor: 'per-vu-iterations', exec: 'profiles', vus: n, iterations: 1,
      maxDuration: `${totalSeconds + 15}s`, gracefulStop: '0s', tags: { profiles: 'true' },
    },
  };
}

// statusAddress(o) -> TiDB's status address: tidb_status_addr, or mysql_host at TiDB's default
// status port.
export function statusAddress(o) {
  if (o.tidb_status_addr) return o.tidb_status_addr;
  const h = String(o.mysql_host);
  return `${h.includes(':') ? `[${h}]` : h}:${TIDB_STATUS_PORT}`;
}

// notProfiled(product) -> why a target of this product has no profile, or ''.
export function notProfiled(product) {
  if (product === 'tidb') return '';
  const name = product === 'mariadb' ? 'MariaDB' : 'MySQL';
  return `the target is ${name}: it serves no CPU profile (only TiDB's status port does)`;
}

// profileFile(testid, threads) -> the profile's file name, relative to the run's manifest (the
// testid and the step only: never an address or a user).
export function profileFile(testid, threads) {
  return `${testid}.profiles/step-${threads}.pb.gz`;
}

// capture: the profiles VU's one iteration. The measured window's start is fixed by the step's
// load start (steps.js gateParties: when its VUs have connected), which this VU waits for
// without being a party of it.
export function capture(o, data, windows) {
  if (data.lane !== 0) return;
  const save = (w, v) => tbs.note(`${PREFIX}${data.testid}/t${w.threads}`, JSON.stringify(v));
  const why = notProfiled(data.product);
  if (why) {
    for (const w of windows) save(w, { available: false, why });
    return;
  }
  const base = exec.scenario.startTime; // the scenarios' start: this scenario's startTime is 0
  const addr = statusAddress(o);
  const t = CONTRACT.timing;
  const until = (at) => { const wait = at - Date.now(); if (wait > 0) sleep(wait / 1000); };
  for (const w of windows) {
    let start = base + w.measure_start;
    const parties = gateParties(o, data, w.threads);
    if (parties) {
      until(base + w.connect);
      const go = tbs.barrier(gateNames(data.testid, w.threads).go, parties).wait(base + w.start);
      if (go < 0) return; // k6 stopped this VU: the run is ending
      start = Math.min(go, base + w.start) + o.warmup_time * 1000;
    }
    if (Date.now() > start + 1000) { // the previous step's profile ran late
      save(w, { available: false, why: `the profile could not start at the step's measured window (${((Date.now() - start) / 1000).toFixed(1)} s late)` });
      continue;
    }
    until(start);
    const at = Date.now();
    const file = profileFile(data.testid, w.threads);
    // a part may take its length plus the slack, at most the step's graceful tail: a silent status
    // port delays neither the next step's profile nor the run's end beyond it
    const slack = Math.max(1, Math.min(t.profile_slack_s, o.grace_time));
    const r = tbs.profile(addr, o.time, t.profile_part_s, slack, `${o.results_dir}/${file}`);
    if (!r.ok) {
      save(w, { available: false, why: r.why });
      continue;
    }
    save(w, {
      available: true, file, format: 'pprof (gzipped protobuf)', source: 'TiDB status port /debug/pprof/profile',
      window: [at, Date.now()], seconds: r.seconds, parts: r.parts, samples: r.samples, cpu_s: r.cpuSeconds, bytes: r.bytes,
    });
  }
}

// stepProfile(notes, testid, threads, queries) -> the step's `profile` for the manifest (with
// the step's query count), or undefined when this process took none (profile=false, another
// load generator).
export function stepProfile(notes, testid, threads, queries) {
  const text = notes[`${PREFIX}${testid}/t${threads}`];
  if (text === undefined) return undefined;
  const p = JSON.parse(text);
  return p.available ? { ...p, queries } : p;
}
