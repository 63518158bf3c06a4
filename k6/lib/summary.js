// The end of a run: a sysbench-style summary per thread step on stdout, and the run's JSON
// summary (options without the password, versions, step windows, per-step figures) under
// <results_dir>/<testid>.json for reports.
import { stepWindows } from './runner.js';

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

function val(data, name, stat) {
  const m = data.metrics[name];
  return m && m.values && m.values[stat] !== undefined ? m.values[stat] : 0;
}

export function stepFigures(data, o) {
  const windows = stepWindows(o);
  const start = data.setup_data ? data.setup_data.run_start : null;
  return windows.map((win) => {
    const sel = `threads:${win.threads},warmup:false`;
    const q = (k) => val(data, `oltp_queries{${sel},kind:${k}}`, 'count');
    const lat = `oltp_latency{${sel}}`;
    const s = {
      threads: win.threads,
      seconds: o.time,
      queries: { read: q('read'), write: q('write'), other: q('other'), total: val(data, `oltp_queries{${sel}}`, 'count') },
      transactions: val(data, `oltp_transactions{${sel}}`, 'count'),
      errors: val(data, `oltp_errors{${sel}}`, 'count'),
      reconnects: val(data, `oltp_reconnects{${sel}}`, 'count'),
      latency_ms: {
        min: val(data, lat, 'min'), avg: val(data, lat, 'avg'), max: val(data, lat, 'max'),
        p95: val(data, lat, 'p(95)'), p99: val(data, lat, 'p(99)'),
      },
    };
    s.qps = s.queries.total / o.time;
    s.tps = s.transactions / o.time;
    if (start) {
      s.window = {
        step_start: start + win.start, measure_start: start + win.measure_start, measure_end: start + win.measure_end,
      };
    }
    return s;
  });
}

export function summaryText(steps, o, sd) {
  const lines = [];
  lines.push('');
  lines.push(`SQL statistics (${o.workload}, testid ${sd ? sd.testid : '?'}, version ${sd ? sd.version : '?'}):`);
  for (const s of steps) {
    lines.push(`  threads: ${s.threads}   measured: ${s.seconds}s${o.warmup_time ? ` after ${o.warmup_time}s warm-up` : ''}`);
    lines.push(`    queries performed:  read: ${s.queries.read}  write: ${s.queries.write}  other: ${s.queries.other}  total: ${s.queries.total}`);
    lines.push(`    transactions:       ${s.transactions}  (${fmt(s.tps)} per sec.)`);
    lines.push(`    queries:            ${s.queries.total}  (${fmt(s.qps)} per sec.)`);
    lines.push(`    ignored errors:     ${s.errors}  (${fmt(s.errors / s.seconds)} per sec.)`);
    lines.push(`    reconnects:         ${s.reconnects}  (${fmt(s.reconnects / s.seconds)} per sec.)`);
    lines.push(`    latency (ms):       min: ${fmt(s.latency_ms.min)}  avg: ${fmt(s.latency_ms.avg)}  max: ${fmt(s.latency_ms.max)}  95th percentile: ${fmt(s.latency_ms.p95)}`);
  }
  lines.push('');
  lines.push('| Threads | QPS | TPS | 95% latency (ms) | avg latency (ms) | errors |');
  lines.push('| ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const s of steps) {
    lines.push(`| ${s.threads} | ${fmt(s.qps)} | ${fmt(s.tps)} | ${fmt(s.latency_ms.p95)} | ${fmt(s.latency_ms.avg)} | ${s.errors} |`);
  }
  lines.push('');
  return lines.join('\n');
}

export function summarize(data, o) {
  const sd = data.setup_data || null;
  if (!sd) return { stdout: '' }; // setup failed: its error says why; there is nothing to sum up
  const steps = stepFigures(data, o);
  const opts = { ...o };
  delete opts.mysql_password;
  const out = {
    testid: sd ? sd.testid : o.testid,
    workload: o.workload,
    target: { host: o.mysql_host, port: o.mysql_port, user: o.mysql_user, db: o.mysql_db },
    version: sd ? sd.version : o.version,
    version_full: sd ? sd.version_full : '',
    product: sd ? sd.product : '',
    run_start: sd ? sd.run_start : null,
    run_end: Date.now(),
    options: opts,
    target_variables: sd ? sd.variables : {},
    load_generator: sd ? sd.host : {},
    steps,
    k6: { test_run_duration_ms: data.state.testRunDurationMs },
  };
  const files = { stdout: summaryText(steps, o, sd) };
  if (out.testid) files[`${o.results_dir}/${out.testid}.json`] = JSON.stringify(out, null, 2);
  return files;
}
