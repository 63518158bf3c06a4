package tbs

import (
	"context"
	"math"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"
)

// maxQueue is sysbench's MAX_QUEUE_LEN.
const maxQueue = 131072

// Queue is sysbench's event queue for --rate: arrivals at exponentially distributed
// intervals (a Poisson process of `rate` per second) from `start` to `end` (epoch ms).
type Queue struct {
	mu      sync.Mutex
	rng     *rand.Rand
	meanMs  float64
	next    float64 // the next arrival not yet generated into pending
	end     float64
	pending []float64 // arrived, not taken (due times)
	head    int
	taken   uint64
	dropped uint64
	busy    atomic.Int64
}

func (q *Queue) exp() float64 { return -q.meanMs * math.Log(1-q.rng.Float64()) }

// fill moves arrivals due by t into pending (dropping those beyond maxQueue).
func (q *Queue) fill(t float64) {
	for q.next <= t && q.next < q.end {
		if len(q.pending)-q.head >= maxQueue {
			q.dropped++
		} else {
			q.pending = append(q.pending, q.next)
		}
		q.next += q.exp()
	}
	if q.head > 4096 && q.head*2 > len(q.pending) {
		q.pending = append(q.pending[:0], q.pending[q.head:]...)
		q.head = 0
	}
}

// take returns the due time (epoch ms) of the next event, waiting until it is due, or -1
// when none is due before `deadline` (epoch ms) or the queue's end.
func (q *Queue) take(ctx context.Context, deadline float64) float64 {
	q.mu.Lock()
	t := now()
	q.fill(t)
	var due float64
	if q.head < len(q.pending) {
		due = q.pending[q.head]
		q.head++
	} else {
		if q.next >= q.end || q.next >= deadline {
			// every arrival before the deadline is taken by a VU that asked earlier: this
			// one has nothing to do until then
			q.mu.Unlock()
			sleepUntil(ctx, deadline)
			return -1
		}
		due = q.next
		q.next += q.exp()
	}
	q.taken++
	q.mu.Unlock()
	if !sleepUntil(ctx, due) {
		return -1
	}
	q.busy.Add(1)
	return due
}

// sleepUntil waits until epoch ms t; false when ctx ended first.
func sleepUntil(ctx context.Context, t float64) bool {
	wait := t - now()
	if wait <= 0 {
		return true
	}
	timer := time.NewTimer(time.Duration(wait * 1e6))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// QueueHandle is a VU's view of a Queue (its waits end when k6 stops the VU).
type QueueHandle struct {
	q *Queue
	m *Module
}

// Take returns the due time (epoch ms) of the next event, waiting until it is due, or -1
// when none is due before `deadline` (epoch ms) or the queue's end.
func (h *QueueHandle) Take(deadline float64) float64 {
	ctx := h.m.vu.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return h.q.take(ctx, deadline)
}

// Release marks an event taken by this VU as finished.
func (h *QueueHandle) Release() { h.q.Release() }

// Stats are the queue's figures.
func (h *QueueHandle) Stats() map[string]float64 { return h.q.Stats() }

// Release marks the event taken last by this VU as finished (concurrency).
func (q *Queue) Release() { q.busy.Add(-1) }

// Stats: length (events due, not yet taken), concurrency (events running), taken, dropped.
func (q *Queue) Stats() map[string]float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fill(now())
	return map[string]float64{
		"length": float64(len(q.pending) - q.head), "concurrency": float64(q.busy.Load()),
		"taken": float64(q.taken), "dropped": float64(q.dropped),
	}
}

// Queue returns the process-wide queue called name, made on first use with `rate` events
// per second from start to end (epoch ms); seed 0 seeds from the clock.
func (m *Module) Queue(name string, rate, start, end float64, seed int64) *QueueHandle {
	q := shared(m.r, m.r.queues, name, func() *Queue {
		if seed == 0 {
			seed = time.Now().UnixNano()
		}
		q := &Queue{rng: rand.New(rand.NewSource(seed)), meanMs: 1000 / rate, end: end}
		q.next = start + q.exp()
		return q
	})
	return &QueueHandle{q: q, m: m}
}
