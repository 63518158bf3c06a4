package tbs

// The native event loop (oltp.js's native_loop option, on by default): a VU's events of every
// workload but bulk_insert (k6/contract.json's parts: point_selects, range_selects,
// index_updates, non_index_updates and delete_inserts, with or without BEGIN/COMMIT; delete,
// insert, random_points and random_ranges) run back to back in Go, without a JavaScript call
// per statement or per event.
//
// JavaScript declares the workload once per sysbench thread and step (k6/lib/sysbench.js
// nativeLoop: the parts, the counts, the statement texts, built there so the SQL has one
// source); a VU's threads (one, or threads_per_vu) go into one group (group.go), whose run()
// k6/lib/events.js runLoops calls once per flush interval. What the loop does is what
// sysbench.js's bound event does, in the same order: the same random stream (rand.go, the
// VU's own Rand) draws the table, then per statement its ids and strings, with a part whose
// count is 0 still drawing its table; the statements go to the VU's Execer's pool, a run()
// at a time on the connection the pool holds (batch.go: the same connection, prepared
// statements, context and arguments: whole numbers as int64, as sobek exports them);
// queries are counted by kind as the JavaScript counts them (reads; writes when rows changed,
// else other; BEGIN and COMMIT other) and each event's latency goes to the VU's Recorder.
//
// On an error the group adds the thread's counts to its conn.n, sets conn.inTx as the
// JavaScript would have left it, and returns the error as exec throws it (a GoError with the
// driver's message); events.js's failed() handles it as for the JavaScript path and the next
// run() restarts the event from its start.

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/grafana/sobek"
)

// LoopSpec is the workload of one VU's step, as JavaScript declares it.
type LoopSpec struct {
	Parts        []string            `js:"parts"`         // the workload's event parts, in order
	Trx          bool                `js:"trx"`           // BEGIN/COMMIT around them (the workload's trx and not skip_trx)
	Counts       map[string]int      `js:"counts"`        // statements per event, by option name
	Tables       float64             `js:"tables"`        // tables
	TableSize    float64             `js:"table_size"`    // table_size
	RangeSize    float64             `js:"range_size"`    // range_size
	RangeSelects bool                `js:"range_selects"` // range_selects
	Texts        map[string][]string `js:"texts"`         // statement key -> its text for tables 1..tables
	CTemplate    string              `js:"c_template"`    // sysbench's c string template
	PadTemplate  string              `js:"pad_template"`  // sysbench's pad string template
	// select_random_*: the one statement, its count of points or ranges, the ranges' delta and
	// the thread's slice of k values [rmin, rmax] (sysbench.js workState)
	RandomSQL    string  `js:"random_sql"`
	RandomPoints int     `js:"random_points"`
	Ranges       int     `js:"number_of_ranges"`
	Delta        float64 `js:"delta"`
	RMin         float64 `js:"rmin"`
	RMax         float64 `js:"rmax"`
	// oltp_insert: client-made ids from the run's unique sequence unless auto_inc
	AutoInc bool    `js:"auto_inc"`
	Unique  *Unique `js:"unique"`
}

// the indices of the query counts in conn.n (k6/lib/conn.js READS, WRITES, OTHERS, TXS)
const (
	nReads = iota
	nWrites
	nOthers
	nTxs
)

type loop struct {
	r     *Rand
	e     *Execer
	rec   *Recorder // nil: the clock only (tests)
	b     batch     // the statements of one run() (batch.go)
	trx   bool
	parts []func() error
	n     [4]float64 // counts since the last return to JavaScript
	inTx  bool
	stop  *atomic.Bool // set: end run() at the next event's end (group.go's stop; nil: never)
	sync  func()       // adds n to the thread's conn.n and sets its conn.inTx (the JS goroutine only)
}

// texts returns key's statement texts, indexed by table (index 0 unused).
func (s *LoopSpec) texts(key string) ([]string, error) {
	t, ok := s.Texts[key]
	if !ok || float64(len(t)) != s.Tables {
		return nil, fmt.Errorf("k6/x/tbs: loop: %d texts for %s, want one per table (%v)", len(t), key, s.Tables)
	}
	return append([]string{""}, t...), nil
}

func (l *loop) table(tables float64) int { return int(l.r.Uniform(1, tables)) }

// read runs a statement that returns rows (a read).
func (l *loop) read(q string, args ...any) error {
	if _, err := l.b.exec(q, txNone, args...); err != nil {
		return err
	}
	l.n[nReads]++
	return nil
}

// write runs a statement counted as a write when it changed rows, else as other.
func (l *loop) write(q string, args ...any) error {
	res, err := l.b.exec(q, txNone, args...)
	if err != nil {
		return err
	}
	rows, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if rows > 0 {
		l.n[nWrites]++
	} else {
		l.n[nOthers]++
	}
	return nil
}

