/**
 * k6/x/tbs: tidb-bench-stack's k6 module (Go, this directory). The state sysbench keeps for
 * all its threads at once, which k6's VUs (each its own JavaScript runtime) cannot share
 * otherwise, and the per-event hot path in native code.
 *
 * ```js
 * import tbs from 'k6/x/tbs';
 * const rec = tbs.recorder('oltp_latency', '');   // init context
 * const done = rec.doneFn();
 * rec.use(tbs.histogram('run/t8'), null, 0);   // thread 0
 * const end = done(tbs.now());
 * ```
 *
 * Names are "process-wide": every VU of one k6 process that asks for the same name gets the
 * same object. Times are epoch milliseconds on the monotonic clock (tbs.now()); latencies are
 * milliseconds.
 *
 * This file is checked by dts_test.go: every function the Go module gives JavaScript is
 * declared here with its number of parameters, and nothing else is. Keep one member per
 * line, `name(params): Type;`.
 */

/** The module's default export. */
export interface Tbs {
  /** Epoch milliseconds, monotonic, microsecond resolution. */
  now(): number;
  /** A new testid (UTC time and four hex digits), made by the launcher core (k6/ext/launch). */
  newTestId(): string;

  /** The process-wide sysbench histogram `name` (1,024 log buckets, 0.001 ms to 100 s), made on first use. */
  histogram(name: string): Histogram;
  /** sysbench's nearest-rank percentile `p` over sparse [bucket index, count] pairs (merged histograms). */
  percentileOf(pairs: [number, number][], p: number): number;
  /** The sysbench bucket (0..1023) of a latency in ms. */
  bucketOf(ms: number): number;
  /** The histogram's definition, as k6/contract.json's latency_histogram (generated from Go). */
  latencyHistogram(): LatencyHistogramSpec;

  /** A VU's event recorder for the Trend `name` (and `respName` for rate mode's response latency; '' for none). Init context only. */
  recorder(name: string, respName: string): Recorder;

  /** The process-wide `rate` queue `name`: `rate` events/s, a Poisson process from `start` to `end` (epoch ms); seed 0: from the clock. Made on first use; later calls get the same queue whatever their other arguments. */
  queue(name: string, rate: number, start: number, end: number, seed: number): Queue;

  /** The process-wide sysbench.rand.unique() sequence `name`, seeded as sysbench seeds it; `stride` and `lane` interleave several load generators. */
  unique(name: string, seedIndex: number, seedOffset: number, stride: number, lane: number): Unique;

  /** The process-wide counter `name`. */
  counter(name: string): Counter;
  /** The process-wide barrier `name` for `parties` parties (fixed by its first call). */
  barrier(name: string, parties: number): Barrier;

  /** The process-wide tally `name`: the run's running totals for the progress lines. */
  tally(name: string): Tally;

  /** Records `v` under `name`; the first write wins. */
  mark(name: string, v: number): void;
  /** Every mark. */
  marks(): Record<string, number>;
  /** Records the text `text` under `name` (for handleSummary, another runtime); the first write wins. */
  note(name: string, text: string): void;
  /** Every note. */
  notes(): Record<string, string>;
  /** The note called `name`, or null when there is none (without copying every note). */
  noteText(name: string): string | null;
  /** The note called `name`, which holds JSON, as a new value (what JSON.parse of its text gives, built in Go from the text parsed once per process), or null when there is none; throws when the note is not JSON. */
  noteValue(name: string): any;
  /** FNV-1a (32 bits) of `s`'s UTF-16 code units (as charCodeAt gives them). */
  hash(s: string): number;
  /** A key of an environment (__ENV: its entries sorted, FNV-1a 64 bits, base 36): the name of the note of the options parsed from it. */
  envKey(env: Record<string, string>): string;

