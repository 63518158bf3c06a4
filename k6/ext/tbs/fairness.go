package tbs

// sysbench's "Threads fairness" (sysbench.c, report_cumulative): each thread's events and
// execution time (the sum of its events' latencies) in a step. Each thread's recorder adds to
// its own tally (Recorder.Use registers it with the step's histogram, with the thread's id);
// the summary reads them all (k6/lib/summary.js fairnessOf), so that a thread that stopped
// working, or ran far below its share, is seen in every run instead of hiding in a total.

import (
	"sort"
	"sync"
	"sync/atomic"
)

// threadTally is one thread's events and execution time (ms) in one step. Only its thread's
// recorder writes it; the summary reads it (atomics: a thread may still be ending an event).
type threadTally struct {
	id     int
	events atomic.Uint64
	busy   atomicFloat
}

// threadsOf are the tallies of a step's threads in this process.
type threadsOf struct {
	mu   sync.Mutex
	list []*threadTally
}

// thread registers the tally of thread id (the one already registered for id, when its
// recorder is set to this step again).
func (h *Histogram) thread(id int) *threadTally {
	h.threads.mu.Lock()
	defer h.threads.mu.Unlock()
	for _, t := range h.threads.list {
		if t.id == id {
			return t
		}
	}
	t := &threadTally{id: id}
	h.threads.list = append(h.threads.list, t)
	return t
}

// Threads returns the step's threads of this process by id: {ids, events, time_ms}, each a
// list in the order of ids.
func (h *Histogram) Threads() map[string]any {
	h.threads.mu.Lock()
	list := append([]*threadTally(nil), h.threads.list...)
	h.threads.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	ids := make([]int, len(list))
	events := make([]uint64, len(list))
	busy := make([]float64, len(list))
	for i, t := range list {
		ids[i], events[i], busy[i] = t.id, t.events.Load(), t.busy.load()
	}
	return map[string]any{"ids": ids, "events": events, "time_ms": busy}
}
