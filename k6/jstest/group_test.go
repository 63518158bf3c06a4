package jstest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/grafana/sobek"
)

// Several sysbench threads in one VU (threads_per_vu; k6/ext/tbs group.go, events.js
// runLoops): each thread of a group, on a recording server of its own, sends exactly what the
// same thread (its stream, options and failures) sends alone, errors in the middle included:
// an ignored error (rollback, restart) on one thread and a lost connection (reconnect,
// prepare again, restart) on another, while the third goes on. And every statement a group
// ran reaches the query metrics once.

const groupDriverJS = `
import { parseOptions } from './lib/config.js';
import { makeRand } from './lib/rand.js';
import { nativeLoop, workState } from './lib/sysbench.js';
import { Conn } from './lib/conn.js';
import { runLoops } from './lib/events.js';
import tbs from 'k6/x/tbs';

export function start(env, hosts, streams) {
  const o = parseOptions(env);
  const threads = hosts.map((host, k) => {
    const conn = new Conn({ ...o, mysql_host: host });
    const w = workState(o, makeRand(o, streams[k]), k, hosts.length);
    conn.open();
    conn.connect(w.prepared);
    return { conn, w, loop: nativeLoop(o.workload, conn, w, null) };
  });
  const group = tbs.group(threads.map((t) => t.loop), 2);
  const stepEnd = Date.now() + 10000;
  return {
    // one event per thread, run at once (the clock stands at 0, a batch ends at 1: each thread's
    // first event ends past it; a failed event restarts and ends too)
    one: () => runLoops(threads, group, o, 1, stepEnd, () => 0),
    samples: () => JSON.stringify(__k6.samples.filter((s) => s.metric !== 'oltp_marker')),
  };
}
`

// addServer registers another recording server for harness h and returns its host.
func addServer(t *testing.T) (string, *server) {
	host := fmt.Sprintf("jstest-%d", serverSeq.Add(1))
	s := &server{}
	servers.Store(host, s)
	t.Cleanup(func() { servers.Delete(host) })
	return host, s
}

type groupRun struct {
	h            *H
	one, samples sobek.Callable
}

func startGroup(t *testing.T, h *H, env map[string]string, hosts []string, streams []int) *groupRun {
	t.Helper()
	h.Files["jstest_group.js"] = groupDriverJS
	ns := h.Import("jstest_group.js")
	v, err := h.Call(ns, "start", env, hosts, streams)
	if err != nil {
		t.Fatalf("start %v: %v", env, err)
	}
	o := v.ToObject(h.VM)
	g := &groupRun{h: h}
	g.one, _ = sobek.AssertFunction(o.Get("one"))
	g.samples, _ = sobek.AssertFunction(o.Get("samples"))
	return g
}

func (g *groupRun) call(t *testing.T, f sobek.Callable, args ...sobek.Value) {
	t.Helper()
	v, err := f(sobek.Undefined(), args...)
	if err != nil {
		t.Fatal(err)
	}
	if !v.ToBoolean() {
		t.Fatal("the group's events did not finish")
	}
}

func TestGroupThreadsSendWhatLoneThreadsSend(t *testing.T) {
	const k = 3
	lost := "Error 2013: Lost connection to MySQL server during query"
	deadlock := "Error 1213 (40001): Deadlock found when trying to get lock"
	for _, w := range []string{"oltp_read_write", "oltp_point_select", "oltp_write_only"} {
		for _, failing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/failing=%v", w, failing), func(t *testing.T) {
				env := map[string]string{"workload": w, "rand_seed": "5", "tables": "3", "table_size": "1000",
					"mysql_ignore_errors": "1213,2013"}
				// thread 0 goes on undisturbed; thread 1 hits a deadlock twice, thread 2 loses its connection
				setup := func(i int, s *server) {
					countingAffect(s)
					if failing && i == 1 {
						failAt(s, deadlock, 3, 17)
					}
					if failing && i == 2 {
						failAt(s, lost, 5)
					}
				}
				h := New(t, "")
				hosts := []string{h.Host}
				srv := []*server{h.Server}
				for i := 1; i < k; i++ {
					host, s := addServer(t)
					hosts, srv = append(hosts, host), append(srv, s)
				}
				streams := []int{1048576, 1048577, 1048578}
				g := startGroup(t, h, env, hosts, streams)
				for i, s := range srv {
					s.take() // connecting
					setup(i, s)
				}
				// a fixed number of events per thread, not a time: the same statements however
				// the machine schedules the goroutines (a wall-clock run made this test flaky)
				const events = 40
				for r := 0; r < events; r++ {
					g.call(t, g.one)
				}
				sent := 0
				for i, s := range srv {
					got := s.take()
					if len(got) < events {
						t.Fatalf("thread %d sent %d statements in %d events", i, len(got), events)
					}
					sameAsAlone(t, i, got, env, streams[i:i+1], func(s *server) { setup(i, s) })
					for _, st := range got {
						if st.Kind != "prepare" {
							sent++
						}
					}
				}
				queries, errs, reconnects := groupCounts(t, g)
				if !failing {
					// every statement sent is one query counted, by one thread's flush
					if queries != float64(sent) || errs != 0 || reconnects != 0 {
						t.Errorf("%d statements sent, %v queries counted, %v errors, %v reconnects", sent, queries, errs, reconnects)
					}
					return
				}
				// a failed statement is not a query; the rollback after a deadlock is
				if errs != 2 || reconnects != 1 {
					t.Errorf("%v errors (want 2 deadlocks), %v reconnects (want 1)", errs, reconnects)
				}
				if queries != float64(sent-3) {
					t.Errorf("%d statements sent (3 failed), %v queries counted", sent, queries)
				}
			})
		}
	}
}

// sameAsAlone: thread i of a group sent what the same thread alone sends (one event at a time
// until it has sent as many statements).
func sameAsAlone(t *testing.T, i int, got []Stmt, env map[string]string, stream []int, setup func(*server)) {
	t.Helper()
	lh := New(t, "")
	lone := startGroup(t, lh, env, []string{lh.Host}, stream)
	lh.Server.take()
	setup(lh.Server)
	var want []Stmt
	for e := 0; len(want) < len(got) && e < 1000000; e++ {
		lone.call(t, lone.one)
		want = append(want, lh.Server.take()...)
	}
	if !reflect.DeepEqual(got, want[:len(got)]) {
		for j := range got {
			if !reflect.DeepEqual(got[j], want[j]) {
				t.Fatalf("thread %d statement %d: in the group %v, alone %v", i, j+1, got[j], want[j])
			}
		}
	}
}

// groupCounts: the queries, errors and reconnects the group's samples count (an error other
// than the ignored deadlock 1213 fails the test).
func groupCounts(t *testing.T, g *groupRun) (queries, errs, reconnects float64) {
	t.Helper()
	var samples []struct {
		Metric string
		Value  float64
		Tags   map[string]string
	}
	v, _ := g.samples(sobek.Undefined())
	if err := json.Unmarshal([]byte(v.String()), &samples); err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		switch s.Metric {
		case "oltp_queries":
			queries += s.Value
		case "oltp_errors":
			errs += s.Value
			if s.Tags["code"] != "1213" || s.Tags["ignored"] != "true" {
				t.Errorf("an error sample %v, want only the ignored 1213", s)
			}
		case "oltp_reconnects":
			reconnects += s.Value
		}
	}
	return queries, errs, reconnects
}