  /** CPU seconds (user + system) this process has used. */
  cpuSeconds(): number;
  /** This process' resident memory in bytes (Linux), 0 where unknown. */
  rssBytes(): number;
  /** The CPUs this process may run on. */
  cores(): number;
  /** The process listening on TCP `port` in k6's network namespace (its socket's inode among /proc/<pid>/fd): pid 0 and why when none can be seen (disturb.go). */
  listenerPid(port: number): ListenerPid;
  /** The host's CPU counters now: /proc/stat, /proc/pressure/cpu, k6's own and process `pid`'s /proc/<pid>/stat (0: no process). */
  hostSample(pid: number): HostSample;
  /** What disturbed the window between two hostSample() reads: a step's steps[i].disturbance without the canaries (k6/lib/disturb.js adds them). */
  disturbance(a: HostSample, b: HostSample): Disturbance;
  /** The canary: a fixed CPU calibration of this host's speed (disturb.go), timed `repeats` times. */
  canary(repeats: number): CanaryTiming;

  /** A VU's statement runner on an xk6-sql database (native functions: no reflection wrapper per statement). */
  /** Throws, naming the value and what to do, unless a run can write its summary to folder `dir` (made when missing); oltp.js setup(). */
  checkResultsDir(dir: string): void;
  execer(): Execer;

  /** The valid rand_type values. */
  randTypes(): string[];
  /** A VU's sysbench random numbers (sb_rand.c) for the options in `spec`. Throws on a bad rand_type. */
  rand(spec: RandSpec): Rand;

  /** oltp.js native_loop (the default): the native event loop of one sysbench thread for one step of a parts-based workload (k6/ext/tbs/loop.go): `rand` from rand(), `execer` from execer(), `rec` its recorder (null: none), `conn` the conn.js Conn whose `n` and `inTx` it keeps. group() runs it. */
  loop(spec: LoopSpec, rand: Rand, execer: Execer, rec: Recorder | null, conn: object): Loop;
  /** A VU's threads (threads_per_vu; one loop() each, in thread id order), run at once, a goroutine per thread, each `flushMs` (flush_ms) at a time (k6/ext/tbs/group.go; k6/lib/events.js runLoops drives it). */
  group(loops: Loop[], flushMs: number): Group;

  /** A step's CPU profiles (k6/ext/tbs/profile.go), every target's at once over the same `seconds`: tidb, tikv, pd from their pprof servers (`addr` host:port; in parts of at most `partMax` s merged, each allowed `slack` s beyond its length), client: this k6 process (runtime/pprof); each written to its `file` (gzipped pprof). Blocks for the longest; never throws: a failure is that target's `ok: false` and `why`. The results are in the targets' order. */
  profiles(targets: ProfileTarget[], seconds: number, partMax: number, slack: number): ProfileResult[];
  /** tpcc.js: the process-wide TPC-C workload `name`, go-tpc v1.0.7's tpcc package on a pool of our driver (k6/ext/tbs/tpcc.go); throws on warehouses < 1 or parts outside 1..warehouses. */
  tpcc(name: string, o: TpccOptions): Tpcc;
  /** tpcc.js: a VU's TPC-C recorder (tpcc_transactions, tpcc_errors, tpcc_latency, tagged txn). Init context only. */
  tpccRecorder(): TpccRecorder;
  /** tpcc.js: the process-wide TPC-C step `name`: its figures per transaction (its sysbench histograms are histogram(`${name}/${txn}`)). */
  tpccStep(name: string): TpccStep;
}

/** listenerPid(): the process listening on a port. */
export interface ListenerPid {
  pid: number;
  name: string;
  why: string;
}

/** hostSample(): CPU counters in clock ticks (USER_HZ, 100), summed over every CPU. */
export interface HostSample {
  at: number;
  cpus: number;
  total: number;
  idle: number;
  steal: number;
  /** /proc/pressure/cpu some total (µs); -1: n/a (psi_why). */
  psi_some_us: number;
  psi_why: string;
  pid: number;
  /** -1: not read. */
  pid_ticks: number;
  self_ticks: number;
  /** /proc/stat could not be read. */
  error: string;
}

