package jstest

// An independent model of sysbench 1.0.20's events (/usr/share/sysbench/*.lua), in Go: the
// statements each part of an event sends, with their arguments, drawn in sysbench's order
// from a random stream of k6/x/tbs (the same generator and stream the JavaScript gets). The
// parts are oltp_common.lua's execute_* functions (range_selects: the four range queries
// under `if sysbench.opt.range_selects`) and the whole events of oltp_delete.lua,
// oltp_insert.lua, select_random_points.lua, select_random_ranges.lua and bulk_insert.lua,
// under the names k6/contract.json's workloads use.

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/grafana/sobek"

	"tidb-bench-stack/k6/ext/tbs"
)

// oltp_common.lua's stmt_defs
var stmtDefs = map[string]string{
	"point_selects":     "SELECT c FROM sbtest%d WHERE id=?",
	"simple_ranges":     "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ?",
	"sum_ranges":        "SELECT SUM(k) FROM sbtest%d WHERE id BETWEEN ? AND ?",
	"order_ranges":      "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c",
	"distinct_ranges":   "SELECT DISTINCT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c",
	"index_updates":     "UPDATE sbtest%d SET k=k+1 WHERE id=?",
	"non_index_updates": "UPDATE sbtest%d SET c=? WHERE id=?",
	"deletes":           "DELETE FROM sbtest%d WHERE id=?",
	"inserts":           "INSERT INTO sbtest%d (id, k, c, pad) VALUES (?, ?, ?, ?)",
}

// oltp_common.lua's c_value_template and pad_value_template
var (
	cTemplate   = strings.TrimSuffix(strings.Repeat("###########-", 10), "-")
	padTemplate = strings.TrimSuffix(strings.Repeat("###########-", 5), "-")
)

// refRand is sysbench.rand from k6/x/tbs: uniform, default (rand_type) and rand.string.
type refRand struct {
	uniform, def, str sobek.Callable
	vm                *sobek.Runtime
}

func newRefRand(t testing.TB, h *H, o map[string]any, stream uint32) *refRand {
	t.Helper()
	num := func(k string) float64 { return toFloat(o[k]) }
	obj, err := h.Tbs.Rand(tbs.RandSpec{
		Type: o["rand_type"].(string), SpecIter: int(num("rand_spec_iter")), SpecPct: num("rand_spec_pct"),
		SpecRes: num("rand_spec_res"), ParetoH: num("rand_pareto_h"), ZipfExp: num("rand_zipfian_exp"),
		Seed: int64(num("rand_seed")), Stream: stream,
	})
	if err != nil {
		t.Fatal(err)
	}
	fn := func(k string) sobek.Callable {
		f, ok := sobek.AssertFunction(obj.Get(k))
		if !ok {
			t.Fatalf("tbs.rand has no %s", k)
		}
		return f
	}
	return &refRand{uniform: fn("uniform"), def: fn("def"), str: fn("string"), vm: h.VM}
}

func (r *refRand) call(f sobek.Callable, args ...any) sobek.Value {
	vals := make([]sobek.Value, len(args))
	for i, a := range args {
		vals[i] = r.vm.ToValue(a)
	}
	v, err := f(sobek.Undefined(), vals...)
	if err != nil {
		panic(err)
	}
	return v
}

func (r *refRand) Uniform(a, b int64) int64 { return int64(r.call(r.uniform, a, b).ToFloat()) }
func (r *refRand) Default(a, b int64) int64 { return int64(r.call(r.def, a, b).ToFloat()) }
func (r *refRand) String(tpl string) string { return r.call(r.str, tpl).String() }

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("not a number: %#v", v))
}

// model is one thread's sysbench for one workload: its options, stream and thread id.
type model struct {
	o         map[string]any
	decl      workloadDecl
	r         *refRand
	tid       int64
	threads   int64
	unique    func() int64 // sysbench.rand.unique()
	cursize   int64        // bulk_insert.lua
	bulkRows  []string
	bulkBytes int // the rows and their commas
}

func (m *model) opt(k string) int64 { return int64(toFloat(m.o[k])) }
func (m *model) on(k string) bool   { return m.o[k] == true }

