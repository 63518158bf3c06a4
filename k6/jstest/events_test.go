package jstest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/grafana/sobek"
)

// driverJS is a VU's step, as oltp.js makes it (its activate()), without k6's runner: the
// options, the random stream, the workload state, the connection, its prepared statements
// and the bound event. sysbench.rand.unique() is a plain sequence here (k6/x/tbs's Unique
// has its own tests).
const driverJS = `
import { parseOptions } from './lib/config.js';
import { makeRand } from './lib/rand.js';
import { bindEvent, workState, flushBulk } from './lib/sysbench.js';
import { Conn, READS, WRITES, OTHERS } from './lib/conn.js';
import { runEvent } from './lib/events.js';

export function start(env, threadId, threads, stream, bulkFrom) {
  const o = parseOptions(env);
  const conn = new Conn(o);
  const w = workState(o, makeRand(o, stream), threadId, threads);
  let u = 0;
  w.unique = { next: () => UNIQUE_BASE + (u++) };
  if (bulkFrom) w.bulkSize = bulkFrom; // bulk_insert after earlier ids (oltp.js reads MAX(id))
  // what conn.flush() sent to the metrics (flushBulk flushes before its statement), so that
  // counts() is everything counted, sent or not
  const sent = [0, 0, 0];
  const flush = conn.flush.bind(conn);
  conn.flush = () => { sent[0] += conn.n[READS]; sent[1] += conn.n[WRITES]; sent[2] += conn.n[OTHERS]; flush(); };
  conn.open();
  conn.connect(w.prepared);
  const event = bindEvent(o.workload, conn, w);
  return {
    options: o,
    event,
    flush: () => flushBulk(conn, w),
    counts: () => [conn.n[READS] + sent[0], conn.n[WRITES] + sent[1], conn.n[OTHERS] + sent[2]],
    // one event with sysbench's error handling (events.js): its end (the clock) or -1
    run: () => runEvent(conn, event, w, o, Date.now(), () => Date.now(), Date.now() + 2000),
  };
}
`

const uniqueBase = 3000000000

// step is a running VU step in a harness.
type step struct {
	h      *H
	o      map[string]any
	event  sobek.Callable
	flush  sobek.Callable
	counts sobek.Callable
	run    sobek.Callable
	setup  []Stmt // what connecting sent
}

func startStep(t testing.TB, h *H, env map[string]string, tid, threads int, stream uint32, bulkFrom ...int64) *step {
	t.Helper()
	if _, ok := env["mysql_host"]; !ok {
		env["mysql_host"] = h.Host // the recording server
	}
	h.Files["jstest_driver.js"] = strings.Replace(driverJS, "UNIQUE_BASE", fmt.Sprint(uniqueBase), 1)
	ns := h.Import("jstest_driver.js")
	from := int64(0)
	if len(bulkFrom) > 0 {
		from = bulkFrom[0]
	}
	v, err := h.Call(ns, "start", env, tid, threads, stream, from)
	if err != nil {
		t.Fatalf("start %v: %v", env, err)
	}
	obj := v.ToObject(h.VM)
	fn := func(k string) sobek.Callable {
		f, ok := sobek.AssertFunction(obj.Get(k))
		if !ok {
			t.Fatalf("no %s", k)
		}
		return f
	}
	return &step{h: h, o: obj.Get("options").Export().(map[string]any), event: fn("event"), flush: fn("flush"),
		counts: fn("counts"), run: fn("run"), setup: h.Server.take()}
}

func (s *step) call(t testing.TB, f sobek.Callable) []Stmt {
	t.Helper()
	if _, err := f(sobek.Undefined()); err != nil {
		t.Fatal(err)
	}
	return s.h.Server.take()
}

// norm makes a statement comparable: numbers as int64 when whole (sobek exports a JS number
// as int64 or float64 depending on how it was made).
func norm(ss []Stmt) []Stmt {
	out := make([]Stmt, len(ss))
	for i, s := range ss {
		n := Stmt{Kind: s.Kind, Query: s.Query}
		for _, a := range s.Args {
			if f, ok := a.(float64); ok && f == math.Trunc(f) {
				a = int64(f)
			}
			n.Args = append(n.Args, a)
		}
		out[i] = n
	}
	return out
}

func sameStmts(t *testing.T, what string, got, want []Stmt) {
	t.Helper()
	got, want = norm(got), norm(want)
	if reflect.DeepEqual(got, want) {
		return
	}
	n := min(len(got), len(want))
	for i := 0; i < n; i++ {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%s: statement %d of %d:\n got  %v\n want %v (sysbench)", what, i+1, len(want), got[i], want[i])
		}
	}
	t.Fatalf("%s: %d statements, sysbench sends %d:\n got  %v\n want %v", what, len(got), len(want), got, want)
}