/** disturbance(): shares of the window's CPU time (cpu_s: every CPU's seconds), CPU seconds; null where not measured, with the reason. */
export interface Disturbance {
  available: boolean;
  why?: string;
  window?: [number, number];
  window_s?: number;
  cpus?: number;
  cpu_s?: number;
  busy_cpu_s?: number;
  steal_share?: number;
  psi_some_share?: number | null;
  psi_why?: string;
  client_cpu_s?: number | null;
  db_cpu_s?: number | null;
  db_why?: string;
  other_cpu_s?: number | null;
  other_share?: number | null;
}

/** canary(): the fastest and the median timing (ns) of the canary's fixed work. */
export interface CanaryTiming {
  min_ns: number;
  median_ns: number;
  repeats: number;
  work: string;
}

declare const tbs: Tbs;
export default tbs;

/** One step's latencies (ms) and when its events ended. */
export interface Histogram {
  /** Records a latency (ms) of an event that ended at `end` (epoch ms; 0: unknown). */
  add(ms: number, end: number): void;
  /** sysbench's percentile `p` (nearest rank); 0 when empty. */
  percentile(p: number): number;
  /** The number of latencies recorded. */
  count(): number;
  /** The histogram as plain data. */
  snapshot(): HistogramSnapshot;
  /** Each thread's events and execution time (ms) in the step, by thread id (sysbench's threads fairness). */
  threads(): HistogramThreads;
}

export interface HistogramThreads {
  ids: number[];
  events: number[];
  time_ms: number[];
}

export interface HistogramSnapshot {
  scheme: 'sysbench';
  buckets: number;
  min_ms: number;
  max_ms: number;
  count: number;
  sum_ms: number;
  /** The non-empty buckets as [index, count] pairs. */
  counts: [number, number][];
  min: number;
  max: number;
  /** Epoch ms of the first and last event ends; the longest time without one, and its start. */
  first_end: number;
  last_end: number;
  max_gap_ms: number;
  max_gap_start: number;
}

/** One profile profiles() takes: a component (tidb, tikv, pd: its pprof server at `addr`; client: this k6 process, `addr` empty) and its file. */
export interface ProfileTarget {
  component: 'tidb' | 'tikv' | 'pd' | 'client';
  addr: string;
  file: string;
}

/** What profiles() gives per target: the file and its figures, or why there is none. */
export interface ProfileResult {
  ok: boolean;
  why: string;
  file: string;
  /** The seconds of each part asked for. */
  parts: number[];
  /** The merged profile's own duration. */
  seconds: number;
  samples: number;
  cpuSeconds: number;
  bytes: number;
  /** Epoch ms: the profile's first request sent (the client's: started) and its last answer read (stopped). */
  start: number;
  end: number;
  /** Where it came from (e.g. "TiKV status port /debug/pprof/profile (Content-Type: application/protobuf)"). */
  source: string;
}

export interface LatencyHistogramSpec {
  scheme: 'sysbench';
  buckets: number;
  min_ms: number;
  max_ms: number;
  deduct: number;
  mult: number;
  bucket_ratio: number;
  bucket: string;
  value: string;
  percentile: string;
  /** values_ms[i]: the latency sysbench reports for bucket i, as Go computes it. */
  values_ms: number[];
}

/** Ends a VU's events: latency into the step's histogram (and the tally), a k6 Trend sample (batched). */
export interface Recorder {
  /** A recorder for another thread of the VU (threads_per_vu): the same metrics and tally, samples of its own. */
  fork(): Recorder;
  /** Sets the histograms the next events of sysbench thread `thread` go to (null: none, e.g. during warm-up); sends the samples gathered so far. */
  use(h: Histogram | null, rh: Histogram | null, thread: number): void;
  /** Every event's latency, warm-up included, also goes to tally `t` (null: no more). */
  tally(t: Tally | null): void;
  /** Sends the batched samples to k6. */
  flush(): void;
  /** Ends an event that started at `t0`; returns the end (epoch ms). */
  done(t0: number): number;
  /** Rate mode: service latency from `t0`, response latency from `due`; returns the end. */
  doneDue(t0: number, due: number): number;
  /** done as a native function. */
  doneFn(): (t0: number) => number;
  /** doneDue as a native function. */
  doneDueFn(): (t0: number, due: number) => number;
}