// simple makes the function of a part of one statement list (key): run gets the texts, the
// event's table (drawn first, as sysbench.js does) and the part's count.
func (l *loop) simple(s *LoopSpec, key string, run func(texts []string, t, n int) error) (func() error, error) {
	texts, err := s.texts(key)
	if err != nil {
		return nil, err
	}
	n := s.Counts[key]
	return func() error { return run(texts, l.table(s.Tables), n) }, nil
}

// id draws an id (or k) of the spec's tables: sysbench's default distribution over 1..table_size.
func (l *loop) id(s *LoopSpec) int64 { return int64(l.r.def(1, s.TableSize)) }

// part makes one part's function: sysbench.js's *Of functions, draw for draw.
func (l *loop) part(s *LoopSpec, name string) (func() error, error) {
	def := func() int64 { return l.id(s) }
	simple := func(key string, run func(texts []string, t, n int) error) (func() error, error) {
		return l.simple(s, key, run)
	}
	switch name {
	case "point_selects":
		return simple(name, func(texts []string, t, n int) error {
			for i := 0; i < n; i++ {
				if err := l.read(texts[t], def()); err != nil {
					return err
				}
			}
			return nil
		})
	case "range_selects":
		return l.rangeSelects(s)
	case "index_updates":
		return simple(name, func(texts []string, t, n int) error {
			for i := 0; i < n; i++ {
				if err := l.write(texts[t], def()); err != nil {
					return err
				}
			}
			return nil
		})
	case "non_index_updates":
		return simple(name, func(texts []string, t, n int) error {
			for i := 0; i < n; i++ {
				c := l.r.String(s.CTemplate) // JavaScript evaluates the arguments in order: c, then id
				if err := l.write(texts[t], c, def()); err != nil {
					return err
				}
			}
			return nil
		})
	case "delete_inserts":
		return l.deleteInserts(s)
	case "delete": // oltp_delete.lua's event: one DELETE of a random id
		return simple("deletes", func(texts []string, t, _ int) error { return l.write(texts[t], def()) })
	case "insert": // oltp_insert.lua's event: one INSERT as text (sysbench sends it unprepared)
		return l.insert(s)
	case "random_points": // select_random_points.lua's event: one SELECT ... WHERE k IN (points)
		args := make([]any, s.RandomPoints)
		return func() error {
			for i := range args {
				args[i] = int64(l.r.def(s.RMin, s.RMax))
			}
			return l.read(s.RandomSQL, args...)
		}, nil
	case "random_ranges": // select_random_ranges.lua's: one SELECT count(k) ... k BETWEEN v AND v+delta OR ...
		args := make([]any, 2*s.Ranges)
		delta := int64(s.Delta)
		return func() error {
			for i := 0; i < len(args); i += 2 {
				v := int64(l.r.def(s.RMin, s.RMax))
				args[i], args[i+1] = v, v+delta
			}
			return l.read(s.RandomSQL, args...)
		}, nil
	}
	return nil, fmt.Errorf("k6/x/tbs: loop: part %q is not one the native loop runs", name)
}

