package tbs

// A go-tpc thread on a k6 VU: its connection and go-tpc state (InitThread), the transactions
// it runs back to back (go-tpc's Run, one transaction each), and where they are recorded.

import (
	"context"
	"fmt"
	"time"

	"github.com/pingcap/go-tpc/pkg/workload"
)

const (
	// go-tpc run's --max-measure-latency default (its histograms' top)
	maxMeasureLatency = 16 * time.Second
	// go-tpc prepare's --retry-interval default
	prepareRetryInterval = 10 * time.Second
)

// runWorkloader is the hooked workloader every thread of the process runs (made once).
func (t *Tpcc) runWorkloader() (workload.Workloader, []string, []int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.run == nil {
		w, err := t.workloader(1) // Run does not read the thread count
		if err != nil {
			return nil, nil, nil, err
		}
		// a thread's connection is closed when its step ends (go-tpc's CleanupThread hands it
		// back to the pool): each step starts on fresh ones, as oltp.js's steps
		t.db.SetMaxIdleConns(0)
		if t.names, t.weights, err = hook(w); err != nil {
			return nil, nil, nil, err
		}
		t.run = w
	}
	return t.run, t.names, t.weights, nil
}

// Txns are go-tpc's transactions, in its order, their weights in its mix (of 100) and go-tpc's release.
func (t *Tpcc) Txns() (map[string]any, error) {
	_, names, weights, err := t.runWorkloader()
	if err != nil {
		return nil, err
	}
	return map[string]any{"names": names, "weights": weights, "version": GoTpcVersion}, nil
}

// TpccThread is one go-tpc thread, run by a VU.
type TpccThread struct {
	t       *Tpcc
	w       workload.Workloader
	id      int
	vals    context.Context // InitThread's context: go-tpc's state and this thread
	rec     *TpccRecorder
	step    *TpccStep // nil: not measured (the warm-up)
	stopped string    // the error that stopped the thread (go-tpc without --ignore-error)
	logged  bool
}

// Thread connects go-tpc thread `id` (go-tpc's InitThread: a connection of its own) for the
// VU whose recorder is rec.
func (t *Tpcc) Thread(id int, rec *TpccRecorder) (th *TpccThread, err error) {
	w, _, _, err := t.runWorkloader()
	if err != nil {
		return nil, err
	}
	defer func() { // go-tpc panics when it cannot connect
		if p := recover(); p != nil {
			th, err = nil, fmt.Errorf("go-tpc thread %d cannot connect: %v", id, p)
		}
	}()
	th = &TpccThread{t: t, w: w, id: id, rec: rec}
	th.vals = w.InitThread(context.WithValue(context.Background(), tpccThreadKey{}, th), id)
	return th, nil
}

// Use sets the step the next transactions are measured in (null: none, the warm-up).
func (th *TpccThread) Use(s *TpccStep) {
	th.rec.Flush()
	th.step = s
}

// valuesCtx: the VU's context (k6 cancels it when the VU must stop) with go-tpc's values.
type valuesCtx struct {
	context.Context
	vals context.Context
}

func (c valuesCtx) Value(k any) any { return c.vals.Value(k) }

// Run runs transactions back to back (go-tpc's run loop) until epoch ms `until`, and returns
// how many ended. A failed transaction stops the thread, as go-tpc's threads stop without
// --ignore-error (option ignore_error: it is counted and the thread goes on); Stopped says why.
func (th *TpccThread) Run(until float64) int {
	n := 0
	ctx := valuesCtx{Context: th.rec.m.vu.Context(), vals: th.vals}
	for th.stopped == "" && now() < until && ctx.Err() == nil {
		err := th.once(ctx)
		n++
		if err != nil && ctx.Err() == nil {
			if !th.logged {
				th.logged = true
				th.rec.log(fmt.Sprintf("tpcc thread %d: %v", th.id, err))
			}
			if !th.t.o.IgnoreError {
				th.stopped = err.Error()
			}
		}
	}
	th.rec.Flush()
	return n
}

func (th *TpccThread) once(ctx context.Context) (err error) {
	defer func() { // go-tpc panics when it cannot prepare a statement
		if p := recover(); p != nil {
			err = fmt.Errorf("go-tpc: %v", p)
		}
	}()
	return th.w.Run(ctx, th.id)
}

// Stopped is the error that stopped the thread, or "".
func (th *TpccThread) Stopped() string { return th.stopped }

// ended records one transaction (from the hook, on the thread's goroutine).
func (th *TpccThread) ended(name string, d time.Duration, err error) {
	if err != nil && th.rec.m.vu.Context().Err() != nil {
		return // the VU was stopped inside it: not the server's doing
	}
	if th.step != nil {
		th.step.add(name, d, err)
	}
	th.rec.ended(name, float64(d)/1e6, err)
}

// Close ends go-tpc's thread (its statements and connection: CleanupThread).
func (th *TpccThread) Close() {
	th.rec.Flush()
	func() {
		defer func() { _ = recover() }()
		th.w.CleanupThread(th.vals, th.id)
	}()
}
