package jstest

import (
	"database/sql/driver"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/grafana/sobek"
)

// The native event loop (k6/ext/tbs/loop.go, native_loop=true) against the JavaScript path:
// the same workload, seed, stream and options through events.js runEvents with sysbench.js's
// bound event, and through runLoop with sysbench.js nativeLoop, each on a recording server
// of its own; every statement, its text, its arguments (their Go types too: the driver sends
// an int64 and a float64 differently), the counts by kind that reach the metrics, conn.inTx
// and the random numbers drawn must be the same, event after event, with errors in the
// middle of events (ignored, and a lost connection) as well.

const loopDriverJS = `
import { parseOptions } from './lib/config.js';
import { makeRand } from './lib/rand.js';
import { bindEvent, nativeLoop, workState } from './lib/sysbench.js';
import { Conn } from './lib/conn.js';
import { runEvents, runLoops } from './lib/events.js';
import tbs from 'k6/x/tbs';

export function start(env, threadId, threads, stream, native) {
  const o = parseOptions(env);
  const conn = new Conn(o);
  const w = workState(o, makeRand(o, stream), threadId, threads);
  w.unique = tbs.unique('jstest/unique', 7, 9, 1, 0); // oltp_insert's client-made ids (oltp.js activate)
  conn.open();
  conn.connect(w.prepared);
  const event = bindEvent(o.workload, conn, w);
  const loop = native ? nativeLoop(o.workload, conn, w, null) : null;
  const group = loop ? tbs.group([loop], 200) : null;
  // The clock stands at 0 and a batch ends at 1: both paths run exactly one event (and its
  // restarts), as the first event's end (the real clock) is past the batch's end.
  const clock = () => 0;
  const stepEnd = Date.now() + 5000;
  return {
    native: loop !== null,
    one: () => (group ? runLoops([{ conn, w }], group, o, 1, stepEnd, clock)
      : runEvents(conn, event, w, o, 1, () => Date.now(), stepEnd, clock)),
    // (the outage markers' values are the wall clock: left out)
    state: () => JSON.stringify({ inTx: conn.inTx, n: conn.n, draws: w.rand.draws(),
      samples: __k6.samples.map((s) => (s.metric === 'oltp_marker' ? { ...s, value: 0 } : s)) }),
  };
}
`

type loopRun struct {
	h          *H
	one, state sobek.Callable
	native     bool
}

func startLoopRun(t *testing.T, env map[string]string, native bool) *loopRun {
	t.Helper()
	h := New(t, "")
	e := map[string]string{"mysql_host": h.Host}
	for k, v := range env {
		e[k] = v
	}
	h.Files["jstest_loop.js"] = loopDriverJS
	ns := h.Import("jstest_loop.js")
	v, err := h.Call(ns, "start", e, 2, 4, 1048576+2, native)
	if err != nil {
		t.Fatalf("start %v: %v", env, err)
	}
	o := v.ToObject(h.VM)
	one, _ := sobek.AssertFunction(o.Get("one"))
	state, _ := sobek.AssertFunction(o.Get("state"))
	h.Server.take() // connecting: the same code on both paths
	return &loopRun{h: h, one: one, state: state, native: o.Get("native").ToBoolean()}
}

// event runs one event and returns what it sent, and the state after it.
func (r *loopRun) event(t *testing.T) ([]Stmt, string) {
	t.Helper()
	v, err := r.one(sobek.Undefined())
	if err != nil {
		t.Fatal(err)
	}
	if !v.ToBoolean() {
		t.Fatalf("the event did not finish (native %v)", r.native)
	}
	s, err := r.state(sobek.Undefined())
	if err != nil {
		t.Fatal(err)
	}
	return r.h.Server.take(), s.String()
}

// loopWorkloads are the workloads the native loop runs: every one but bulk_insert (select_random_*
// as thread 2 of 4: its own slice of k).
var loopWorkloads = []string{"oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only",
	"oltp_update_index", "oltp_update_non_index", "oltp_insert", "oltp_delete", "select_random_points", "select_random_ranges"}

// every 5th write changes no rows (a write counted as other, as a DELETE that found nothing)
func countingAffect(s *server) {
	n := 0
	s.affect = func(string) int64 {
		n++
		if n%5 == 0 {
			return 0
		}
		return 1
	}
}

// failAt makes the statements numbered in `at` (1-based, counted over the run) fail with msg.
func failAt(s *server, msg string, at ...int) {
	n := 0
	s.failure = func(string) error {
		n++
		for _, a := range at {
			if n == a {
				return fmt.Errorf("%s", msg)
			}
		}
		return nil
	}
}

