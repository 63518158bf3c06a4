// The monitor VU (scenario `monitor`, one VU for the whole run): every second it sends k6's
// own CPU seconds and resident memory (oltp_client_cpu_seconds, oltp_client_rss_bytes: what
// the load generator cost), and every report_interval seconds it prints sysbench's
// --report-interval line:
//   [ 10s ] thds: 8 tps: 1234.50 qps: 24690.00 (r/w/o: 17283.00/4938.00/2469.00) lat (ms,95%): 12.75 err/s: 0.00 reconn/s: 0.00
// and with `rate`, sysbench's second line:
//   [ 10s ] queue length: 0, concurrency: 3
// k6 has no counters shared between VUs, so the rates come from Prometheus, which holds every
// VU's samples (remote write, pushed every K6_PROMETHEUS_RW_PUSH_INTERVAL): a line is printed
// one push interval plus a second after its interval ends, so its data has arrived; its
// [ Ns ] is that interval's end since the run's first step began, thds the step's thread
// count then. The queue line is this process' own queue (k6/x/tbs). Without Prometheus only
// thds shows.
import http from 'k6/http';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter, Gauge } from 'k6/metrics';
import tbs from 'k6/x/tbs';
import { CONTRACT } from './config.js';

const fmt = (x) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

export function prometheusUrl(env) {
  if (env.TBS_PROMETHEUS_URL) return env.TBS_PROMETHEUS_URL.replace(/\/$/, '');
  const rw = env.K6_PROMETHEUS_RW_SERVER_URL;
  return rw ? rw.replace(/\/api\/v1\/write\/?$/, '') : '';
}

// The push interval k6 uses (scripts/k6 sets it from k6/contract.json; k6's own default
// is 5 s), plus a second for the push to land.
function pushLagSeconds(env) {
  const m = /^(\d+)s$/.exec(env.K6_PROMETHEUS_RW_PUSH_INTERVAL || '5s');
  return (m ? Number(m[1]) : 5) + 1;
}

export const PUSH_INTERVAL_S = CONTRACT.timing.push_interval_s;

// One monitor VU per load generator: k6's execution segments split a scenario's VUs between
// the processes of a split run, so the scenario gets as many VUs as there are processes
// (TBS_INSTANCES, which scripts/k6 --instances, the compose replicas and the k6-operator
// TestRun set; 1 otherwise).
export function monitorScenario(o, totalSeconds) {
  const n = Math.max(1, Math.floor(Number(__ENV.TBS_INSTANCES) || 1));
  return {
    monitor: {
      executor: 'constant-vus', exec: 'monitor', vus: n,
      duration: `${totalSeconds + (o.report_interval ? pushLagSeconds(__ENV) : 0)}s`, gracefulStop: '0s',
      tags: { monitor: 'true' },
    },
  };
}

function query(base, q, at) {
  const r = http.get(`${base}/api/v1/query?query=${encodeURIComponent(q)}&time=${at.toFixed(3)}`,
    { tags: { name: 'progress' }, timeout: '5s', responseCallback: http.expectedStatuses(200) });
  return r.status === 200 ? r.json('data.result') || [] : null;
}

// Cumulative totals of the run at time `at`: every series' latest value, summed by metric and
// kind. Each step's series are new, but the earlier ones keep their last value, so the sums
// only grow and two of them give an interval's counts.
function totals(base, sel, at) {
  const res = query(base, `sum by (__name__, kind) ({__name__=~"k6_oltp_(transactions|queries|errors|reconnects)_total",${sel}})`, at);
  if (res === null) return null;
  const t = { tx: 0, read: 0, write: 0, other: 0, err: 0, rec: 0 };
  for (const x of res) {
    const v = Number(x.value[1]);
    const n = x.metric.__name__;
    if (n === 'k6_oltp_queries_total') t[x.metric.kind] += v;
    else if (n === 'k6_oltp_transactions_total') t.tx += v;
    else if (n === 'k6_oltp_errors_total') t.err += v;
    else t.rec += v;
  }
  return t;
}

let started = 0;
let tick = 0;

// threadsAt: the step whose load runs `s` seconds after the run began (0 between steps).
function threadsAt(windows, s) {
  for (const w of windows) if (s * 1000 >= w.start && s * 1000 < w.measure_end) return w.threads;
  return 0;
}

const cpu = new Counter('oltp_client_cpu_seconds');
const rss = new Gauge('oltp_client_rss_bytes');
let lastCpu = 0;
let tagged = false;

// monitor: one tick of the monitor VU (about a second).
export function monitor(o, data, env, grace, windows) {
  if (!tagged) {
    const t = exec.vu.metrics.tags;
    t.testid = data.testid; t.workload = o.workload; t.instance_id = data.instance_id;
    tagged = true;
  }
  const c = tbs.cpuSeconds();
  cpu.add(c - lastCpu);
  lastCpu = c;
  rss.add(tbs.rssBytes());
  if (o.report_interval) {
    const line = progressLine(o, data, env, windows);
    if (line) console.log(line);
  }
  sleep(1 - ((Date.now() - data.run_start) % 1000) / 1000);
}

// progressLine returns the next interval's line once its data is in Prometheus, else null.
export function progressLine(o, data, env, windows) {
  const step = o.report_interval;
  const lag = pushLagSeconds(env);
  if (!started) started = data.run_start / 1000;
  const total = windows[windows.length - 1].measure_end / 1000;
  if (tick + step > total + 1e-9) return null;
  if (Date.now() / 1000 < started + tick + step + lag) return null;
  tick += step;
  const thds = threadsAt(windows, tick - step / 2);
  const base = prometheusUrl(env);
  if (!base) return `[ ${tick}s ] thds: ${thds} (set K6_PROMETHEUS_RW_SERVER_URL for tps/qps/latency)`;
  const sel = `testid="${data.testid}"`;
  const t1 = started + tick;
  const t0 = t1 - step;
  const a = totals(base, sel, t0);
  const b = totals(base, sel, t1);
  if (!a || !b) return `[ ${tick}s ] thds: ${thds} (Prometheus at ${base} did not answer)`;
  const per = (k) => (b[k] - a[k]) / step;
  const h = `sum(k6_oltp_latency_seconds{${sel}} @ ${t1.toFixed(3)})`;
  const h0 = `sum(k6_oltp_latency_seconds{${sel}} @ ${t0.toFixed(3)})`;
  const pct = o.percentile || 95;
  const q = query(base, `histogram_quantile(${pct / 100}, (${h} - ${h0}) or ${h})`, t1);
  const p95 = q && q.length ? Number(q[0].value[1]) * 1000 : NaN;
  const qps = per('read') + per('write') + per('other');
  let line = `[ ${tick}s ] thds: ${thds} tps: ${fmt(per('tx'))} qps: ${fmt(qps)} (r/w/o: ${fmt(per('read'))}/${fmt(per('write'))}/${fmt(per('other'))}) ` +
    `lat (ms,${pct}%): ${fmt(p95)} err/s: ${fmt(per('err'))} reconn/s: ${fmt(per('rec'))}`;
  if (o.rate && thds) {
    const qs = tbs.queue(`${data.testid}/t${thds}/queue`, o.rate, 0, 0, 1).stats();
    line += `\n[ ${tick}s ] queue length: ${qs.length}, concurrency: ${qs.concurrency}`;
  }
  return line;
}
