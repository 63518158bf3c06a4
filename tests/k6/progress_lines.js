// k6/lib/progress.js's --report-interval lines from the run's tally (k6/x/tbs), for
// tests/test_progress.py: prints "LINE <line>" for each call of progressLine, "NULL" when it
// returns none. No database: the counts and latencies are put into the tally directly.
import tbs from 'k6/x/tbs';
import { progressLine } from '../../k6/lib/progress.js';
import { tally, tallyCounts } from '../../k6/lib/metrics.js';

export const options = { vus: 1, iterations: 1 };

const rec = tbs.recorder('progress_test_latency', ''); // init context only
rec.tally(tally);
const done = rec.doneFn();

export function setup() {
  const o = { report_interval: 5, percentile: 95, rate: 0 };
  const data = { run_start: Date.now() - 12000, testid: 'progress-test' };
  const windows = [{ threads: 8, start: 1000, measure_end: 30000 }];
  const print = (l) => console.log(l === null ? 'NULL' : `LINE ${l}`);
  // first interval: 100 reads, 20 writes, 10 other, 5 transactions, 1 error, 2 reconnects,
  // 20 events of 12 ms
  tallyCounts(100, 20, 10, 5);
  tally.add('err', 1);
  tally.add('rec', 2);
  for (let i = 0; i < 20; i++) done(tbs.now() - 12);
  print(progressLine(o, data, windows));
  // second interval: 50 more reads and 5 transactions, no event ended
  tallyCounts(50, 0, 0, 5);
  print(progressLine(o, data, windows));
  // the third interval (10 s .. 15 s) has not ended yet
  print(progressLine(o, data, windows));
}

export default function () {}