// optionSets: the option sets each workload runs with (beside rand_seed, tables and
// table_size): the defaults, counts and switches changed, counts of 0, client-made ids.
var optionSets = []map[string]string{
	{},
	{"rand_type": "uniform", "point_selects": "3", "index_updates": "2", "non_index_updates": "2", "delete_inserts": "2", "range_size": "7",
		"random_points": "4", "number_of_ranges": "3", "delta": "9"},
	{"skip_trx": "on", "range_selects": "off", "rand_type": "gaussian"},
	{"simple_ranges": "0", "sum_ranges": "2", "non_index_updates": "0", "delete_inserts": "0", "rand_type": "pareto"},
	{"auto_inc": "off", "rand_type": "zipfian"},
}

func TestEveryWorkloadSendsSysbenchsStatements(t *testing.T) {
	h := New(t, "")
	c, names := readContract(t, h)
	for _, w := range names {
		sent := 0
		for i, set := range optionSets {
			t.Run(fmt.Sprintf("%s/%d", w, i), func(t *testing.T) {
				sent += checkWorkload(t, h, w, c.Workloads[w], set)
			})
		}
		if sent == 0 {
			t.Errorf("%s: no option set sent a statement: nothing was compared", w)
		}
	}
}

// checkWorkload runs thread 2 of 4 of workload w for some events and compares each event's
// statements with the model's, the prepared statements with sysbench's prepare_statements()
// and the counts by kind with the statements sent.
func checkWorkload(t *testing.T, h *H, w string, decl workloadDecl, set map[string]string) int {
	env := map[string]string{"workload": w, "rand_seed": "7", "tables": "3", "table_size": "1000"}
	if decl.SingleTable {
		env["tables"] = "1"
	}
	for k, v := range set {
		env[k] = v
	}
	const tid, threads, stream, events = 2, 4, 1048576 + 2, 6
	s := startStep(t, h, env, tid, threads, stream)
	u := int64(uniqueBase)
	m := &model{o: s.o, decl: decl, r: newRefRand(t, h, s.o, stream), tid: tid, threads: threads,
		unique: func() int64 { u++; return u - 1 }}

	// connecting: the prepared statements are sysbench's (those with a count of 0 it
	// prepares and never runs are left out), or a first query when there are none
	want := m.prepared()
	var prepared []string
	for _, st := range s.setup {
		if st.Kind == "prepare" {
			prepared = append(prepared, st.Query)
			if !want[st.Query] {
				t.Errorf("prepares %q, which sysbench does not", st.Query)
			}
		}
	}
	if len(prepared) == 0 && (len(s.setup) != 1 || s.setup[0].Query != "SELECT 1") {
		t.Errorf("connecting without statements to prepare sends %v, want one SELECT 1", s.setup)
	}
	seen := map[string]bool{}
	for _, p := range prepared {
		if seen[p] {
			t.Errorf("prepares %q twice", p)
		}
		seen[p] = true
	}

	var all []Stmt
	for e := 0; e < events; e++ {
		got := s.call(t, s.event)
		sameStmts(t, fmt.Sprintf("%s %v event %d", w, set, e+1), got, m.event(t))
		all = append(all, got...)
	}
	if got, want := s.call(t, s.flush), m.bulkFlush(); len(got)+len(want) > 0 {
		sameStmts(t, w+" at the end of the step", got, want)
		all = append(all, got...)
	}
	// every statement with arguments was prepared on the connection, as sysbench prepares them
	var reads, writes, others float64
	for _, st := range all {
		if len(st.Args) > 0 && !seen[st.Query] {
			t.Errorf("runs %q with arguments without preparing it", st.Query)
		}
		switch {
		case strings.HasPrefix(st.Query, "SELECT"):
			reads++
		case st.Query == "BEGIN" || st.Query == "COMMIT":
			others++
		default:
			writes++ // the recording server says every write changed 1 row
		}
	}
	// the counts by kind: a SELECT is a read, a statement that changed rows a write, the rest other
	v, err := s.counts(sobek.Undefined())
	if err != nil {
		t.Fatal(err)
	}
	if got := toFloats(v.Export()); !reflect.DeepEqual(got, []float64{reads, writes, others}) {
		t.Errorf("counted %v (read, write, other), the statements were %v", got, []float64{reads, writes, others})
	}
	return len(all)
}

