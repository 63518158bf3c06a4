package tbs

import (
	"context"
	"sync"
	"time"
)

// Barrier is sysbench's start barrier for one thread step of this process: the step's load
// begins when all its parties (the step's VUs, each once connected and prepared, or given up;
// and the statements VU once it has taken its snapshot) have arrived, as sysbench's threads
// wait for each other after thread_init, instead of after a fixed connect phase. Parties are
// fixed by the first VU that makes it.
type Barrier struct {
	mu      sync.Mutex
	parties int64
	arrived int64
	at      float64 // epoch ms (tbs clock) when the last party arrived; 0 until then
	done    chan struct{}
}

// arrive counts one party; the last one releases every waiter.
func (b *Barrier) arrive() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.arrived++
	if b.arrived == b.parties {
		b.at = now()
		close(b.done)
	}
}

// wait returns the release time (epoch ms), or `deadline` when the parties have not all
// arrived by then, or -1 when ctx ended first.
func (b *Barrier) wait(ctx context.Context, deadline float64) float64 {
	b.mu.Lock()
	at := b.at
	b.mu.Unlock()
	if at > 0 {
		return at
	}
	left := deadline - now()
	if left <= 0 {
		return deadline
	}
	timer := time.NewTimer(time.Duration(left * 1e6))
	defer timer.Stop()
	select {
	case <-b.done:
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.at
	case <-timer.C:
		return deadline
	case <-ctx.Done():
		return -1
	}
}

// BarrierHandle is a VU's view of a Barrier (its wait ends when k6 stops the VU).
type BarrierHandle struct {
	b *Barrier
	m *Module
}

// Arrive counts this VU as arrived.
func (h *BarrierHandle) Arrive() { h.b.arrive() }

// Wait returns when the load begins (epoch ms): the release time, or `deadline` when not all
// parties arrived by then; -1 when k6 stopped the VU.
func (h *BarrierHandle) Wait(deadline float64) float64 {
	ctx := h.m.vu.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return h.b.wait(ctx, deadline)
}

// Arrived returns how many parties have arrived.
func (h *BarrierHandle) Arrived() int64 {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	return h.b.arrived
}

// Barrier returns the process-wide barrier called name, made on first use for `parties` parties.
func (m *Module) Barrier(name string, parties int64) *BarrierHandle {
	b := shared(m.r, m.r.barriers, name, func() *Barrier {
		return &Barrier{parties: parties, done: make(chan struct{})}
	})
	return &BarrierHandle{b: b, m: m}
}
