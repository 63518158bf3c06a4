// The end of a TPC-C run (tpcc.js): go-tpc-style lines per step on stdout, and the run's
// manifest under <results_dir>/<testid>.json, beside OLTP's (lib/summary.js) in its layout:
// the same target, version, options (without the password), variables and windows, with
// workload "tpcc" and per step tpmC (New-Orders per minute of the measured window), tpmTotal
// and per transaction type its count, errors, share of the mix and latency twice: ours (the
// sysbench histogram of every OLTP step) and go-tpc's (its HdrHistogram, as `go-tpc tpcc run`
// prints it).
import { histName, stepWindows } from './steps.js';
import { stepStatements } from './statements.js';
import { latencyFigures, histogramData } from './summary.js';

const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

function window(o, sd, marks, win) {
  const name = histName(sd.testid, win.threads);
  const scenarioStart = marks[`${name}/scenario_start`];
  if (scenarioStart === undefined) return null; // never started
  const go = marks[`${name}/go`];
  const start = go !== undefined ? go : scenarioStart - win.connect + win.start;
  return {
    step_start: start, measure_start: start + (win.measure_start - win.start),
    measure_end: start + (win.measure_end - win.start), step_end: start + (win.end - win.start),
  };
}

function txnFigures(tbs, name, txn, f, o, elapsed) {
  const h = tbs.histogram(`${name}/${txn}`);
  const snap = h.snapshot();
  return {
    count: f.count, errors: f.errors, tpm: elapsed > 0 ? (f.count * 60) / elapsed : 0,
    latency_ms: latencyFigures(h, snap, o), gotpc_ms: f.gotpc, gotpc_err_ms: f.gotpc_err, histogram: histogramData(snap),
  };
}

// stepFigures(data, o, tbs, endedAt, names) -> the steps that ran, with their figures.
export function stepFigures(data, o, tbs, endedAt, names) {
  const sd = data.setup_data || {};
  const marks = tbs.marks();
  const notes = tbs.notes();
  const out = [];
  for (const win of stepWindows({ ...o, threads_per_vu: 1, native_loop: false })) {
    const w = window(o, sd, marks, win);
    if (!w) continue;
    const name = histName(sd.testid, win.threads);
    const interrupted = endedAt < w.measure_end - 500;
    const elapsed = Math.max(0, Math.min(endedAt, w.measure_end) - w.measure_start) / 1000;
    const figs = tbs.tpccStep(name).figures();
    const txns = {};
    for (const t of names) txns[t] = txnFigures(tbs, name, t, figs[t] || { count: 0, errors: 0, gotpc: null, gotpc_err: null }, o, elapsed);
    const total = names.reduce((a, t) => a + txns[t].count, 0);
    for (const t of names) txns[t].share = total ? txns[t].count / total : 0;
    const s = {
      threads: win.threads, seconds: o.time, elapsed_s: elapsed,
      tpmC: txns.new_order ? txns.new_order.tpm : 0, tpmTotal: elapsed > 0 ? (total * 60) / elapsed : 0,
      transactions: total, errors: names.reduce((a, t) => a + txns[t].errors, 0), txns,
      vus_ready: tbs.counter(`${name}/ready`).get(), threads_stopped: tbs.counter(`${name}/stopped`).get(), window: w,
    };
    if (interrupted) s.interrupted = true;
    const cpu0 = marks[`${name}/cpu_start`];
    const cpu1 = marks[`${name}/cpu_end`];
    if (cpu0 !== undefined && cpu1 !== undefined) s.client_cpu_s = cpu1 - cpu0;
    const st = stepStatements(notes, sd.testid, win.threads, o.statements_top);
    if (st) s.statements = st;
    out.push(s);
  }
  return out;
}

export function summaryText(steps, o, sd, names) {
  const lines = ['', `TPC-C (go-tpc's workload, testid ${sd.testid}, version ${sd.version}, ${o.warehouses} warehouses):`];
  for (const s of steps) {
    lines.push(`  threads: ${s.threads}   measured: ${fmt(s.elapsed_s, 3)}s of ${s.seconds}s${s.interrupted ? '   INTERRUPTED' : ''}` +
      `   connected: ${s.vus_ready}${s.threads_stopped ? `   STOPPED by an error: ${s.threads_stopped} threads` : ''}`);
    for (const t of names) {
      const x = s.txns[t];
      const g = x.gotpc_ms || {};
      lines.push(`    ${t.toUpperCase().padEnd(12)} Count: ${x.count}, errors: ${x.errors}, TPM: ${fmt(x.tpm)}, Avg(ms): ${fmt(x.latency_ms.avg)}, ` +
        `95th(ms): ${fmt(x.latency_ms.p95)}, 99th(ms): ${fmt(x.latency_ms.p99)}  (go-tpc's: avg ${fmt(g.avg)}, 95th ${fmt(g.p95)}, 99th ${fmt(g.p99)})`);
    }
    lines.push(`    tpmC: ${fmt(s.tpmC)}, tpmTotal: ${fmt(s.tpmTotal)}, efficiency: ${fmt((100 * s.tpmC) / (12.86 * o.warehouses))}%`);
  }
  lines.push('', '| Threads | tpmC | tpmTotal | New-Order p95 (ms) | errors |', '| ---: | ---: | ---: | ---: | ---: |');
  for (const s of steps) {
    const no = s.txns.new_order;
    lines.push(`| ${s.threads} | ${fmt(s.tpmC)} | ${fmt(s.tpmTotal)} | ${fmt(no ? no.latency_ms.p95 : NaN, 2)} | ${s.errors} |`);
  }
  lines.push('');
  return lines.join('\n');
}

export function summarize(data, o, tbs) {
  const sd = data.setup_data || null;
  if (!sd || !sd.testid) return { stdout: '' };
  const endedAt = Date.now();
  const run = JSON.parse(tbs.notes()[`${sd.testid}/run`] || '{}');
  const names = (run.txns && run.txns.names) || ['new_order', 'payment', 'order_status', 'delivery', 'stock_level'];
  const steps = stepFigures(data, o, tbs, endedAt, names);
  const lh = tbs.latencyHistogram();
  const opts = { ...o };
  delete opts.mysql_password;
  delete opts.help;
  const out = {
    testid: sd.testid, workload: 'tpcc', benchmark: 'tpcc',
    target: { host: o.mysql_host, port: o.mysql_port, user: o.mysql_user, db: o.mysql_db },
    version: sd.version, version_full: run.version_full, product: sd.product, run_start: sd.run_start, run_end: endedAt,
    options: opts, target_variables: JSON.parse(tbs.notes()[`${sd.testid}/variables`] || '{}'), load_generator: run.host,
    tpcc: { gotpc_version: run.txns ? run.txns.version : null, warehouses: o.warehouses, parts: o.parts, wait: o.wait, txns: names, weights: run.txns ? run.txns.weights : null },
    latency_method: `per transaction type: sysbench 1.0.20 histogram (${lh.buckets} log buckets, ${lh.min_ms} ms to ${lh.max_ms / 1000} s, nearest rank), ` +
      'and go-tpc\'s (HdrHistogram, 1 ms to 16 s, 1 significant figure) as gotpc_ms; per step',
    steps,
    k6: { test_run_duration_ms: data.state.testRunDurationMs },
  };
  if (steps.length < o.threads.length || steps.some((s) => s.interrupted)) out.interrupted = true;
  const files = { stdout: summaryText(steps, o, sd, names) };
  files[`${o.results_dir}/${sd.testid}.json`] = JSON.stringify(out, null, 2);
  return files;
}
