// The monitor VU (scenario `monitor`, one VU for the whole run): every second it sends k6's
// own CPU seconds and resident memory (oltp_client_cpu_seconds, oltp_client_rss_bytes: what
// the load generator cost), and every report_interval seconds it prints sysbench's
// --report-interval line:
//   [ 10s ] thds: 8 tps: 1234.50 qps: 24690.00 (r/w/o: 17283.00/4938.00/2469.00) lat (ms,95%): 12.75 err/s: 0.00 reconn/s: 0.00
// and with `rate`, sysbench's second line:
//   [ 10s ] queue length: 0, concurrency: 3
// The figures are this process' own, as sysbench's are: the run's tally (k6/x/tbs), which
// holds the counts every VU also sends to k6's metrics (metrics.js) and every event's latency
// in sysbench's buckets, read when the interval ends (counts a VU has not flushed yet, at most
// flush_ms of them, go to the next interval). [ Ns ] is the interval's end since the run's
// first step began, thds the step's thread count then, lat sysbench's percentile over the
// interval's events (0.00 when none ended), the queue line this process' own queue.
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter, Gauge } from 'k6/metrics';
import tbs from 'k6/x/tbs';
import { tally } from './metrics.js';
import { histName, queueName } from './steps.js';

const fmt = (x) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

// One monitor VU per load generator: k6's execution segments split a scenario's VUs between
// the processes of a split run, so the scenario gets as many VUs as there are processes
// (TBS_INSTANCES, which scripts/k6 --instances, the compose replicas and the k6-operator
// TestRun set; 1 otherwise).
export function monitorScenario(o, totalSeconds) {
  const n = Math.max(1, Math.floor(Number(__ENV.TBS_INSTANCES) || 1));
  return {
    monitor: {
      executor: 'constant-vus', exec: 'monitor', vus: n,
      duration: `${totalSeconds}s`, gracefulStop: '0s',
      tags: { monitor: 'true' },
    },
  };
}

let started = 0;
let tick = 0;
let last = { tx: 0, read: 0, write: 0, other: 0, err: 0, rec: 0 };

// threadsAt: the step whose load runs `s` seconds after the run began (0 between steps): from
// its real start when it began once its VUs were connected (the `<step>/go` mark, steps.js
// gateParties), else from its planned one.
function threadsAt(windows, s, data) {
  const marks = tbs.marks();
  for (const w of windows) {
    const go = marks[`${histName(data.testid, w.threads)}/go`];
    const start = go !== undefined ? go - data.run_start : w.start;
    if (s * 1000 >= start && s * 1000 < start + (w.measure_end - w.start)) return w.threads;
  }
  return 0;
}

const cpu = new Counter('oltp_client_cpu_seconds');
const rss = new Gauge('oltp_client_rss_bytes');
let lastCpu = 0;
let tagged = false;

// monitor: one tick of the monitor VU (about a second).
export function monitor(o, data, windows) {
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
    const line = progressLine(o, data, windows);
    if (line) console.log(line);
  }
  sleep(1 - ((Date.now() - data.run_start) % 1000) / 1000);
}

// progressLine returns the next interval's line once it has ended, else null.
export function progressLine(o, data, windows) {
  const step = o.report_interval;
  if (!started) started = data.run_start / 1000;
  const total = windows[windows.length - 1].measure_end / 1000;
  if (tick + step > total + 1e-9) return null;
  if (Date.now() / 1000 < started + tick + step) return null;
  tick += step;
  const thds = threadsAt(windows, tick - step / 2, data);
  const b = tally.totals();
  const a = last;
  last = b;
  const per = (k) => (b[k] - a[k]) / step;
  const pct = o.percentile || 95;
  const lat = tally.intervalPercentile(pct);
  const qps = per('read') + per('write') + per('other');
  let line = `[ ${tick}s ] thds: ${thds} tps: ${fmt(per('tx'))} qps: ${fmt(qps)} (r/w/o: ${fmt(per('read'))}/${fmt(per('write'))}/${fmt(per('other'))}) ` +
    `lat (ms,${pct}%): ${fmt(lat)} err/s: ${fmt(per('err'))} reconn/s: ${fmt(per('rec'))}`;
  if (o.rate && thds) {
    const qs = tbs.queue(queueName(data.testid, thds), o.rate, 0, 0, 1).stats();
    line += `\n[ ${tick}s ] queue length: ${qs.length}, concurrency: ${qs.concurrency}`;
  }
  return line;
}
