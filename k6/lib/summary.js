// The end of a run: a sysbench-style summary per thread step on stdout, and the run's JSON
// summary (options without the password, versions, step windows, per-step figures) under
// <results_dir>/<testid>.json for reports (<testid>.instance-<id>.json for one load
// generator of several: scripts/k6 merges them).
//
// Per step: counts from k6's counters; rates divided by the step's measured elapsed time
// (from the start of its measured window to the end of its last event, at least its planned
// length, as sysbench divides by its run's total time); latency from the step's sysbench
// histogram (k6/x/tbs: 1,024 log buckets, nearest rank), with `percentile` (sysbench's
// option, default 95) plus p50, p99 and max.
import { histName, queueName, stepWindows } from './steps.js';
import { stepStatements } from './statements.js';
import { stepDisturbance } from './disturb.js';
import { stepComponentProfiles, stepProfile } from './profiles.js';
import { CONTRACT } from './config.js';

export { histName };

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

// sysbench's select_random_* give each thread its own slice of k values, and k is not uniform
// (rand_type special by default): a thread whose slice is dense runs slower events, in
// sysbench as here (docs/bench.md, "Threads fairness").
const SLICED = /^select_random_/;
const SLICED_NOTE = 'each thread of this workload reads its own slice of k; where k is dense, its events are slower: sysbench\'s threads are as uneven';

// avg, stddev (over the threads, as sysbench's: population), min, max of xs.
function spread(xs) {
  const n = xs.length;
  if (!n) return { avg: 0, stddev: 0, min: 0, max: 0 };
  const avg = xs.reduce((a, x) => a + x, 0) / n;
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - avg) ** 2, 0) / n);
  return { avg, stddev: sd, min: Math.min(...xs), max: Math.max(...xs) };
}

// fairnessOf(t) -> sysbench's threads fairness of a step from its threads' tallies (k6/x/tbs
// Histogram.threads(): ids, events, time_ms), with each thread's figures and the warnings.
// A thread that ran fewer events than timing.fair_share of the step's average (k6/contract.json;
// tidbbench/merge.py applies the same rule to a split run) is named in a warning, as is a thread
// with none: a thread that stopped, or a slice of the table that runs at another pace, must not
// hide in the step's total.
export function fairnessOf(t) {
  const events = t.events.map(Number);
  const time = t.time_ms.map((x) => x / 1000);
  const f = { threads: events.length, events: spread(events), time_s: spread(time), per_thread: { ids: t.ids, events, time_s: time } };
  const low = f.events.avg * CONTRACT.timing.fair_share;
  const warnings = [];
  events.forEach((e, i) => {
    if (e === 0 || e < low) {
      warnings.push(`thread ${t.ids[i]} ran ${e} event${e === 1 ? '' : 's'}` +
        ` (${fmt(f.events.avg ? (100 * e) / f.events.avg : 0, 1)}% of the threads' average, ${fmt(f.events.avg, 1)})`);
    }
  });
  f.warnings = warnings;
  return f;
}

function val(data, name, stat) {
  const m = data.metrics[name];
  return m && m.values && m.values[stat] !== undefined ? m.values[stat] : 0;
}

// latencyFigures(h, o) -> { min, avg, max, p50, p95, p99, pct, pct_value } (ms) from a tbs
// histogram and its snapshot.
export function latencyFigures(h, snap, o) {
  const n = snap.count;
  const pct = (p) => (n ? h.percentile(p) : 0);
  return {
    min: snap.min, avg: n ? snap.sum_ms / n : 0, max: snap.max,
    p50: pct(50), p95: pct(95), p99: pct(99), pct: o.percentile, pct_value: o.percentile ? pct(o.percentile) : null,
  };
}