// count: sysbench.opt[key], or the value the workload's prepare_statements() sets
// (oltp_point_select.lua: sysbench.opt.point_selects=1)
func (m *model) count(key string) int64 {
	if n, ok := m.decl.Counts[key]; ok {
		return int64(n)
	}
	return m.opt(key)
}

func exec(q string, args ...any) Stmt { return Stmt{Kind: "exec", Query: q, Args: args} }

// event: sysbench's event() for the declared parts: begin(), the execute_* calls, commit().
func (m *model) event(t testing.TB) []Stmt {
	trx := m.decl.Trx && !m.on("skip_trx")
	var out []Stmt
	if trx {
		out = append(out, exec("BEGIN"))
	}
	for _, p := range m.decl.Event {
		out = append(out, m.part(t, p)...)
	}
	if trx {
		out = append(out, exec("COMMIT"))
	}
	return out
}

func (m *model) table() int64 { return m.r.Uniform(1, m.opt("tables")) }
func (m *model) id() int64    { return m.r.Default(1, m.opt("table_size")) }

// rlen, rmin, rmax of select_random_*.lua (Lua doubles, truncated by sb_rand's uint32_t)
func (m *model) slice() (int64, int64) {
	rlen := float64(m.opt("table_size")) / float64(m.threads)
	return int64(math.Trunc(rlen * float64(m.tid))), int64(math.Trunc(rlen*float64(m.tid) + rlen))
}

func (m *model) part(t testing.TB, p string) []Stmt {
	var out []Stmt
	rng := func(key string) {
		tn := m.table()
		for i := int64(0); i < m.count(key); i++ {
			id := m.id()
			out = append(out, exec(fmt.Sprintf(stmtDefs[key], tn), id, id+m.opt("range_size")-1))
		}
	}
	switch p {
	case "point_selects":
		tn := m.table()
		for i := int64(0); i < m.count("point_selects"); i++ {
			out = append(out, exec(fmt.Sprintf(stmtDefs["point_selects"], tn), m.id()))
		}
	case "range_selects":
		if m.on("range_selects") {
			for _, k := range []string{"simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges"} {
				rng(k)
			}
		}
	case "index_updates":
		tn := m.table()
		for i := int64(0); i < m.count("index_updates"); i++ {
			out = append(out, exec(fmt.Sprintf(stmtDefs["index_updates"], tn), m.id()))
		}
	case "non_index_updates":
		tn := m.table()
		for i := int64(0); i < m.count("non_index_updates"); i++ {
			c := m.r.String(cTemplate)
			out = append(out, exec(fmt.Sprintf(stmtDefs["non_index_updates"], tn), c, m.id()))
		}
	case "delete_inserts":
		tn := m.table()
		for i := int64(0); i < m.count("delete_inserts"); i++ {
			id, k := m.id(), m.id()
			c, pad := m.r.String(cTemplate), m.r.String(padTemplate)
			out = append(out, exec(fmt.Sprintf(stmtDefs["deletes"], tn), id),
				exec(fmt.Sprintf(stmtDefs["inserts"], tn), id, k, c, pad))
		}
	case "delete": // oltp_delete.lua
		tn := m.table()
		out = append(out, exec(fmt.Sprintf(stmtDefs["deletes"], tn), m.id()))
	case "insert": // oltp_insert.lua (con:query: plain text)
		tn := m.table()
		k := m.id()
		c, pad := m.r.String(cTemplate), m.r.String(padTemplate)
		var i int64
		if !m.on("auto_inc") {
			i = m.unique() - 2147483648
		}
		out = append(out, exec(fmt.Sprintf("INSERT INTO sbtest%d (id, k, c, pad) VALUES (%d, %d, '%s', '%s')", tn, i, k, c, pad)))
	case "random_points": // select_random_points.lua
		out = append(out, m.randomPoints())
	case "random_ranges": // select_random_ranges.lua
		out = append(out, m.randomRanges())
	case "bulk_insert": // bulk_insert.lua: con:bulk_insert_next(row), until thread_done (bulkFlush)
		out = append(out, m.bulkInsertNext()...)
	default:
		t.Fatalf("the model of sysbench has no part %q: model it in k6/jstest/model_test.go", p)
	}
	return out
}