// rangeSelects is the range_selects part: the four range statements of rangeSelectsOf in turn.
func (l *loop) rangeSelects(s *LoopSpec) (func() error, error) {
	def := func() int64 { return l.id(s) }
	if !s.RangeSelects {
		return func() error { return nil }, nil // no draws at all, as rangeSelectsOf
	}
	span := int64(s.RangeSize) - 1
	var ranges []func() error
	for _, key := range []string{"simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges"} {
		f, err := l.simple(s, key, func(texts []string, t, n int) error {
			for i := 0; i < n; i++ {
				id := def()
				if err := l.read(texts[t], id, id+span); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		ranges = append(ranges, f)
	}
	return func() error {
		for _, f := range ranges {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// deleteInserts is the delete_inserts part: a DELETE then an INSERT of the same id, count times.
func (l *loop) deleteInserts(s *LoopSpec) (func() error, error) {
	def := func() int64 { return l.id(s) }
	inserts, err := s.texts("inserts")
	if err != nil {
		return nil, err
	}
	n := s.Counts["delete_inserts"]
	return l.simple(s, "deletes", func(deletes []string, t, _ int) error {
		for i := 0; i < n; i++ {
			id, k := def(), def()
			c, pad := l.r.String(s.CTemplate), l.r.String(s.PadTemplate)
			if err := l.write(deletes[t], id); err != nil {
				return err
			}
			if err := l.write(inserts[t], id, k, c, pad); err != nil {
				return err
			}
		}
		return nil
	})
}

// insert is oltp_insert.lua's event: one INSERT as text (sysbench sends it unprepared).
func (l *loop) insert(s *LoopSpec) (func() error, error) {
	def := func() int64 { return l.id(s) }
	if !s.AutoInc && s.Unique == nil {
		return nil, fmt.Errorf("k6/x/tbs: loop: oltp_insert without auto_inc needs the run's unique()")
	}
	return func() error {
		t := l.table(s.Tables)
		k := def()
		c, pad := l.r.String(s.CTemplate), l.r.String(s.PadTemplate)
		var id int64
		if !s.AutoInc {
			id = int64(s.Unique.Next()) - 2147483648
		}
		q := "INSERT INTO sbtest" + strconv.Itoa(t) + " (id, k, c, pad) VALUES (" + strconv.FormatInt(id, 10) + ", " +
			strconv.FormatInt(k, 10) + ", '" + c + "', '" + pad + "')"
		return l.write(q)
	}, nil
}

// event runs one event: sysbench.js's bound event (inTrx around the parts).
func (l *loop) event() error {
	if l.trx {
		if _, err := l.b.exec("BEGIN", txBegin); err != nil {
			return err
		}
		l.n[nOthers]++
		l.inTx = true
	}
	for _, p := range l.parts {
		if err := p(); err != nil {
			return err
		}
	}
	if l.trx {
		if _, err := l.b.exec("COMMIT", txEnd); err != nil {
			return err
		}
		l.n[nOthers]++
		l.inTx = false
	}
	return nil
}

// run runs events back to back on one batch of the thread's connection, given back before it
// returns: the first from t (epoch ms: the previous event's end, or a failed event's start to
// restart it), each next one from the previous one's end, until an event ends at or after
// until (at least one event) or stop is set. Returns the last event's end, or the error of an
// event and that event's start.
func (l *loop) run(until, t float64) (float64, error) {
	l.b.e, l.b.ctx = l.e, l.e.m.vu.Context()
	defer l.b.end(nil)
	for {
		if err := l.event(); err != nil {
			return t, err
		}
		l.n[nTxs]++
		if l.rec != nil {
			t = l.rec.Done(t)
		} else {
			t = now()
		}
		if t >= until || (l.stop != nil && l.stop.Load()) {
			return t, nil
		}
	}
}

// Loop makes the native event loop of one sysbench thread for one step: spec is the workload,
// rand the thread's random numbers (rand()), execer its statement runner (execer()), rec its
// recorder (null: none), conn the conn.js Conn whose n and inTx it keeps as the JavaScript
// does. The object is a handle for group(), which runs it.
func (m *Module) Loop(spec LoopSpec, rand, execer sobek.Value, rec *Recorder, conn sobek.Value) (*sobek.Object, error) {
	rt := m.vu.Runtime()
	r, ok := goValue[*Rand](rand, "_rand")
	if !ok {
		return nil, fmt.Errorf("k6/x/tbs: loop needs the thread's rand(), got %v", rand)
	}
	e, ok := goValue[*Execer](execer, "_execer")
	if !ok {
		return nil, fmt.Errorf("k6/x/tbs: loop needs the thread's execer(), got %v", execer)
	}
	if conn == nil || sobek.IsNull(conn) || sobek.IsUndefined(conn) {
		return nil, fmt.Errorf("k6/x/tbs: loop needs the thread's Conn")
	}
	c := conn.ToObject(rt)
	l := &loop{r: r, e: e, rec: rec, trx: spec.Trx}
	for _, p := range spec.Parts {
		f, err := l.part(&spec, p)
		if err != nil {
			return nil, err
		}
		l.parts = append(l.parts, f)
	}
	// give JavaScript the counts (conn.n, read by conn.flush) and the transaction state
	// (conn.inTx, read by conn.rollback) before any return
	l.sync = func() {
		n := c.Get("n").ToObject(rt)
		for i, v := range l.n {
			if v != 0 {
				k := fmt.Sprint(i)
				_ = n.Set(k, n.Get(k).ToFloat()+v)
			}
		}
		l.n = [4]float64{}
		_ = c.Set("inTx", l.inTx)
	}
	o := rt.NewObject()
	return o, hide(rt, o, "_loop", l)
}

// goValue reads the Go object a native object of this module keeps under a hidden key.
func goValue[T any](v sobek.Value, key string) (T, bool) {
	var zero T
	if v == nil || sobek.IsNull(v) || sobek.IsUndefined(v) {
		return zero, false
	}
	o, ok := v.(*sobek.Object)
	if !ok {
		return zero, false
	}
	g := o.Get(key)
	if g == nil {
		return zero, false
	}
	x, ok := g.Export().(T)
	return x, ok
}

// hide keeps Go object x on native object o under key, not enumerable (not part of the API).
func hide(rt *sobek.Runtime, o *sobek.Object, key string, x any) error {
	return o.DefineDataProperty(key, rt.ToValue(x), sobek.FLAG_FALSE, sobek.FLAG_FALSE, sobek.FLAG_FALSE)
}