func toFloats(v any) []float64 {
	var out []float64
	for _, x := range v.([]any) {
		out = append(out, toFloat(x))
	}
	return out
}

// A write that changed no row is counted as other, as sysbench's driver counts it.
func TestAWriteThatChangesNothingIsOther(t *testing.T) {
	h := New(t, "")
	h.Server.affect = func(string) int64 { return 0 }
	s := startStep(t, h, map[string]string{"workload": "oltp_write_only", "rand_seed": "3"}, 0, 1, 0)
	got := s.call(t, s.event)
	v, _ := s.counts(sobek.Undefined())
	if c := toFloats(v.Export()); c[0] != 0 || c[1] != 0 || c[2] != float64(len(got)) {
		t.Errorf("counts %v after %d statements that changed nothing", c, len(got))
	}
}

// luaFunc: the text of a script's top-level function `name` (up to its `end` at the line's
// start); "" when it has none.
func luaFunc(src, name string) string {
	i := strings.Index(src, "\nfunction "+name+"(")
	if i < 0 {
		return ""
	}
	body := src[i:]
	if j := strings.Index(body[1:], "\nend"); j >= 0 {
		body = body[:j+1]
	}
	return body
}

// Where sysbench 1.0.20's Lua scripts are installed (apt's sysbench: /usr/share/sysbench, or
// TBS_SYSBENCH_LUA), each declared workload's event is its script's event(): BEGIN/COMMIT
// when it calls begin()/commit(), and its execute_* calls in order (range_selects: the four
// range queries); an event of its own calls none.
func TestDeclaredEventsAreSysbenchsLua(t *testing.T) {
	dir := os.Getenv("TBS_SYSBENCH_LUA")
	if dir == "" {
		dir = "/usr/share/sysbench"
	}
	if _, err := os.Stat(filepath.Join(dir, "oltp_common.lua")); err != nil {
		t.Skipf("sysbench 1.0.20's Lua scripts are not installed in %s (apt-get install sysbench, or TBS_SYSBENCH_LUA)", dir)
	}
	h := New(t, "")
	c, names := readContract(t, h)
	call := regexp.MustCompile(`\b(begin|commit|execute_\w+)\(`)
	setOpt := regexp.MustCompile(`(?m)^\s*sysbench\.opt\.(\w+)\s*=\s*(\d+)`)
	own := map[string]bool{"delete": true, "insert": true, "random_points": true, "random_ranges": true, "bulk_insert": true}
	checked := 0
	for _, w := range names {
		b, err := os.ReadFile(filepath.Join(dir, w+".lua"))
		if err != nil {
			t.Logf("%s: not one of sysbench's scripts (%v)", w, err)
			continue
		}
		src := string(b)
		body := luaFunc(src, "event")
		if body == "" {
			t.Fatalf("%s.lua has no event()", w)
		}
		var calls []string
		for _, m := range call.FindAllStringSubmatch(body, -1) {
			calls = append(calls, m[1])
		}
		d := c.Workloads[w]
		var want []string
		if d.Trx {
			want = append(want, "begin")
		}
		for _, p := range d.Event {
			switch {
			case p == "range_selects":
				want = append(want, "execute_simple_ranges", "execute_sum_ranges", "execute_order_ranges", "execute_distinct_ranges")
			case own[p]:
			default:
				want = append(want, "execute_"+p)
			}
		}
		if d.Trx {
			want = append(want, "commit")
		}
		if strings.Join(calls, " ") != strings.Join(want, " ") {
			t.Errorf("%s: sysbench's event() calls %v, k6/contract.json declares %v", w, calls, want)
		}
		// the counts a script fixes (oltp_point_select.lua: sysbench.opt.point_selects=1) are
		// the declared counts
		fixed := map[string]int{}
		for _, m := range setOpt.FindAllStringSubmatch(luaFunc(src, "prepare_statements"), -1) {
			n, _ := strconv.Atoi(m[2])
			fixed[m[1]] = n
		}
		if len(fixed)+len(d.Counts) > 0 && !reflect.DeepEqual(fixed, d.Counts) {
			t.Errorf("%s: sysbench's script fixes the counts %v, k6/contract.json declares %v", w, fixed, d.Counts)
		}
		checked++
	}
	if checked < 11 {
		t.Errorf("compared %d workloads with sysbench's Lua, want all 11 of sysbench 1.0.20's", checked)
	}
	sort.Strings(names)
}

