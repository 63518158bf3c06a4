package tbs

// Tally: a run's running totals in this process, for the progress lines (sysbench's
// --report-interval): queries by kind, transactions, ignored errors and reconnects (the VUs
// add their counts when they flush them to k6's metrics), and the latency of every event,
// warm-up included, in sysbench's buckets (the recorder adds it), which the reader takes
// interval by interval as sysbench's reporting thread does (sb_histogram_get_pct_intermediate).
// The same numbers k6 sends to Prometheus, read in process: no query, no push interval's lag.

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/grafana/sobek"
)

// The tally's counts, in the order of Totals' keys.
const (
	tallyRead = iota
	tallyWrite
	tallyOther
	tallyTx
	tallyErr
	tallyRec
	tallyKinds
)

var tallyNames = [tallyKinds]string{"read", "write", "other", "tx", "err", "rec"}

// Tally is the process-wide state; VUs see it through a TallyHandle.
type Tally struct {
	n    [tallyKinds]atomic.Int64
	lat  [histBuckets]atomic.Uint64
	mu   sync.Mutex // the interval reader's
	prev [histBuckets]uint64
}

// latency adds one event's latency bucket.
func (t *Tally) latency(b int) { t.lat[b].Add(1) }

// totals returns every count by name.
func (t *Tally) totals() map[string]float64 {
	out := make(map[string]float64, tallyKinds)
	for i, k := range tallyNames {
		out[k] = float64(t.n[i].Load())
	}
	return out
}

// intervalPercentile is sysbench's percentile over the latencies recorded since the last
// call (0 when there were none).
func (t *Tally) intervalPercentile(p float64) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var counts [histBuckets]uint64
	var n uint64
	for i := range counts {
		c := t.lat[i].Load()
		counts[i] = c - t.prev[i]
		t.prev[i] = c
		n += counts[i]
	}
	return percentileOf(counts[:], n, p)
}

// TallyHandle is a VU's view of a Tally.
type TallyHandle struct {
	t *Tally
	m *Module
}

// Add adds n to the count `kind` (read, write, other, tx, err, rec).
func (h *TallyHandle) Add(kind string, n int64) error {
	for i, k := range tallyNames {
		if k == kind {
			h.t.n[i].Add(n)
			return nil
		}
	}
	return fmt.Errorf("k6/x/tbs: tally has no count %q (valid: read, write, other, tx, err, rec)", kind)
}

// CountFn returns a native function (reads, writes, others, txs) that adds the four counts
// at once (a VU's flush; without sobek's reflection wrapper).
func (h *TallyHandle) CountFn() sobek.Value {
	rt := h.m.vu.Runtime()
	t := h.t
	return rt.ToValue(func(call sobek.FunctionCall) sobek.Value {
		for i := tallyRead; i <= tallyTx; i++ {
			if v := call.Argument(i).ToInteger(); v != 0 {
				t.n[i].Add(v)
			}
		}
		return sobek.Undefined()
	})
}

// Totals returns the counts so far: read, write, other, tx, err, rec.
func (h *TallyHandle) Totals() map[string]float64 { return h.t.totals() }

// IntervalPercentile is sysbench's percentile p (nearest rank, its buckets) over the
// latencies recorded since the previous call; 0 when there were none. One reader (the
// monitor VU) takes the intervals.
func (h *TallyHandle) IntervalPercentile(p float64) float64 { return h.t.intervalPercentile(p) }

// Tally returns the process-wide tally called name (made on first use).
func (m *Module) Tally(name string) *TallyHandle {
	return &TallyHandle{t: shared(m.r, m.r.tallies, name, func() *Tally { return &Tally{} }), m: m}
}
