package tbs

import (
	"testing"
)

// A tally's counts add up by kind, and its interval percentile covers the latencies since the
// previous reading only, by sysbench's method (0 for an interval without events).
func TestTallyTotalsAndIntervals(t *testing.T) {
	m := &Module{r: newRoot()}
	h := m.Tally("run")
	if m.Tally("run").t != h.t {
		t.Fatal("one tally per name and process")
	}
	for _, k := range []string{"read", "read", "write", "other", "tx", "err", "rec"} {
		if err := h.Add(k, 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Add("writes", 1); err == nil {
		t.Fatal("an unknown count must be an error")
	}
	want := map[string]float64{"read": 4, "write": 2, "other": 2, "tx": 2, "err": 2, "rec": 2}
	for k, v := range h.Totals() {
		if want[k] != v {
			t.Fatalf("totals %v, want %v", h.Totals(), want)
		}
	}
	r := &Recorder{m: m}
	r.Tally(h)
	ref := newHistogram()
	for i := 1; i <= 100; i++ {
		ms := float64(i)
		r.tally.latency(bucketOf(ms))
		ref.Add(ms, 0)
	}
	if got, w := h.IntervalPercentile(95), ref.Percentile(95); got != w {
		t.Fatalf("first interval p95 %v, want %v", got, w)
	}
	if got := h.IntervalPercentile(95); got != 0 {
		t.Fatalf("an interval without events: p95 %v, want 0", got)
	}
	for i := 0; i < 10; i++ {
		r.Done(now() - 1000) // the recorder feeds the tally: warm-up included (no histogram set)
	}
	if got, w := h.IntervalPercentile(50), bucketValue(bucketOf(1000)); got != w {
		t.Fatalf("second interval p50 %v, want %v (only its own events)", got, w)
	}
}
