// sysbench's --report-interval lines, for k6:
//   [ 10s ] thds: 8 tps: 1234.50 qps: 24690.00 (r/w/o: 17283.00/4938.00/2469.00) lat (ms,95%): 12.75 err/s: 0.00 reconn/s: 0.00
// k6 has no counters shared between VUs, so one extra VU (scenario `progress`) prints the
// lines: threads from k6/execution, the rates from Prometheus, which holds every VU's samples
// (remote write, pushed every K6_PROMETHEUS_RW_PUSH_INTERVAL). A line is printed one push
// interval plus a second after its interval ends, so its data has arrived; its [ Ns ] is that
// interval's end since the run's first step began, thds the step's thread count then. Without
// Prometheus only thds shows.
import http from 'k6/http';
import { sleep } from 'k6';

const fmt = (x) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

export function prometheusUrl(env) {
  if (env.TBS_PROMETHEUS_URL) return env.TBS_PROMETHEUS_URL.replace(/\/$/, '');
  const rw = env.K6_PROMETHEUS_RW_SERVER_URL;
  return rw ? rw.replace(/\/api\/v1\/write\/?$/, '') : '';
}

function pushLagSeconds(env) {
  const m = /^(\d+)s$/.exec(env.K6_PROMETHEUS_RW_PUSH_INTERVAL || '5s');
  return (m ? Number(m[1]) : 5) + 1;
}

export function progressScenario(o, totalSeconds) {
  if (!o.report_interval) return {};
  return {
    progress: {
      executor: 'constant-vus', exec: 'progress', vus: 1,
      duration: `${totalSeconds + pushLagSeconds(__ENV)}s`, gracefulStop: '0s',
      tags: { progress: 'true' },
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

// threadsAt: the step running `s` seconds after the first step began (0 between steps).
function threadsAt(o, s, grace) {
  let offset = 0;
  for (const n of o.threads) {
    const len = o.warmup_time + o.time;
    if (s >= offset && s < offset + len) return n;
    offset += len + grace;
  }
  return 0;
}

// progressLine waits for the next interval's data and returns its line, or null once the
// run's steps are over (the VU then idles until k6 stops it).
export function progressLine(o, data, env, grace) {
  const step = o.report_interval;
  const lag = pushLagSeconds(env);
  if (!started) started = data.run_start / 1000;
  const total = o.threads.length * (o.warmup_time + o.time + grace) - grace;
  if (tick + step > total) {
    sleep(step);
    return null;
  }
  tick += step;
  const wait = started + tick + lag - Date.now() / 1000;
  if (wait > 0) sleep(wait);
  const thds = threadsAt(o, tick - step / 2, grace);
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
  const q = query(base, `histogram_quantile(0.95, (${h} - ${h0}) or ${h})`, t1);
  const p95 = q && q.length ? Number(q[0].value[1]) * 1000 : NaN;
  const qps = per('read') + per('write') + per('other');
  return `[ ${tick}s ] thds: ${thds} tps: ${fmt(per('tx'))} qps: ${fmt(qps)} (r/w/o: ${fmt(per('read'))}/${fmt(per('write'))}/${fmt(per('other'))}) ` +
    `lat (ms,95%): ${fmt(p95)} err/s: ${fmt(per('err'))} reconn/s: ${fmt(per('rec'))}`;
}
