// Where the time went: the CPU profiles over each step's measured window. The database's (option
// `profile`, on by default): TiDB's status port (tidb_status_addr) and, where given, every TiKV's
// status port (tikv_status_addr) and PD's client port (pd_addr); our own k6 process' with
// profile_client=true. One extra VU (scenario `profiles`, the first load generator only, as the
// statements VU) wakes at each step's measured start and takes them all at once over the
// window's length (k6/x/tbs profiles(): remote ones in parts of at most timing.profile_part_s
// seconds, merged). It runs no statement and no benchmark thread waits for it. The profiles are
// written beside the run's results as <results_dir>/<testid>.profiles/step-<threads>.pb.gz
// (TiDB's) and step-<threads>.<component>.pb.gz (tikv-1, tikv-2, ..., pd-1, ..., client), in
// pprof's own format (`go tool pprof` opens them), and reach handleSummary as notes; the
// manifest's step gets `profile` (TiDB's) and `component_profiles` ({tikv-1: ..., client: ...}):
// each the file (relative to the manifest), the window, its parts, samples and CPU seconds, the
// step's query count, or {available: false, why} in one line. Nothing here fails the run.
import exec from 'k6/execution';
import { sleep } from 'k6';
import tbs from 'k6/x/tbs';
import { CONTRACT } from './config.js';
import { gateNames, gateParties } from './steps.js';

const PREFIX = 'profiles/';
const TIDB_STATUS_PORT = 10080; // tidb-server's default --status

// profileScenario(o, totalSeconds) -> the `profiles` scenario (none with profile=false and
// profile_client=false): one VU per load generator, of which only the first load generator's
// profiles (capture).
export function profileScenario(o, totalSeconds) {
  if (!o.profile && !o.profile_client) return {};
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

// profileFile(testid, threads, name) -> the profile's file name, relative to the run's manifest
// (the testid, the step and the component's name only: never an address or a user).
export function profileFile(testid, threads, name) {
  return `${testid}.profiles/step-${threads}${name ? `.${name}` : ''}.pb.gz`;
}

// addresses(list) -> the host:port entries of a comma list option (config.js checked them).
function addresses(list) {
  return String(list || '').split(',').map((a) => a.trim()).filter(Boolean);
}

// profileTargets(o, product) -> [{name, component, addr}] of one step: TiDB's (name ''), each
// TiKV's (tikv-1, ...) and PD's (pd-1, ...) with profile on and a TiDB target; the client's with
// profile_client; and [{name, why}] of those given that cannot be taken.
export function profileTargets(o, product) {
  const take = []; const skip = [];
  const why = notProfiled(product);
  const more = [...addresses(o.tikv_status_addr).map((addr, i) => ({ name: `tikv-${i + 1}`, component: 'tikv', addr })),
    ...addresses(o.pd_addr).map((addr, i) => ({ name: `pd-${i + 1}`, component: 'pd', addr }))];
  if (o.profile && !why) take.push({ name: '', component: 'tidb', addr: statusAddress(o) }, ...more);
  if (o.profile && why) {
    skip.push({ name: '', why });
    for (const m of more) skip.push({ name: m.name, why: `${why.split(':')[0]}: TiKV's and PD's profiles go with a TiDB target` });
  }
  if (o.profile_client) take.push({ name: 'client', component: 'client', addr: '' });
  return { take, skip };
}

function noteName(testid, threads, name) {
  return `${PREFIX}${testid}/t${threads}${name ? `/${name}` : ''}`;
}

// capture: the profiles VU's one iteration. The measured window's start is fixed by the step's
// load start (steps.js gateParties: when its VUs have connected), which this VU waits for
// without being a party of it.
export function capture(o, data, windows) {
  if (data.lane !== 0) return;
  const { take, skip } = profileTargets(o, data.product);
  const save = (w, name, v) => tbs.note(noteName(data.testid, w.threads, name), JSON.stringify(v));
  const saveAll = (w, v) => { for (const x of take) save(w, x.name, v); };
  for (const w of windows) for (const x of skip) save(w, x.name, { available: false, why: x.why });
  if (!take.length) return;
  const base = exec.scenario.startTime; // the scenarios' start: this scenario's startTime is 0
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
      saveAll(w, { available: false, why: `the profile could not start at the step's measured window (${((Date.now() - start) / 1000).toFixed(1)} s late)` });
      continue;
    }
    until(start);
    const files = take.map((x) => profileFile(data.testid, w.threads, x.name));
    // a part may take its length plus the slack, at most the step's graceful tail: a silent status
    // port delays neither the next step's profile nor the run's end beyond it
    const slack = Math.max(1, Math.min(t.profile_slack_s, o.grace_time));
    const rs = tbs.profiles(take.map((x, i) => ({ component: x.component, addr: x.addr, file: `${o.results_dir}/${files[i]}` })),
      o.time, t.profile_part_s, slack);
    take.forEach((x, i) => {
      const r = rs[i];
      save(w, x.name, !r.ok ? { available: false, why: r.why } : {
        available: true, file: files[i], format: 'pprof (gzipped protobuf)', source: r.source,
        window: [r.start, r.end], seconds: r.seconds, parts: r.parts, samples: r.samples, cpu_s: r.cpuSeconds, bytes: r.bytes,
      });
    });
  }
}

// stepProfile(notes, testid, threads, queries) -> the step's `profile` for the manifest (with
// the step's query count), or undefined when this process took none (profile=false, another
// load generator).
export function stepProfile(notes, testid, threads, queries) {
  const text = notes[noteName(testid, threads, '')];
  if (text === undefined) return undefined;
  const p = JSON.parse(text);
  return p.available ? { ...p, queries } : p;
}

// stepComponentProfiles(notes, testid, threads, queries) -> the step's `component_profiles` for
// the manifest ({tikv-1: ..., pd-1: ..., client: ...}, each as stepProfile's), or undefined when
// this process took none.
export function stepComponentProfiles(notes, testid, threads, queries) {
  const head = noteName(testid, threads, '') + '/';
  const out = {};
  for (const k of Object.keys(notes).filter((n) => n.startsWith(head)).sort()) {
    const p = JSON.parse(notes[k]);
    out[k.slice(head.length)] = p.available ? { ...p, queries } : p;
  }
  return Object.keys(out).length ? out : undefined;
}