export function stepFigures(data, o, tbs, endedAt) {
  const windows = stepWindows(o);
  const sd = data.setup_data || {};
  const marks = tbs.marks();
  const notes = tbs.notes();
  const out = [];
  for (const win of windows) {
    const name = histName(sd.testid, win.threads);
    const scenarioStart = marks[`${name}/scenario_start`];
    const base = scenarioStart !== undefined ? scenarioStart - win.connect : sd.run_start;
    // the load's real start when the step began once its VUs were connected (steps.js gateParties)
    const go = marks[`${name}/go`];
    const start = go !== undefined ? go : base + win.start;
    const window = {
      step_start: start, measure_start: start + (win.measure_start - win.start), measure_end: start + (win.measure_end - win.start),
      step_end: start + (win.end - win.start), // the graceful tail's end
    };
    if (scenarioStart === undefined && endedAt < window.step_start) continue; // never started
    const sel = `threads:${win.threads},warmup:false`;
    const q = (k) => val(data, `oltp_queries{${sel},kind:${k}}`, 'count');
    const h = tbs.histogram(name);
    const snap = h.snapshot();
    const interrupted = endedAt < window.measure_end - 500;
    const lastEnd = snap.last_end || 0;
    const end = interrupted ? Math.max(lastEnd, window.measure_start) : Math.max(lastEnd, window.measure_end);
    const elapsed = Math.max(0, end - window.measure_start) / 1000;
    const s = {
      threads: win.threads,
      seconds: o.time,
      elapsed_s: elapsed,
      queries: { read: q('read'), write: q('write'), other: q('other'), total: val(data, `oltp_queries{${sel}}`, 'count') },
      transactions: val(data, `oltp_transactions{${sel}}`, 'count'),
      errors: val(data, `oltp_errors{${sel}}`, 'count'),
      reconnects: val(data, `oltp_reconnects{${sel}}`, 'count'),
      latency_ms: latencyFigures(h, snap, o),
      histogram: histogramData(snap),
      vus_ready: tbs.counter(`${name}/ready`).get(),
      fairness: fairnessOf(h.threads()),
      window,
    };
    // the longest time in which no event of the measured window ended: between two events
    // (k6/x/tbs), or from the window's start to the first event, or from the last event to
    // the window's end (a server away until the step ended)
    const close = Math.min(endedAt, window.measure_end);
    const gaps = [[snap.max_gap_ms || 0, snap.max_gap_start || null],
      [(snap.first_end || close) - window.measure_start, window.measure_start],
      [close - (snap.last_end || window.measure_start), snap.last_end || window.measure_start]];
    const [gap, gapStart] = gaps.reduce((m, g) => (g[0] > m[0] ? g : m));
    s.max_gap_s = Math.max(0, gap) / 1000;
    s.max_gap_start = gap > 0 ? gapStart : null;
    if (interrupted) s.interrupted = true;
    const st = stepStatements(notes, sd.testid, win.threads, o.statements_top); // lib/statements.js
    if (st) s.statements = st;
    const dist = stepDisturbance(notes, sd.testid, win.threads); // lib/disturb.js
    if (dist) s.disturbance = dist;
    const pr = stepProfile(notes, sd.testid, win.threads, s.queries.total); // lib/profiles.js
    if (pr) s.profile = pr;
    const cp = stepComponentProfiles(notes, sd.testid, win.threads, s.queries.total);
    if (cp) s.component_profiles = cp;
    s.qps = elapsed > 0 ? s.queries.total / elapsed : 0;
    s.tps = elapsed > 0 ? s.transactions / elapsed : 0;
    const cpu0 = marks[`${name}/cpu_start`];
    const cpu1 = marks[`${name}/cpu_end`];
    if (cpu0 !== undefined && cpu1 !== undefined) s.client_cpu_s = cpu1 - cpu0;
    if (o.rate) {
      const rh = tbs.histogram(histName(sd.testid, win.threads, 'response'));
      const rsnap = rh.snapshot();
      s.response_latency_ms = latencyFigures(rh, rsnap, o);
      s.response_histogram = histogramData(rsnap);
      const qs = tbs.queue(queueName(sd.testid, win.threads), o.rate, 0, 0, 1).stats();
      s.rate = { requested: o.rate, backlog_at_end: qs.length, dropped: qs.dropped, taken: qs.taken };
    }
    out.push(s);
  }
  return out;
}

export function histogramData(snap) {
  return {
    scheme: snap.scheme, buckets: snap.buckets, min_ms: snap.min_ms, max_ms: snap.max_ms,
    count: snap.count, sum_ms: snap.sum_ms, min: snap.min, max: snap.max, counts: snap.counts,
  };
}