/** A VU's view of a rate queue. */
export interface Queue {
  /** The due time (epoch ms) of the next event, waiting until it is due; -1 when none is due before `deadline` or the queue's end. */
  take(deadline: number): number;
  /** Marks the event this VU took last as finished. */
  release(): void;
  stats(): { length: number; concurrency: number; taken: number; dropped: number };
}

export interface Unique {
  /** The next number of the sequence (0..2^32-1). */
  next(): number;
}

export interface Barrier {
  /** Counts this VU as arrived; the last party releases the waiters. */
  arrive(): void;
  /** Waits for the release: its time (epoch ms), `deadline` when not all arrived by then, -1 when the VU was stopped. */
  wait(deadline: number): number;
  /** How many parties have arrived. */
  arrived(): number;
}

export interface Counter {
  /** Adds `n`; returns the new value. */
  add(n: number): number;
  /** Raises the value to `n` if it is lower; returns the value. */
  max(n: number): number;
  get(): number;
}

/** A run's running totals in this process (what k6 also sends to Prometheus). */
export interface Tally {
  /** Adds `n` to one count. */
  add(kind: 'read' | 'write' | 'other' | 'tx' | 'err' | 'rec', n: number): void;
  /** A native (reads, writes, others, txs) function adding four counts at once. */
  countFn(): (reads: number, writes: number, others: number, txs: number) => void;
  /** The counts so far. */
  totals(): { read: number; write: number; other: number; tx: number; err: number; rec: number };
  /** sysbench's percentile `p` over the latencies recorded since the previous call; 0 when none. */
  intervalPercentile(p: number): number;
}

/** A VU's statement runner (k6/ext/tbs/exec.go). */
export interface Execer {
  /** Runs a statement on the pool set by use(); returns nothing. Throws what the driver said. */
  exec(q: string, ...args: unknown[]): void;
  /** Runs a statement; returns its affected rows. */
  execCount(q: string, ...args: unknown[]): number;
  /** Points exec/execCount at a database from sql.open() (null: none). */
  use(db: object | null): void;
}

/** A workload as the native loop runs it (k6/lib/sysbench.js nativeLoop makes it). */
export interface LoopSpec {
  /** The workload's event parts (k6/contract.json), each one the loop runs. */
  parts: string[];
  /** BEGIN/COMMIT around the parts. */
  trx: boolean;
  /** Statements per event by option name (point_selects, simple_ranges, ..., delete_inserts). */
  counts: Record<string, number>;
  /** Statement key (point_selects, ..., deletes, inserts) -> its text for tables 1..tables. */
  texts: Record<string, string[]>;
  tables: number;
  table_size: number;
  range_size: number;
  range_selects: boolean;
  c_template: string;
  pad_template: string;
  /** select_random_*: the one statement ('' for the other workloads). */
  random_sql: string;
  random_points: number;
  number_of_ranges: number;
  delta: number;
  /** select_random_*: the thread's slice of k values, [rmin, rmax]. */
  rmin: number;
  rmax: number;
  /** oltp_insert: ids made by the server (auto_inc), else from `unique`, the run's sequence. */
  auto_inc: boolean;
  unique: Unique | null;
}

/** One sysbench thread's native event loop (k6/ext/tbs/loop.go): a handle for group(), no methods. */
export interface Loop {
}

/** A VU's threads on the native loop (k6/ext/tbs/group.go). */
export interface Group {
  /** Every thread's next event starts at `t` (epoch ms). */
  from(t: number): void;
  /** Starts each thread behind `until` (and without an error not yet taken) on its events for one flush interval or until `until`, and returns the first thread to stop (its counts added to its conn.n), or -1 when every thread's last event ended at or after `until`. The other threads go on. */
  run(until: number): number;
  /** The error (a GoError) thread `k`'s last run ended with, or null; taken once: the next run() restarts its event from its start. */
  error(k: number): Error | null;
  /** Ends every thread at its next event's end and waits for them; their errors are dropped. */
  stop(): void;
}