// failBadConnAt makes the statements numbered in `at` fail with driver.ErrBadConn (the driver
// is sure nothing was sent): database/sql retries such a statement on a new connection, on the
// JavaScript path through the pool and on the native loop's batch (k6/ext/tbs batch.go) by
// giving its connection back and sending the statement through the pool.
func failBadConnAt(s *server, at ...int) {
	n := 0
	s.failure = func(string) error {
		n++
		for _, a := range at {
			if n == a {
				return driver.ErrBadConn
			}
		}
		return nil
	}
}

func compareLoop(t *testing.T, env map[string]string, events int, setup func(*server)) {
	t.Helper()
	js := startLoopRun(t, env, false)
	gol := startLoopRun(t, env, true)
	if !gol.native {
		t.Fatalf("%v: nativeLoop gave no loop", env)
	}
	if setup != nil {
		setup(js.h.Server)
		setup(gol.h.Server)
	}
	sent, drawn := 0, false
	for e := 1; e <= events; e++ {
		want, wantState := js.event(t)
		got, gotState := gol.event(t)
		sent += len(want)
		drawn = drawn || !strings.Contains(wantState, `"draws":0,`)
		if !reflect.DeepEqual(got, want) { // raw: the arguments' Go types too
			n := min(len(got), len(want))
			for i := 0; i < n; i++ {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("%v event %d statement %d:\n go %v (%T...)\n js %v", env, e, i+1, got[i], got[i].Args, want[i])
				}
			}
			t.Fatalf("%v event %d: go sent %d statements, js %d:\n go %v\n js %v", env, e, len(got), len(want), got, want)
		}
		if gotState != wantState {
			t.Fatalf("%v event %d: state after it:\n go %s\n js %s", env, e, gotState, wantState)
		}
	}
	if sent == 0 && !drawn { // (a count of 0 sends nothing but still draws its table)
		t.Fatalf("%v: nothing sent or drawn, nothing compared", env)
	}
}

func TestNativeLoopSendsWhatTheJavaScriptSends(t *testing.T) {
	for _, w := range loopWorkloads {
		for i, set := range optionSets {
			env := map[string]string{"workload": w, "rand_seed": "7", "tables": "3", "table_size": "1000"}
			for k, v := range set {
				env[k] = v
			}
			t.Run(fmt.Sprintf("%s/%d", w, i), func(t *testing.T) { compareLoop(t, env, 25, countingAffect) })
		}
	}
}

func TestNativeLoopHandlesErrorsAsTheJavaScript(t *testing.T) {
	for _, w := range loopWorkloads {
		for _, c := range []struct{ name, msg string }{
			{"ignored", "Error 1213 (40001): Deadlock found when trying to get lock"},
			{"lost", "Error 2013: Lost connection to MySQL server during query"},
		} {
			env := map[string]string{"workload": w, "rand_seed": "11", "tables": "2", "table_size": "500",
				"mysql_ignore_errors": "1213,2013"}
			t.Run(w+"/"+c.name, func(t *testing.T) {
				compareLoop(t, env, 12, func(s *server) { countingAffect(s); failAt(s, c.msg, 2, 9, 10, 31) })
			})
		}
	}
}

// TestNativeLoopRetriesABadConnectionAsTheJavaScript: a statement that fails with
// driver.ErrBadConn in the middle of the loop's batch is sent again on a new connection, as
// database/sql does for the JavaScript path (twice in a row too: 9 and 10), and the events go on.
func TestNativeLoopRetriesABadConnectionAsTheJavaScript(t *testing.T) {
	for _, w := range loopWorkloads {
		env := map[string]string{"workload": w, "rand_seed": "13", "tables": "2", "table_size": "500"}
		t.Run(w, func(t *testing.T) {
			compareLoop(t, env, 12, func(s *server) { countingAffect(s); failBadConnAt(s, 2, 9, 10, 31) })
		})
	}
}

func TestNativeLoopIsOnlyForWhatItRuns(t *testing.T) {
	for _, env := range []map[string]string{
		{"workload": "bulk_insert"}, {"workload": "oltp_read_only", "rate": "10"},
	} {
		r := startLoopRun(t, env, true)
		if r.native {
			t.Errorf("%v: nativeLoop made a loop; the JavaScript path runs it", env)
		}
	}
	if !strings.Contains(loopDriverJS, "nativeLoop") {
		t.Fatal("the driver does not use nativeLoop")
	}
}
