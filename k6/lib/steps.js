// Thread steps as k6 scenarios: one per thread count, run one after another, each with a
// connect phase, the warm-up and the measured window; their windows and per-step submetrics.
import { CONTRACT, OptionError } from './config.js';
import { loopRuns } from './sysbench.js';

// connectSeconds(o, threads): the start of each step given to its VUs to connect and prepare
// their statements before the step's load begins (sysbench's threads do the same in
// thread_init, before its timer starts): option connect_time, or with `auto` the contract's
// timing (connect_s + connect_s_per_1000_threads per 1000 threads).
export function connectSeconds(o, threads) {
  if (o.connect_time !== 'auto') return o.connect_time;
  const t = CONTRACT.timing;
  return t.connect_s + Math.ceil((threads * t.connect_s_per_1000_threads) / 1000);
}

// gateParties(o, data, threads) -> the parties of the step's start barrier (k6/x/tbs), or 0 when
// the step keeps a fixed connect phase. With connect_time=auto a lone load generator starts a
// step's load as soon as all its VUs have connected and prepared (sysbench's barrier after
// thread_init), at the latest when the connect phase ends: the step's windows (summary.js,
// the markers) are then the real ones, marked `<step>/go`. The statements VU is a party when it
// takes the step's start snapshot just before the load (no warm-up): it arrives once it has; the
// disturb VU (disturb.js) always is, once it has timed the canary. A run split over load
// generators keeps the fixed connect phase, so that their windows agree.
export function gateParties(o, data, threads) {
  if (o.connect_time !== 'auto' || (data.instances || 1) > 1) return 0;
  return threads + (o.statements_top > 0 && o.warmup_time === 0 ? 1 : 0) + 1;
}

// The step's barriers: `connected` (its VUs, connected or given up) and `go` (gateParties).
export function gateNames(testid, threads) {
  return { connected: histName(testid, threads, 'connected'), go: histName(testid, threads, 'go') };
}

// threadsPerVu(o, threads): the sysbench threads one VU runs in a step of `threads` (option
// threads_per_vu; with `auto` 1 below the contract's timing.threads_per_vu_from threads, else
// timing.threads_per_vu_auto). Only the native loop runs several (k6/x/tbs group()): elsewhere
// 1, and a number above 1 given for a run without it is bad input.
export function threadsPerVu(o, threads) {
  const k = o.threads_per_vu;
  if (!loopRuns(o)) {
    if (k !== 'auto' && k > 1) {
      throw new OptionError(`invalid option threads_per_vu=${k}: only the native loop runs several threads per VU ` +
        `(native_loop on, no rate, a workload of point selects, ranges, updates and delete/inserts; ${o.workload}` +
        `${o.rate ? ` with rate=${o.rate}` : ''}${o.native_loop ? '' : ' with native_loop off'} is not): use threads_per_vu=1 or auto`);
    }
    return 1;
  }
  if (k !== 'auto') return k;
  const t = CONTRACT.timing;
  return threads >= t.threads_per_vu_from ? t.threads_per_vu_auto : 1;
}

// stepVus(o, threads): the VUs of a step of `threads`.
export function stepVus(o, threads) {
  return Math.ceil(threads / threadsPerVu(o, threads));
}

// stepScenarios(o) -> k6 scenarios: one per thread step, run one after another, each
// connect + warmup_time + time long. Every VU's first iteration of a step connects, then
// waits for the step's load to begin: no VU starts a second iteration before all have
// started their first, so the first iterations' numbers (exec.scenario.iterationInTest, k6
// counts them across load-generator instances too) are the VU numbers 0..vus-1: VU i runs
// the thread ids i*K .. i*K+K-1 below `threads` (K: threadsPerVu).
export function stepScenarios(o, fn = 'default') {
  const scenarios = {};
  let offset = 0;
  for (const n of o.threads) {
    const len = connectSeconds(o, n) + o.warmup_time + o.time;
    scenarios[stepName(n)] = {
      executor: 'constant-vus', exec: fn, vus: stepVus(o, n),
      duration: `${len}s`, startTime: `${offset}s`, gracefulStop: `${o.grace_time}s`,
      tags: { threads: String(n) },
    };
    offset += len + o.grace_time; // a step's in-flight events may finish; the next step starts after
  }
  return scenarios;
}

// stepName(threads): the k6 scenario of the step of `threads` threads, `t<threads>`. The other
// way is stepThreads: a look-up in the run's own thread counts, not a parse of the name.
export function stepName(threads) {
  return `t${threads}`;
}

// stepThreads(o, name) -> the thread count of the step whose scenario is `name`.
export function stepThreads(o, name) {
  const threads = o.threads.find((n) => stepName(n) === name);
  if (threads === undefined) throw new OptionError(`internal: scenario ${name} is no thread step of threads=${o.threads}`);
  return threads;
}

// The step windows, relative to the start of the scenarios (ms): connect (the scenario's
// start), start (load begins: warm-up, then the measured window), measure_start, measure_end,
// end (measure_end + grace_time: the next step's connect).
export function stepWindows(o) {
  let offset = 0;
  return o.threads.map((n) => {
    const c = connectSeconds(o, n) * 1000;
    const w = { threads: n, connect: offset, start: offset + c, measure_start: offset + c + o.warmup_time * 1000 };
    w.measure_end = w.measure_start + o.time * 1000;
    w.end = w.measure_end + o.grace_time * 1000;
    offset = w.end;
    return w;
  });
}

// Submetrics per step (thresholds without conditions make k6 track them for the summary).
// Latency is not among them: the step's histogram (k6/x/tbs) has it.
export function stepThresholds(o) {
  const th = {};
  for (const n of o.threads) {
    const sel = `threads:${n},warmup:false`;
    for (const m of ['oltp_queries', 'oltp_transactions', 'oltp_errors', 'oltp_reconnects']) th[`${m}{${sel}}`] = [];
    for (const k of ['read', 'write', 'other']) th[`oltp_queries{${sel},kind:${k}}`] = [];
  }
  return th;
}

// queueName(testid, threads): the rate mode's queue of a step (k6/x/tbs queue), shared by the
// VUs, the progress lines and the summary.
export function queueName(testid, threads) {
  return histName(testid, threads, 'queue');
}

// histName(testid, threads, kind) -> the name of a step's process-wide k6/x/tbs objects (its
// histogram; with a suffix, its marks and counters).
export function histName(testid, threads, kind = '') {
  return `${testid}/t${threads}${kind ? `/${kind}` : ''}`;
}
