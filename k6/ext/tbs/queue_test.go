package tbs

import (
	"context"
	"testing"
)

func TestQueuePoissonRate(t *testing.T) {
	m := &Module{r: newRoot()}
	start := now() - 10000 // a queue that began 10 s ago at 500/s: all arrivals are due
	h := m.Queue("q", 500, start, start+10000, 42)
	n := 0
	var last float64
	for {
		d := h.q.take(context.Background(), now())
		if d < 0 {
			break
		}
		if d < last {
			t.Fatalf("arrivals out of order: %f after %f", d, last)
		}
		last = d
		n++
		h.Release()
	}
	// 5,000 expected; a Poisson count has sd sqrt(5000) = 71
	if n < 4700 || n > 5300 {
		t.Fatalf("%d arrivals in 10 s at 500/s", n)
	}
	if st := h.Stats(); st["concurrency"] != 0 || st["length"] != 0 {
		t.Fatalf("stats %v", st)
	}
}
