// What a run counts: the k6 metrics of docs/CONTRACT.md, which k6 sends to Prometheus, and
// the same counts kept in this process by k6/x/tbs (its tally), which the progress lines read
// (progress.js): no Prometheus round trip, no push interval's lag.
import { Counter, Gauge } from 'k6/metrics';
import tbs from 'k6/x/tbs';

// The metrics of docs/CONTRACT.md (Prometheus names get a k6_ prefix and a unit suffix).
// The event latency (oltp_latency, a Trend) is sent by k6/x/tbs's recorder, which also
// adds it to the step's sysbench histogram.
export const metrics = {
  queries: new Counter('oltp_queries'),
  transactions: new Counter('oltp_transactions'),
  errors: new Counter('oltp_errors'),
  reconnects: new Counter('oltp_reconnects'),
  marker: new Gauge('oltp_marker'),
};

// The run's tally (k6/x/tbs tally.go): Conn.flush adds the query and transaction counts with
// tallyCounts(reads, writes, others, txs) (a native function), the error handling adds errors
// and reconnects, the recorder adds every event's latency when progress lines are on.
export const tally = tbs.tally('run');
export const tallyCounts = tally.countFn();
