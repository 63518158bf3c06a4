package tbs

// A VU's sysbench threads on the native loop (oltp.js's threads_per_vu): each thread has its
// own loop (loop.go: its connection, random stream, recorder and Conn), and the group runs
// them at once, one goroutine per thread, so that one VU (one JavaScript runtime: 0.4 MiB and
// 1.5-2 ms of init) serves several threads. A group of one runs its loop on the calling
// goroutine, as a lone loop always ran.
//
// k6/lib/events.js runLoops drives it. from(t) sets every thread's clock. run(until) starts
// each thread that is behind `until` on its events, each for one flush interval (flush_ms
// after its clock) or until `until`, and returns the first thread that stops: JavaScript
// flushes that thread's counts and latencies, or, when it failed (error(k)), handles its error
// as for one thread (failed(): the ignore list, a rollback, a reconnect); the next run()
// restarts it, a failed event from its start. The VU's other threads go on meanwhile: no
// thread waits for another except at `until` (the end of the warm-up or of the step), so a
// slow event holds up only its own thread, as in sysbench. stop() ends every thread at its
// next event's end and waits for them (before the VU gives up its step, or throws).
//
// Only the JavaScript goroutine touches JavaScript values or a thread's recorder batch: a
// thread's counts reach its conn.n (loop.sync) when it has stopped, never from its goroutine.

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/grafana/sobek"
)

type groupThread struct {
	l       *loop
	t       float64 // the thread's clock: its last event's end, or a failed event's start
	err     error   // the error its last run ended with, until JavaScript has taken it
	running bool
}

type group struct {
	th      []*groupThread
	flushMs float64
	done    chan int // the index of a thread whose run ended (room for every thread)
	running int
	stop    atomic.Bool
}

// ended takes thread i's result on the JavaScript goroutine.
func (g *group) ended(i int) int {
	th := g.th[i]
	th.running = false
	g.running--
	th.l.sync()
	return i
}

// run starts every thread that is behind `until` (and has no error JavaScript has not taken)
// on its events until min(until, its clock + flush_ms), and returns the first thread that
// stops, or -1 when every thread's last event ended at or after `until`.
func (g *group) run(until float64) int {
	g.stop.Store(false)
	if len(g.th) == 1 { // one thread: no goroutine, as a lone loop ran
		th := g.th[0]
		if th.t >= until && th.err == nil {
			return -1
		}
		th.err = nil
		th.t, th.err = th.l.run(min(until, th.t+g.flushMs), th.t)
		th.l.sync()
		return 0
	}
	for i, th := range g.th {
		if !th.running && th.t < until && th.err == nil {
			th.running = true
			g.running++
			go func(i int, th *groupThread, to float64) {
				th.t, th.err = th.l.run(to, th.t)
				g.done <- i
			}(i, th, min(until, th.t+g.flushMs))
		}
	}
	if g.running == 0 {
		return -1
	}
	return g.ended(<-g.done)
}

// halt ends every running thread at its next event's end and waits for it; their errors are
// dropped (the VU is giving up its step).
func (g *group) halt() {
	g.stop.Store(true)
	for g.running > 0 {
		g.ended(<-g.done)
	}
	for _, th := range g.th {
		th.err = nil
	}
}

// Group makes the group of a VU's threads from their loops (loop(), one per thread, in the
// order of their thread ids); each runs flushMs (flush_ms) at a time.
func (m *Module) Group(loops sobek.Value, flushMs float64) (*sobek.Object, error) {
	rt := m.vu.Runtime()
	if loops == nil || sobek.IsNull(loops) || sobek.IsUndefined(loops) {
		return nil, fmt.Errorf("k6/x/tbs: group needs an array of loop() objects")
	}
	if !(flushMs > 0) {
		return nil, fmt.Errorf("k6/x/tbs: group needs a flush interval > 0 ms, got %v", flushMs)
	}
	a := loops.ToObject(rt)
	n := int(a.Get("length").ToInteger())
	if n < 1 {
		return nil, fmt.Errorf("k6/x/tbs: group needs at least one loop() object, got %d", n)
	}
	g := &group{done: make(chan int, n), flushMs: flushMs}
	for i := 0; i < n; i++ {
		l, ok := goValue[*loop](a.Get(strconv.Itoa(i)), "_loop")
		if !ok {
			return nil, fmt.Errorf("k6/x/tbs: group: element %d is not a loop() object", i)
		}
		if n > 1 {
			l.stop = &g.stop
		}
		g.th = append(g.th, &groupThread{l: l})
	}
	o := rt.NewObject()
	// from(t): every thread's next event starts at t (epoch ms)
	err := o.Set("from", func(call sobek.FunctionCall) sobek.Value {
		t := call.Argument(0).ToFloat()
		for _, th := range g.th {
			th.t, th.err = t, nil
		}
		return sobek.Undefined()
	})
	if err == nil {
		err = o.Set("run", func(call sobek.FunctionCall) sobek.Value {
			return rt.ToValue(g.run(call.Argument(0).ToFloat()))
		})
	}
	if err == nil {
		// error(k): the error (a GoError) thread k's last run ended with, or null; taken once
		err = o.Set("error", func(call sobek.FunctionCall) sobek.Value {
			k := int(call.Argument(0).ToInteger())
			if k < 0 || k >= len(g.th) || g.th[k].err == nil {
				return sobek.Null()
			}
			e := g.th[k].err
			g.th[k].err = nil
			return rt.NewGoError(e)
		})
	}
	if err == nil {
		err = o.Set("stop", func(sobek.FunctionCall) sobek.Value {
			g.halt()
			return sobek.Undefined()
		})
	}
	return o, err
}