// randomPoints is select_random_points.lua's event.
func (m *model) randomPoints() Stmt {
	lo, hi := m.slice()
	var args []any
	for i := int64(0); i < m.opt("random_points"); i++ {
		args = append(args, m.r.Default(lo, hi))
	}
	q := "SELECT id, k, c, pad FROM sbtest1 WHERE k IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ") + ")"
	return exec(q, args...)
}

// randomRanges is select_random_ranges.lua's event.
func (m *model) randomRanges() Stmt {
	lo, hi := m.slice()
	var args []any
	var conds []string
	for i := int64(0); i < m.opt("number_of_ranges"); i++ {
		v := m.r.Default(lo, hi)
		args = append(args, v, v+m.opt("delta"))
		conds = append(conds, "k BETWEEN ? AND ?")
	}
	return exec("SELECT count(k) FROM sbtest1 WHERE "+strings.Join(conds, " OR "), args...)
}

// bulkInsertNext is bulk_insert.lua's con:bulk_insert_next(row): the statements it sends (none
// until the buffer is full).
func (m *model) bulkInsertNext() []Stmt {
	var out []Stmt
	m.cursize++
	row := fmt.Sprintf("(%d,%d)", m.cursize, m.cursize)
	// db_driver.c db_bulk_insert_next(): the statement goes first when the row, its comma
	// and the terminating NUL would not fit in the 512 KiB buffer
	comma := func() int {
		if len(m.bulkRows) > 0 {
			return 1
		}
		return 0
	}
	if m.bulkLen()+len(row)+1+comma() > bulkBuffer {
		out = append(out, m.bulkFlush()...)
	}
	m.bulkBytes += comma() + len(row)
	m.bulkRows = append(m.bulkRows, row)
	return out
}

// bulkBuffer is sysbench's bulk insert buffer (db_driver.c: BULK_PACKET_SIZE, 512 KiB).
const bulkBuffer = 512 * 1024

func (m *model) bulkHead() string { return fmt.Sprintf("INSERT INTO sbtest%d VALUES", m.tid+1) }

// bulkLen: the buffer's use (bulk_ptr): the statement's head, the rows and their commas.
func (m *model) bulkLen() int { return len(m.bulkHead()) + m.bulkBytes }

// bulkFlush: bulk_insert.lua's thread_done (con:bulk_insert_done()).
func (m *model) bulkFlush() []Stmt {
	if len(m.bulkRows) == 0 {
		return nil
	}
	s := exec(m.bulkHead() + strings.Join(m.bulkRows, ","))
	m.bulkRows, m.bulkBytes = nil, 0
	return []Stmt{s}
}

// prepared: what sysbench's prepare_statements() prepares with arguments (BEGIN and COMMIT
// aside), as a set.
func (m *model) prepared() map[string]bool {
	out := map[string]bool{}
	each := func(keys ...string) {
		for _, k := range keys {
			for tn := int64(1); tn <= m.opt("tables"); tn++ {
				out[fmt.Sprintf(stmtDefs[k], tn)] = true
			}
		}
	}
	for _, p := range m.decl.Event {
		switch p {
		case "point_selects", "index_updates", "non_index_updates":
			each(p)
		case "range_selects":
			if m.on("range_selects") {
				each("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges")
			}
		case "delete_inserts":
			each("deletes", "inserts")
		case "delete":
			each("deletes")
		case "random_points":
			out["SELECT id, k, c, pad FROM sbtest1 WHERE k IN ("+strings.TrimSuffix(strings.Repeat("?, ", int(m.opt("random_points"))), ", ")+")"] = true
		case "random_ranges":
			out["SELECT count(k) FROM sbtest1 WHERE "+strings.TrimSuffix(strings.Repeat("k BETWEEN ? AND ? OR ", int(m.opt("number_of_ranges"))), " OR ")] = true
		}
	}
	return out
}
