package tbs

import (
	"context"
	"sync"
	"testing"
)

func TestBarrierReleasesAllAtOneTimeWhenTheLastArrives(t *testing.T) {
	b := &Barrier{parties: 3, done: make(chan struct{})}
	ctx := context.Background()
	deadline := now() + 10000
	got := make([]float64, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b.arrive()
			got[i] = b.wait(ctx, deadline)
		}(i)
	}
	wg.Wait()
	if got[0] <= 0 || got[0] >= deadline || got[1] != got[0] || got[2] != got[0] {
		t.Fatalf("every party gets the one release time before the deadline: %v (deadline %v)", got, deadline)
	}
	if late := b.wait(ctx, deadline); late != got[0] {
		t.Fatalf("a wait after the release returns the release time: %v, want %v", late, got[0])
	}
}

func TestBarrierWaitEndsAtTheDeadlineOrWhenTheVUStops(t *testing.T) {
	b := &Barrier{parties: 2, done: make(chan struct{})}
	b.arrive() // one of two: never released
	deadline := now() + 30
	if got := b.wait(context.Background(), deadline); got != deadline {
		t.Fatalf("without all parties the wait ends at the deadline: %v, want %v", got, deadline)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := b.wait(ctx, now()+10000); got != -1 {
		t.Fatalf("a stopped VU's wait returns -1: %v", got)
	}
	if got := b.wait(context.Background(), now()-1); got >= now() {
		t.Fatalf("a deadline already past returns at once: %v", got)
	}
}
