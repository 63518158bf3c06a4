// Running sysbench events: one to completion with sysbench's error handling (the ignore list,
// restarting the event, reconnects, outage markers), and back to back in batches, with or
// without the rate queue.
import exec from 'k6/execution';
import tbs from 'k6/x/tbs';
import { where, CONTRACT } from './config.js';
import { metrics, tally } from './metrics.js';
import { errorCode, isIgnored, connectUntil, LOST, TXS } from './conn.js';

const NO_TAGS = {};

function fatal(o, code, e) {
  const msg = `error ${code} from ${where(o)}: ${String(e.message || e).replace(/^GoError: /, '')}`;
  console.error(`FATAL: ${msg}`);
  exec.test.abort(msg);
}

// runEvent runs one sysbench event to completion, as sysbench does: an ignored error rolls
// back and restarts the event and is counted as an error; an ignored lost connection is
// counted as a reconnect (not an error), the VU reconnects (retrying until `stepEnd` while
// the server is away) and prepares its statements again, then restarts the event; any other
// error aborts the whole test with sysbench's kind of message. `start` is when the event
// began (tbs clock, epoch ms); `done(start)` records the event's latency and returns the tbs
// clock (the recorder's native doneFn); returns the event's end, or -1 when it did not
// finish (k6 stopped the VU, or the step ended while the server was away). `event` is the
// VU's bound event (sysbench.js bindEvent); `w` gives the statements to prepare again.
export function runEvent(conn, event, w, o, start, done, stepEnd) {
  const n = conn.n;
  for (;;) {
    try {
      event();
      n[TXS]++;
      return done(start);
    } catch (e) {
      if (!failed(conn, e, w, o, stepEnd)) return -1;
      // restart the event
    }
  }
}

// failed handles an error that ended an event attempt (runEvent's rules): true when the
// event is to be restarted (an ignored error, or a lost connection that is back), false
// when it cannot finish.
function failed(conn, e, w, o, stepEnd) {
  conn.flush();
  let code = errorCode(e);
  if (code === 'canceled') return false;
  if (LOST.has(code)) {
    if (code === 2003) code = 2013;
    if (!isIgnored(o, code)) {
      metrics.errors.add(1, { code: String(code), ignored: 'false' });
      tally.add('err', 1);
      fatal(o, code, e);
      return false;
    }
    metrics.reconnects.add(1, NO_TAGS);
    tally.add('rec', 1);
    conn.inTx = false;
    outageBegins();
    const back = connectUntil(conn, w.prepared, stepEnd);
    outageEnds();
    return back; // restart the event on the new connection
  }
  const ignored = isIgnored(o, code);
  metrics.errors.add(1, { code: String(code), ignored: String(ignored) });
  tally.add('err', 1);
  if (!ignored) {
    fatal(o, code, e);
    return false;
  }
  conn.rollback();
  return true;
}

// Outages: from the moment a first VU of the process loses its connection until no VU is
// reconnecting any more, marked with k6_oltp_marker events outage_start / outage_end (label
// `outage`: its number in the run) for the dashboards' annotations.
const reconnecting = tbs.counter('outage/reconnecting');
const outageSeq = tbs.counter('outage/seq');

function outageBegins() {
  if (reconnecting.add(1) === 1) {
    const n = outageSeq.add(1);
    metrics.marker.add(Date.now(), { event: 'outage_start', outage: String(n) });
  }
}

function outageEnds() {
  if (reconnecting.add(-1) === 0) {
    metrics.marker.add(Date.now(), { event: 'outage_end', outage: String(outageSeq.get()) });
  }
}

// How often a VU running events back to back adds its counts to the metrics (ms).
export const FLUSH_MS = CONTRACT.timing.flush_ms;
// The longest batch of events in one k6 iteration (ms): k6's per-iteration work is spread
// over thousands of events, and k6's own iteration metrics still tick every second.
export const BATCH_MS = CONTRACT.timing.batch_ms;

// runEvents runs events back to back until `until` (epoch ms), the way a sysbench thread
// loops, without k6's per-iteration cost on every event. The query and transaction counts
// go to the metrics every FLUSH_MS and when it returns, so a caller that ends the batch at
// a step boundary gets exact counts on each side of it; each event's latency goes to the
// recorder (`done`). Returns false when an event did not finish.
export function runEvents(conn, event, w, o, until, done, stepEnd, now) {
  let t = now();
  if (t >= until) return true;
  let flushAt = t + FLUSH_MS;
  const n = conn.n;
  do {
    // runEvent's usual path inline (one JavaScript call less per event); after an error,
    // runEvent restarts the event from the same start
    try {
      event();
      n[TXS]++;
      t = done(t);
    } catch (e) {
      t = failed(conn, e, w, o, stepEnd) ? runEvent(conn, event, w, o, t, done, stepEnd) : -1;
    }
    if (t < 0) { conn.flush(); return false; }
    if (t >= flushAt) { conn.flush(); flushAt = t + FLUSH_MS; }
  } while (t < until);
  conn.flush();
  return true;
}

// runLoops is runEvents with the native event loop (k6/x/tbs loop() and group(), sysbench.js
// nativeLoop) for the VU's threads (`threads`: { conn, w } each, in the group's order; one,
// or threads_per_vu): each thread runs its events in Go, on its own connection, a flush
// interval at a time, with the same clock, counts and flushes as runEvents; the group hands
// back one thread at a time as it stops, and the others go on meanwhile. A thread that failed
// is handled by failed() as runEvents handles its error; its event restarts from its start.
// Returns false when a thread's event did not finish (k6 stopped the VU, or the step ended
// while the server was away): the group's threads are stopped first.
export function runLoops(threads, group, o, until, stepEnd, now) {
  const t0 = now();
  if (t0 >= until) return true;
  group.from(t0);
  for (;;) {
    const k = group.run(until); // the first thread to stop, or -1: all are at `until`
    if (k < 0) return true;
    const th = threads[k];
    const e = group.error(k);
    if (!e) { th.conn.flush(); continue; }
    let back;
    try {
      back = failed(th.conn, e, th.w, o, stepEnd);
    } catch (x) { // a fatal error aborts the test: no thread may go on
      group.stop();
      throw x;
    }
    if (!back) {
      group.stop();
      for (const t of threads) t.conn.flush();
      return false;
    }
  }
}

// runQueued is runEvents for rate mode: events come from the step's queue (sysbench's
// --rate); each is timed from when this VU takes it (service latency, sysbench's figure) and
// from when it was due (response latency, queue time included): `doneDue(start, due)` is
// the recorder's native doneDueFn.
export function runQueued(conn, event, w, o, until, doneDue, stepEnd, queue, now) {
  let flushAt = now() + FLUSH_MS;
  for (;;) {
    const d = queue.take(until);
    if (d < 0) break;
    const t = runEvent(conn, event, w, o, now(), (start) => doneDue(start, d), stepEnd);
    queue.release();
    if (t < 0) { conn.flush(); return false; }
    if (t >= flushAt) { conn.flush(); flushAt = t + FLUSH_MS; }
  }
  conn.flush();
  return true;
}
