// Package tbs is the k6/x/tbs module of tidb-bench-stack: the state that sysbench keeps for
// all its threads at once, which k6's VUs (each its own JavaScript runtime) cannot share
// without help.
//
//   - Histogram: sysbench 1.0.20's latency histogram (sb_histogram.c: 1,024 logarithmic
//     buckets from 0.001 ms to 100 s, percentiles by nearest rank), one per thread step,
//     merged over every VU of the process as events end. Bounded: no sample is kept.
//   - Recorder: ends an event: one call takes the clock, adds the latency to the step's
//     histogram and sends the k6 sample (oltp_latency, a Trend, for Prometheus' native
//     histograms). The Trend's end-of-test sink is replaced by a bounded one, so a run's
//     memory stays flat however long it runs (k6's own Trend sink keeps every sample).
//   - Queue: sysbench's --rate: events arrive as a Poisson process and are taken, in order,
//     by whichever VU is free; the queue holds at most 131,072 events (sysbench's
//     MAX_QUEUE_LEN), arrivals beyond it are counted as dropped.
//   - Unique: sysbench.rand.unique(), one sequence for the whole process.
//   - Counter: a number shared by the VUs of the process (ready VUs, and so on).
//   - Barrier: a thread step's start: its load begins when all its VUs are connected.
//   - Tally: a run's running totals in the process (queries, transactions, errors,
//     reconnects, interval latencies), for the progress lines.
//   - cpuSeconds / rssBytes: the process' own resource use.
//   - hostSample / disturbance / listenerPid / canary: what disturbed a step (the host's CPU
//     steal, pressure, the database's, k6's and the other processes' CPU from /proc, and a
//     fixed CPU calibration timed around the step).
//
// One file per concern: module.go (registration, the process-wide state), clock.go,
// histogram.go (+ atomicfloat.go; fairness.go: each thread's events and execution time;
// histspec.go: its definition as data, exported to k6/contract.json), sink.go (the bounded
// Trend sink), recorder.go, queue.go, unique.go, counter.go, barrier.go, tally.go, marks.go
// (+ notevalue.go), process.go, disturb.go, testid.go, hash.go, exec.go (the statement runner), batch.go
// (its statements on a held connection), loop.go (the native event loop), group.go (a VU's
// threads), rand.go (sysbench's random numbers); TPC-C, go-tpc v1.0.7's workload driven from
// k6: tpcc.go (its commands), tpccmarker.go (the record of a prepare), tpcchook.go (each transaction it runs), tpccthread.go (a VU's
// go-tpc thread), tpccstep.go (a step's figures and the k6 samples). index.d.ts is the JS API; dts_test.go keeps
// it true.
package tbs

import (
	"sync"

	"go.k6.io/k6/js/modules"
	"go.k6.io/k6/metrics"
)

// ImportPath is the module's JS import path.
const ImportPath = "k6/x/tbs"

func init() { modules.Register(ImportPath, newRoot()) }

// NewRoot is a fresh process-wide state of the module (histograms, queues, marks, notes, ...):
// k6 registers one per process; an in-process test (k6/jstest) makes one per runtime, so that
// what one test's scripts leave behind (a first-write-wins note, say) does not reach the next.
func NewRoot() modules.Module { return newRoot() }

type root struct {
	mu       sync.Mutex
	hists    map[string]*Histogram
	queues   map[string]*Queue
	uniques  map[string]*Unique
	counters map[string]*Counter
	barriers map[string]*Barrier
	tallies  map[string]*Tally
	bounded  map[*metrics.Metric]bool
	marks    map[string]float64
	notes    map[string]string
	parsed   map[string]*jsonNode // notes parsed once for NoteValue (notes are written once)
	// TPC-C (tpcc.go): the workloads and steps
	tpccs     map[string]*Tpcc
	tpccSteps map[string]*TpccStep
}

func newRoot() *root {
	return &root{
		hists: map[string]*Histogram{}, queues: map[string]*Queue{}, uniques: map[string]*Unique{},
		counters: map[string]*Counter{}, barriers: map[string]*Barrier{}, tallies: map[string]*Tally{}, bounded: map[*metrics.Metric]bool{},
		tpccs: map[string]*Tpcc{}, tpccSteps: map[string]*TpccStep{},
	}
}

// shared returns the process-wide object called name in objs, made by mk on first use.
func shared[T any](r *root, objs map[string]*T, name string, mk func() *T) *T {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := objs[name]
	if !ok {
		o = mk()
		objs[name] = o
	}
	return o
}

func (r *root) NewModuleInstance(vu modules.VU) modules.Instance { return &Module{r: r, vu: vu} }

// Module is what a VU sees as the default export of k6/x/tbs.
type Module struct {
	r  *root
	vu modules.VU
}

// Exports implements modules.Instance.
func (m *Module) Exports() modules.Exports { return modules.Exports{Default: m} }