/** The options a Rand is made from (sysbench's, plus the VU's stream). */
export interface RandSpec {
  rand_type: string;
  rand_spec_iter: number;
  rand_spec_pct: number;
  rand_spec_res: number;
  rand_pareto_h: number;
  rand_zipfian_exp: number;
  /** 0: unseeded. */
  rand_seed: number;
  stream: number;
}

/** A VU's random numbers (native functions). */
export interface Rand {
  /** sysbench's rand_uniform(a, b). */
  uniform(a: number, b: number): number;
  /** The distribution of rand_type. */
  def(a: number, b: number): number;
  /** sb_rand_str: '#' a digit, '@' a letter. */
  string(template: string): string;
  /**
   * prepare's VALUES list for ids first..last: `(id, k, 'c', 'pad')` per row (no id when
   * autoInc), k = def(1, tableSize), then c and pad from their templates, comma-separated.
   */
  rows(first: number, last: number, tableSize: number, autoInc: boolean, cTemplate: string, padTemplate: string): string;
  /** The uniform numbers drawn so far. */
  draws(): number;
  byName: RandByName;
}

export interface RandByName {
  uniform(a: number, b: number): number;
  gaussian(a: number, b: number): number;
  special(a: number, b: number): number;
  pareto(a: number, b: number): number;
  zipfian(a: number, b: number): number;
}

/** tpcc(): the workload's options (k6/contract.json's, checked by tpcc.js first). */
export interface TpccOptions {
  dsn: string;
  warehouses: number;
  parts: number;
  wait: boolean;
  check_all: boolean;
  ignore_error: boolean;
  no_check: boolean;
}

/** go-tpc's workload on one target (k6/ext/tbs/tpcc.go). */
export interface Tpcc {
  /** go-tpc's prepare on `threads` threads (tables, data), then its prepare check (not with no_check), recorded in the prepare marker; throws, saying what stopped it. */
  prepare(threads: number): void;
  /** The prepare marker (k6/ext/tbs/tpccmarker.go): { table, exists } and, when it exists, { state: 'loading' | 'checking' | 'done', warehouses, parts, checked, gotpc_version, started, finished }. */
  marker(): Record<string, any>;
  /** go-tpc's consistency check on `threads` threads; throws naming the warehouse and condition that failed. */
  check(threads: number): void;
  /** go-tpc's cleanup: drops its tables, then the prepare marker. */
  cleanup(): void;
  /** go-tpc's transactions in its order, their weights and go-tpc's release: { names, weights, version }. */
  txns(): { names: string[]; weights: number[]; version: string };
  /** Connects go-tpc thread `id` for a VU (its own connection); throws when it cannot connect. */
  thread(id: number, rec: TpccRecorder): TpccThread;
  /** Closes the pool. */
  close(): void;
}

/** A go-tpc thread run by a VU (k6/ext/tbs/tpccthread.go). */
export interface TpccThread {
  /** The step its next transactions are measured in (null: none, the warm-up). */
  use(s: TpccStep | null): void;
  /** Runs transactions back to back until epoch ms `until`; returns how many ended. */
  run(until: number): number;
  /** The error that stopped the thread (without ignore_error), or ''. */
  stopped(): string;
  /** Closes its statements and connection. */
  close(): void;
}

/** A TPC-C step (k6/ext/tbs/tpccstep.go). */
export interface TpccStep {
  /** transaction -> { count, errors, gotpc, gotpc_err }: gotpc is go-tpc's summary of its histogram (count, sum_ms, avg, p50, p90, p95, p99, p999, max in ms). */
  figures(): Record<string, any>;
}

/** A VU's TPC-C samples to k6 (k6/ext/tbs/tpccstep.go). */
export interface TpccRecorder {
  /** Sends the batched samples. */
  flush(): void;
}
