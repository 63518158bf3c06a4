// sysbench's --report-interval lines, for k6:
//   [ 10s ] thds: 8 tps: 1234.50 qps: 24690.00 (r/w/o: 17283.00/4938.00/2469.00) lat (ms,95%): 12.75 err/s: 0.00 reconn/s: 0.00
// k6 has no counters shared between VUs, so one extra VU (scenario `progress`) prints the
// lines: threads from k6/execution, the rates from Prometheus, which holds every VU's samples
// (remote write, pushed every K6_PROMETHEUS_RW_PUSH_INTERVAL). A line covers the interval
// that ended one push interval plus a second ago, so its data is complete; its [ Ns ] is that
// interval's end since the run's first step began. Without Prometheus only thds and tps show
// (tps from k6's own count of completed iterations).
import http from 'k6/http';
import exec from 'k6/execution';
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

function instant(base, q, at) {
  const r = http.get(`${base}/api/v1/query?query=${encodeURIComponent(q)}&time=${at}`,
    { tags: { name: 'progress' }, timeout: '5s', responseCallback: http.expectedStatuses(200) });
  if (r.status !== 200) return NaN;
  const res = r.json('data.result');
  return res && res.length ? Number(res[0].value[1]) : 0;
}

let started = 0;
let tick = 0;

export function progressLine(o, data, env) {
  const step = o.report_interval;
  const lag = pushLagSeconds(env);
  if (!started) started = data.run_start / 1000;
  tick += step;
  const due = started + tick + lag;
  const wait = due - Date.now() / 1000;
  if (wait > 0) sleep(wait);
  const thds = Math.max(0, exec.instance.vusActive - 1);
  const base = prometheusUrl(env);
  if (!base) {
    return `[ ${tick}s ] thds: ${thds} (set K6_PROMETHEUS_RW_SERVER_URL for tps/qps/latency)`;
  }
  const sel = `testid="${data.testid}"`;
  const at = started + tick;
  const w = `[${step}s]`;
  const rate = (m, extra = '') => instant(base, `sum(rate(${m}{${sel}${extra}}${w}))`, at);
  const tps = rate('k6_oltp_transactions_total');
  const r = rate('k6_oltp_queries_total', ',kind="read"');
  const wr = rate('k6_oltp_queries_total', ',kind="write"');
  const ot = rate('k6_oltp_queries_total', ',kind="other"');
  const p95 = instant(base, `histogram_quantile(0.95, sum(rate(k6_oltp_latency_seconds{${sel}}${w})))`, at) * 1000;
  const err = rate('k6_oltp_errors_total');
  const rec = rate('k6_oltp_reconnects_total');
  return `[ ${tick}s ] thds: ${thds} tps: ${fmt(tps)} qps: ${fmt(r + wr + ot)} (r/w/o: ${fmt(r)}/${fmt(wr)}/${fmt(ot)}) ` +
    `lat (ms,95%): ${fmt(p95)} err/s: ${fmt(err)} reconn/s: ${fmt(rec)}`;
}
