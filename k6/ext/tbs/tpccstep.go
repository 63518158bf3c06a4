package tbs

// A TPC-C thread step's figures per transaction, kept twice: go-tpc's own way (its
// measurement.Histogram: HdrHistogram from 1 ms to 16 s, 1 significant figure, successes and
// errors apart, as `go-tpc tpcc run` prints them) and ours (the sysbench histogram every OLTP
// step has, k6/x/tbs histogram.go, as the process-wide histogram "<step>/<transaction>"), and
// the k6 samples of every transaction (tpcc_transactions, tpcc_errors, tpcc_latency).

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/go-tpc/pkg/measurement"
	"go.k6.io/k6/metrics"
)

type tpccTxn struct {
	ok, bad  *measurement.Histogram // go-tpc's: "<name>" and "<name>_ERR"
	ours     *Histogram
	n, nerrs atomic.Int64
}

// TpccStep is one step's transactions.
type TpccStep struct {
	m    *Module
	name string
	mu   sync.Mutex
	txns map[string]*tpccTxn
}

// TpccStep returns the process-wide step `name` (made on first use).
func (m *Module) TpccStep(name string) *TpccStep {
	return shared(m.r, m.r.tpccSteps, name, func() *TpccStep {
		return &TpccStep{m: m, name: name, txns: map[string]*tpccTxn{}}
	})
}

func (s *TpccStep) txn(name string) *tpccTxn {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.txns[name]
	if !ok {
		x = &tpccTxn{
			ok:   measurement.NewHistogram(time.Millisecond, maxMeasureLatency, 1),
			bad:  measurement.NewHistogram(time.Millisecond, maxMeasureLatency, 1),
			ours: s.m.Histogram(s.name + "/" + name),
		}
		s.txns[name] = x
	}
	return x
}

func (s *TpccStep) add(name string, d time.Duration, err error) {
	x := s.txn(name)
	if err != nil {
		x.nerrs.Add(1)
		x.bad.Measure(d)
		return
	}
	x.n.Add(1)
	x.ok.Measure(d)
	x.ours.Add(float64(d)/1e6, now())
}

// goTpcFigures: go-tpc's summary figures of one histogram (ms), without its rate, which it
// divides by the time since the histogram was made: the manifest divides by the step's window.
func goTpcFigures(h *measurement.Histogram) map[string]any {
	i := h.GetInfo()
	return map[string]any{"count": i.Count, "sum_ms": i.Sum, "avg": i.Avg, "p50": i.P50, "p90": i.P90,
		"p95": i.P95, "p99": i.P99, "p999": i.P999, "max": i.Max}
}

// Figures: transaction -> { count, errors, gotpc: go-tpc's figures of the successes,
// gotpc_err: of the errors }. Our histogram of each is tbs.histogram("<step>/<transaction>").
func (s *TpccStep) Figures() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]any{}
	for name, x := range s.txns {
		out[name] = map[string]any{
			"count": x.n.Load(), "errors": x.nerrs.Load(), "gotpc": goTpcFigures(x.ok), "gotpc_err": goTpcFigures(x.bad),
		}
	}
	return out
}

// TpccRecorder sends a VU's transactions to k6: tpcc_transactions and tpcc_errors (Counters)
// and tpcc_latency (a Trend of the successes, with the bounded sink), each tagged with the
// VU's tags (testid, workload, threads, warmup, ...) and txn. Batched as Recorder's are.
type TpccRecorder struct {
	m            *Module
	tx, errs, lt *metrics.Metric
	buf          []metrics.Sample
}

// TpccRecorder makes a VU's recorder. Init context only.
func (m *Module) TpccRecorder() (*TpccRecorder, error) {
	env := m.vu.InitEnv()
	if env == nil {
		return nil, initError("k6/x/tbs: tpccRecorder() must be called in the init context")
	}
	r := &TpccRecorder{m: m}
	var err error
	if r.tx, err = env.Registry.NewMetric("tpcc_transactions", metrics.Counter); err != nil {
		return nil, err
	}
	if r.errs, err = env.Registry.NewMetric("tpcc_errors", metrics.Counter); err != nil {
		return nil, err
	}
	if r.lt, err = m.trend("tpcc_latency"); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *TpccRecorder) ended(name string, ms float64, err error) {
	state := r.m.vu.State()
	if state == nil {
		return
	}
	ctm := state.Tags.GetCurrentValues()
	tags := ctm.Tags.With("txn", name)
	t := time.Now()
	add := func(mt *metrics.Metric, v float64) {
		r.buf = append(r.buf, metrics.Sample{TimeSeries: metrics.TimeSeries{Metric: mt, Tags: tags}, Time: t, Metadata: ctm.Metadata, Value: v})
	}
	if err != nil {
		add(r.errs, 1)
	} else {
		add(r.tx, 1)
		add(r.lt, ms)
	}
	if len(r.buf) >= batchSamples {
		r.Flush()
	}
}

// Flush sends the samples gathered since the last Flush.
func (r *TpccRecorder) Flush() {
	if len(r.buf) == 0 {
		return
	}
	batch := r.buf
	r.buf = nil
	if state := r.m.vu.State(); state != nil {
		metrics.PushIfNotDone(r.m.vu.Context(), state.Samples, metrics.Samples(batch))
	}
}

func (r *TpccRecorder) log(msg string) {
	if state := r.m.vu.State(); state != nil && state.Logger != nil {
		state.Logger.Warn(msg)
	}
}
