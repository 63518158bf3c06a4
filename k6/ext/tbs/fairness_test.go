package tbs

import "testing"

// TestThreadsTallyEachThreadsEvents: each thread's recorder adds its events and their time to
// its own tally of the step's histogram (sysbench's threads fairness), under the thread's id;
// warm-up events (no histogram) and another step's events are not counted; a recorder set to
// the same step again keeps its tally.
func TestThreadsTallyEachThreadsEvents(t *testing.T) {
	step, next := newHistogram(), newHistogram()
	a, b, idle := &Recorder{}, &Recorder{}, &Recorder{}
	a.Done(now()) // warm-up: no histogram yet
	a.Use(step, nil, 7)
	b.Use(step, nil, 2)
	idle.Use(step, nil, 5)
	for i := 0; i < 3; i++ {
		a.Done(now() - 4)
	}
	b.Done(now() - 10)
	a.Use(step, nil, 7) // the same step again: the same tally
	a.Done(now() - 4)
	b.Use(next, nil, 2)
	b.Done(now())
	got := step.Threads()
	ids, events, ms := got["ids"].([]int), got["events"].([]uint64), got["time_ms"].([]float64)
	if len(ids) != 3 || ids[0] != 2 || ids[1] != 5 || ids[2] != 7 {
		t.Fatalf("ids %v, want [2 5 7] (by id)", ids)
	}
	if events[0] != 1 || events[1] != 0 || events[2] != 4 {
		t.Errorf("events %v, want [1 0 4]", events)
	}
	if ms[0] < 10 || ms[0] > 11 || ms[1] != 0 || ms[2] < 16 || ms[2] > 17 {
		t.Errorf("time_ms %v, want about [10 0 16]", ms)
	}
	if n := next.Threads()["events"].([]uint64); len(n) != 1 || n[0] != 1 {
		t.Errorf("the next step's events %v, want [1]", n)
	}
}