// bulk_insert sends its statement when the next row would not fit in sysbench's 512 KiB
// buffer with its comma and the terminating NUL. The rows' ids start after a first id
// (oltp.js: after MAX(id)) chosen so that the rows reach the buffer's edge to the byte: in one
// case a row fills it but for the NUL (sysbench takes it: a rule with a byte too many would
// not), in the other a row fills it without room for the NUL (sysbench sends the statement
// first: a rule without the NUL would take the row). The events up to the first two
// statements are compared with the model's.
func TestBulkInsertSplitsAtSysbenchsBuffer(t *testing.T) {
	h := New(t, "")
	c, _ := readContract(t, h)
	rowLen := func(id int64) int { return 2*len(strconv.FormatInt(id, 10)) + 3 } // (id,id)
	// sum[i]: the rows 1..i with a comma each
	const maxFrom = 200000
	sum := make([]int, maxFrom+bulkBuffer/8)
	for i := 1; i < len(sum); i++ {
		sum[i] = sum[i-1] + rowLen(int64(i)) + 1
	}
	// rows with their commas are odd: the head's length decides which edge can be reached
	for _, tc := range []struct {
		tid, threads int
		fill         int // the bytes rows and commas reach: the buffer less the head (and the NUL)
		edge         string
	}{
		{1, 2, bulkBuffer - len("INSERT INTO sbtest2 VALUES") - 1, "the NUL's byte left"},
		{9, 10, bulkBuffer - len("INSERT INTO sbtest10 VALUES"), "no byte left for the NUL"},
	} {
		var from int64 = -1
		for s := 0; s < maxFrom && from < 0; s++ {
			want := sum[s] + tc.fill + 1 // rows s+1..k and their commas, less the first comma
			if k := sort.SearchInts(sum, want); k < len(sum) && sum[k] == want {
				from = int64(s)
			}
		}
		if from < 0 {
			t.Fatalf("%s: no start id reaches the edge", tc.edge)
		}
		s := startStep(t, h, map[string]string{"workload": "bulk_insert"}, tc.tid, tc.threads, 0, from)
		m := &model{o: s.o, decl: c.Workloads["bulk_insert"], r: newRefRand(t, h, s.o, 0), tid: int64(tc.tid),
			threads: int64(tc.threads), cursize: from}
		sent := 0
		for e := 1; sent < 2; e++ {
			if e > 200000 {
				t.Fatalf("%d events sent %d statements", e, sent)
			}
			got, want := s.call(t, s.event), m.event(t)
			if len(got)+len(want) > 0 {
				sameStmts(t, fmt.Sprintf("bulk_insert, %s: event %d", tc.edge, e), got, want)
				sent++
			}
		}
	}
}

// A bulk statement is counted (a write), and sent to the metrics with everything counted
// before it, before it goes out: a statement k6 interrupts at the end of a step's grace still
// runs to its end on the server, and its rows must not be left uncounted (test_trust's
// bulk_insert check saw more rows than counts on a starved server). Here the server fails the
// statement: the write is in the metrics all the same, and nothing is left pending.
func TestBulkStatementIsCountedBeforeItGoesOut(t *testing.T) {
	h := New(t, "")
	s := startStep(t, h, map[string]string{"workload": "bulk_insert"}, 0, 1, 0)
	for e := 0; e < 3; e++ {
		if got := s.call(t, s.event); len(got) != 0 {
			t.Fatalf("event %d sent %v: three rows fit one statement", e+1, queries(got))
		}
	}
	if w := samples(t, h, "oltp_queries"); len(w) != 0 {
		t.Fatalf("counted before any statement: %v", w)
	}
	failOnce(h, 1, fmt.Errorf("the statement is interrupted"))
	if _, err := s.flush(sobek.Undefined()); err == nil {
		t.Fatal("the failed statement did not throw")
	}
	if got := queries(h.Server.take()); len(got) != 1 || !strings.HasPrefix(got[0], "exec INSERT INTO sbtest1 VALUES(1,1),(2,2),(3,3)") {
		t.Fatalf("sent %v, want the three rows' INSERT", got)
	}
	w := samples(t, h, "oltp_queries")
	if len(w) != 1 || w[0]["kind"] != "write" {
		t.Fatalf("metrics after the failed statement: %v, want one write", w)
	}
	v, err := s.counts(sobek.Undefined())
	if err != nil {
		t.Fatal(err)
	}
	if got := toFloats(v.Export()); !reflect.DeepEqual(got, []float64{0, 1, 0}) {
		t.Fatalf("counted %v (read, write, other), want the one write", got)
	}
}