export function summaryText(steps, o, sd) {
  const lines = [];
  const pctLabel = o.percentile ? `${o.percentile}th percentile` : 'percentile';
  lines.push('');
  lines.push(`SQL statistics (${o.workload}, testid ${sd ? sd.testid : '?'}, version ${sd ? sd.version : '?'}` +
    `${sd && sd.instances > 1 ? `, instance ${sd.instance_id} of ${sd.instances}` : ''}):`);
  for (const s of steps) {
    const l = s.latency_ms;
    lines.push(`  threads: ${s.threads}   measured: ${fmt(s.elapsed_s, 3)}s of ${s.seconds}s planned` +
      `${o.warmup_time ? ` after ${o.warmup_time}s warm-up` : ''}${s.interrupted ? '   INTERRUPTED' : ''}` +
      `${s.vus_ready !== undefined ? `   connected: ${s.vus_ready}` : ''}`);
    lines.push(`    queries performed:  read: ${s.queries.read}  write: ${s.queries.write}  other: ${s.queries.other}  total: ${s.queries.total}`);
    lines.push(`    transactions:       ${s.transactions}  (${fmt(s.tps)} per sec.)`);
    lines.push(`    queries:            ${s.queries.total}  (${fmt(s.qps)} per sec.)`);
    lines.push(`    ignored errors:     ${s.errors}  (${fmt(s.elapsed_s ? s.errors / s.elapsed_s : 0)} per sec.)`);
    lines.push(`    reconnects:         ${s.reconnects}  (${fmt(s.elapsed_s ? s.reconnects / s.elapsed_s : 0)} per sec.)`);
    lines.push(`    latency (ms):       min: ${fmt(l.min)}  avg: ${fmt(l.avg)}  max: ${fmt(l.max)}  ${pctLabel}: ${fmt(l.pct_value)}` +
      `  (p50: ${fmt(l.p50)}  p99: ${fmt(l.p99)})`);
    if (s.max_gap_s >= 1) lines.push(`    longest time without a finished event: ${fmt(s.max_gap_s, 1)}s`);
    if (s.fairness) {
      const f = s.fairness;
      lines.push(`    threads fairness (${f.threads} thread${f.threads === 1 ? '' : 's'}):`);
      lines.push(`      events (avg/stddev):          ${fmt(f.events.avg, 4)}/${fmt(f.events.stddev)}   (min/max: ${f.events.min}/${f.events.max})`);
      lines.push(`      execution time (avg/stddev):  ${fmt(f.time_s.avg, 4)}/${fmt(f.time_s.stddev)}   (min/max: ${fmt(f.time_s.min, 4)}/${fmt(f.time_s.max, 4)})`);
      for (const wn of f.warnings) lines.push(`    WARNING: ${wn}`);
      if (f.warnings.length && SLICED.test(o.workload)) lines.push(`    (${SLICED_NOTE})`);
    }
    if (s.rate) {
      const r = s.response_latency_ms;
      lines.push(`    rate:               requested ${s.rate.requested}/s, achieved ${fmt(s.tps)}/s` +
        `${s.rate.backlog_at_end || s.rate.dropped ? `  NOT KEPT: ${s.rate.backlog_at_end} events still queued at the end, ${s.rate.dropped} dropped (queue full)` : ''}`);
      lines.push(`    response time (ms): min: ${fmt(r.min)}  avg: ${fmt(r.avg)}  max: ${fmt(r.max)}  ${pctLabel}: ${fmt(r.pct_value)}  (queue time included)`);
    }
  }
  lines.push('');
  lines.push(`| Threads | QPS | TPS | ${o.percentile || 95}% latency (ms) | avg latency (ms) | errors | reconnects |`);
  lines.push('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const s of steps) {
    lines.push(`| ${s.threads} | ${fmt(s.qps)} | ${fmt(s.tps)} | ${fmt(s.latency_ms.pct_value)} | ${fmt(s.latency_ms.avg)} | ${s.errors} | ${s.reconnects} |`);
  }
  lines.push('');
  return lines.join('\n');
}

export function summarize(data, o, tbs) {
  const sd = data.setup_data || null;
  if (!sd || !sd.testid) return { stdout: '' }; // setup failed: its error says why; there is nothing to sum up
  const endedAt = Date.now();
  const steps = stepFigures(data, o, tbs, endedAt);
  const lh = tbs.latencyHistogram(); // the histogram's one definition (k6/x/tbs histogram.go)
  const opts = { ...o };
  delete opts.mysql_password;
  delete opts.help;
  const run = JSON.parse(tbs.notes()[`${sd.testid}/run`] || '{}'); // oltp.js setup(): what no VU reads
  const out = {
    testid: sd.testid,
    workload: o.workload,
    target: { host: o.mysql_host, port: o.mysql_port, user: o.mysql_user, db: o.mysql_db },
    version: sd.version,
    version_full: sd.version_full ?? run.version_full,
    product: sd.product,
    run_start: sd.run_start,
    run_end: endedAt,
    options: opts,
    target_variables: sd.variables || JSON.parse(tbs.notes()[`${sd.testid}/variables`] || '{}'),
    load_generator: sd.host ?? run.host,
    latency_method: `sysbench 1.0.20 histogram (${lh.buckets} log buckets, ${lh.min_ms} ms to ${lh.max_ms / 1000} s, nearest rank), per step`,
    steps,
    k6: { test_run_duration_ms: data.state.testRunDurationMs },
  };
  if (steps.length < o.threads.length || steps.some((s) => s.interrupted)) out.interrupted = true;
  if (sd.instance_tagged || sd.instances > 1) {
    out.instance = { id: sd.instance_id, segment: run.segment ?? sd.segment, sequence: run.sequence ?? sd.sequence, lane: sd.lane, instances: sd.instances };
  }
  const files = { stdout: summaryText(steps, o, sd) };
  const file = out.instance ? `${sd.testid}.instance-${sd.instance_id}.json` : `${sd.testid}.json`;
  files[`${o.results_dir}/${file}`] = JSON.stringify(out, null, 2);
  return files;
}
