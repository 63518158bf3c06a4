package jstest

// The harness: k6/lib's ES modules in a sobek runtime (modulestest's VU: context, init
// environment), our k6/x/tbs and xk6-sql's k6/x/sql as built into bin/k6, stand-ins for k6's
// own modules, and a recording database/sql driver in place of our MySQL driver.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/grafana/sobek"
	xsql "github.com/grafana/xk6-sql/sql"
	"go.k6.io/k6/ext"
	"go.k6.io/k6/js/modulestest"

	mysqldrv "tidb-bench-stack/k6/driver/mysql"
	"tidb-bench-stack/k6/ext/tbs"
)

// k6Dir is the k6/ folder of the checkout (this package is k6/jstest).
var k6Dir = func() string {
	d, err := filepath.Abs("..")
	if err != nil {
		panic(err)
	}
	return d
}()

// ---------------------------------------------------------------- the recording driver

const fakeDriver = "tbsjstest"

// Stmt is one statement the JavaScript sent: Kind is "exec", "query" or "prepare" (our
// driver's PrepareMarker + SQL without arguments: prepare only).
type Stmt struct {
	Kind  string
	Query string
	Args  []any
}

func (s Stmt) String() string {
	if len(s.Args) == 0 {
		return s.Kind + " " + s.Query
	}
	return fmt.Sprintf("%s %s %v", s.Kind, s.Query, s.Args)
}

// server is what a harness' connections talk to: it records statements and answers them.
type server struct {
	mu      sync.Mutex
	log     []Stmt
	opens   int
	affect  func(q string) int64                        // rows a statement changes (default 1)
	rows    func(q string) ([]string, [][]driver.Value) // a query's result (default: none)
	failure func(q string) error                        // an error for a statement (default: none)
}

func (s *server) take() []Stmt {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.log
	s.log = nil
	return out
}

var (
	servers   sync.Map // host name -> *server
	serverSeq atomic.Int64
	hostRe    = regexp.MustCompile(`@tcp\(([^:)]+)`)
)

func init() { sql.Register(fakeDriver, recorder{}) }

type recorder struct{}

func (recorder) Open(dsn string) (driver.Conn, error) {
	m := hostRe.FindStringSubmatch(dsn)
	if m == nil {
		return nil, fmt.Errorf("jstest: no host in DSN %q", dsn)
	}
	v, ok := servers.Load(m[1])
	if !ok {
		return nil, fmt.Errorf("jstest: dial tcp %s: connection refused", m[1])
	}
	s := v.(*server)
	s.mu.Lock()
	s.opens++
	s.mu.Unlock()
	return &fakeConn{s: s}, nil
}

type fakeConn struct{ s *server }

func (c *fakeConn) record(kind, q string, args []driver.NamedValue) error {
	st := Stmt{Kind: kind, Query: q}
	if kind == "exec" && len(args) == 0 && strings.HasPrefix(q, mysqldrv.PrepareMarker) {
		st = Stmt{Kind: "prepare", Query: q[len(mysqldrv.PrepareMarker):]}
	}
	for _, a := range args {
		st.Args = append(st.Args, a.Value)
	}
	c.s.mu.Lock()
	c.s.log = append(c.s.log, st)
	fail := c.s.failure
	c.s.mu.Unlock()
	if fail != nil {
		return fail(q)
	}
	return nil
}

func (c *fakeConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.record("exec", q, args); err != nil {
		return nil, err
	}
	n := int64(1)
	if c.s.affect != nil {
		n = c.s.affect(q)
	}
	return driver.RowsAffected(n), nil
}

func (c *fakeConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.record("query", q, args); err != nil {
		return nil, err
	}
	cols, vals := []string{"v"}, [][]driver.Value(nil)
	if c.s.rows != nil {
		cols, vals = c.s.rows(q)
	}
	return &fakeRows{cols: cols, vals: vals}, nil
}

func (c *fakeConn) Prepare(string) (driver.Stmt, error) {
	return nil, fmt.Errorf("jstest: the recording driver runs statements directly, it does not prepare")
}
func (c *fakeConn) Close() error              { return nil }
func (c *fakeConn) Begin() (driver.Tx, error) { return nil, fmt.Errorf("jstest: no transactions") }

type fakeRows struct {
	cols []string
	vals [][]driver.Value
}

func (r *fakeRows) Columns() []string { return r.cols }
func (r *fakeRows) Close() error      { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if len(r.vals) == 0 {
		return io.EOF
	}
	copy(dest, r.vals[0])
	r.vals = r.vals[1:]
	return nil
}

// ---------------------------------------------------------------- k6's own modules, stood in

// The stand-ins of k6's built-in modules: sleep() records and returns at once, metrics record
// their samples, k6/execution is a plain object the test fills in.
const k6Fakes = `
globalThis.__k6 = { slept: [], samples: [], aborted: [],
  exec: { scenario: { name: '', iterationInTest: 0, startTime: 0 }, vu: { idInTest: 1, metrics: { tags: {} } },
          test: { options: {}, abort(msg) { __k6.aborted.push(msg); throw new Error('test aborted: ' + msg); } } } };
`

var builtin = map[string]string{
	"k6": `export function sleep(s) { __k6.slept.push(s); }
export default { sleep };`,
	"k6/metrics": `class Metric { constructor(name) { this.name = name; } add(v, tags) { __k6.samples.push({ metric: this.name, value: v, tags: tags || {} }); } }
export class Counter extends Metric {}
export class Gauge extends Metric {}
export class Trend extends Metric {}
export class Rate extends Metric {}
export default { Counter, Gauge, Trend, Rate };`,
	"k6/execution": `export default __k6.exec;`,
	// the Go modules: their instances for this VU (set by the harness)
	"k6/x/tbs":              `export default __go['k6/x/tbs'];`,
	"k6/x/sql":              `export default __go['k6/x/sql']; export const open = __go['k6/x/sql'].open;`,
	"k6/x/sql/driver/mysql": `export default __go['k6/x/sql/driver/mysql'];`,
}

// the recording driver's id, as xk6-sql knows drivers (a Symbol)
var fakeDriverID = xsql.RegisterDriver(fakeDriver)

// ---------------------------------------------------------------- the harness

// H is one VU's JavaScript runtime with k6/lib loaded from a k6/ folder.
type H struct {
	t      testing.TB
	Rt     *modulestest.Runtime
	VM     *sobek.Runtime
	Dir    string            // the k6/ folder the modules come from
	Files  map[string]string // path under Dir -> text, read in place of the file
	Server *server
	Host   string // mysql_host that reaches Server
	Tbs    *tbs.Module
	mods   map[string]sobek.ModuleRecord
	names  map[sobek.ModuleRecord]string
}

// New makes a harness over the checkout's k6/ (dir "") or another k6/ folder.
func New(t testing.TB, dir string) *H {
	t.Helper()
	if dir == "" {
		dir = k6Dir
	}
	rt := modulestest.NewRuntime(t)
	h := &H{t: t, Rt: rt, VM: rt.VU.Runtime(), Dir: dir, Files: map[string]string{},
		Server: &server{}, mods: map[string]sobek.ModuleRecord{}, names: map[sobek.ModuleRecord]string{}}
	h.Host = fmt.Sprintf("jstest-%d", serverSeq.Add(1))
	servers.Store(h.Host, h.Server)
	t.Cleanup(func() { servers.Delete(h.Host) })

	goMods := h.VM.NewObject()
	if _, found := ext.Get(ext.JSExtension)[tbs.ImportPath]; !found {
		t.Fatal("k6/x/tbs is not registered")
	}
	// a state of its own (the process-wide one k6 registers would carry notes and marks from
	// one test's runtime to the next)
	h.Tbs = tbs.NewRoot().NewModuleInstance(rt.VU).Exports().Default.(*tbs.Module)
	h.must(goMods.Set("k6/x/tbs", h.Tbs))
	h.must(goMods.Set("k6/x/sql", xsql.New().NewModuleInstance(rt.VU).Exports().Default))
	h.must(goMods.Set("k6/x/sql/driver/mysql", fakeDriverID))
	h.must(h.VM.Set("__go", goMods))
	h.Run(k6Fakes)
	h.must(h.VM.Set("open", h.open))
	h.SetEnv(map[string]string{})
	console := h.VM.NewObject()
	for _, k := range []string{"log", "info", "warn", "error", "debug"} {
		h.must(console.Set(k, func(sobek.FunctionCall) sobek.Value { return sobek.Undefined() }))
	}
	h.must(h.VM.Set("console", console))
	return h
}

func (h *H) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// SetEnv sets __ENV (k6's -e name=value), which config.js reads when imported.
func (h *H) SetEnv(env map[string]string) {
	o := h.VM.NewObject()
	for k, v := range env {
		h.must(o.Set(k, v))
	}
	h.must(h.VM.Set("__ENV", o))
}

// read gives a file under Dir, or its replacement in Files.
func (h *H) read(abs string) (string, error) {
	if rel, err := filepath.Rel(h.Dir, abs); err == nil {
		if s, ok := h.Files[filepath.ToSlash(rel)]; ok {
			return s, nil
		}
	}
	b, err := os.ReadFile(abs)
	return string(b), err
}

// open is k6's open(): a path relative to the calling module's folder.
func (h *H) open(call sobek.FunctionCall) sobek.Value {
	name := call.Argument(0).String()
	if !filepath.IsAbs(name) {
		base := h.Dir
		for _, f := range h.VM.CaptureCallStack(8, nil) {
			if src := f.SrcName(); filepath.IsAbs(src) {
				base = filepath.Dir(src)
				break
			}
		}
		name = filepath.Join(base, name)
	}
	s, err := h.read(name)
	if err != nil {
		panic(h.VM.NewGoError(err))
	}
	return h.VM.ToValue(s)
}

func (h *H) resolve(ref any, spec string) (sobek.ModuleRecord, error) {
	var key, src string
	if spec == "k6" || strings.HasPrefix(spec, "k6/") {
		s, ok := builtin[spec]
		if !ok {
			return nil, fmt.Errorf("jstest: no stand-in for module %q", spec)
		}
		key, src = spec, s
	} else {
		base := h.Dir
		if r, ok := ref.(sobek.ModuleRecord); ok && h.names[r] != "" && filepath.IsAbs(h.names[r]) {
			base = filepath.Dir(h.names[r])
		}
		key = filepath.Clean(filepath.Join(base, filepath.FromSlash(spec)))
	}
	if m, ok := h.mods[key]; ok {
		return m, nil
	}
	if src == "" {
		s, err := h.read(key)
		if err != nil {
			return nil, err
		}
		src = s
	}
	m, err := sobek.ParseModule(key, src, h.resolve)
	if err != nil {
		return nil, err
	}
	h.mods[key] = m
	h.names[m] = key
	return m, nil
}

// Import loads the module at `rel` (a path under Dir, e.g. "lib/config.js") and returns its
// namespace (its exports).
func (h *H) Import(rel string) *sobek.Object {
	h.t.Helper()
	o, err := h.TryImport(rel)
	if err != nil {
		h.t.Fatalf("import %s: %v", rel, err)
	}
	return o
}

// TryImport is Import that returns the module's error (a throw while it is evaluated).
func (h *H) TryImport(rel string) (*sobek.Object, error) {
	m, err := h.resolve(nil, path.Clean(rel))
	if err != nil {
		return nil, err
	}
	if err := m.Link(); err != nil {
		return nil, err
	}
	var p *sobek.Promise
	if err := h.catch(func() { p = h.VM.CyclicModuleRecordEvaluate(m.(sobek.CyclicModuleRecord), h.resolve) }); err != nil {
		return nil, err
	}
	switch p.State() {
	case sobek.PromiseStateRejected:
		v := p.Result()
		if e, ok := v.Export().(error); ok {
			return nil, e
		}
		return nil, fmt.Errorf("%s", v.String())
	case sobek.PromiseStatePending:
		return nil, fmt.Errorf("jstest: module %s did not finish evaluating", rel)
	}
	return h.VM.NamespaceObjectFor(m), nil
}

func (h *H) catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
				return
			}
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// Run runs a script (not a module) in the VU's runtime.
func (h *H) Run(src string) sobek.Value {
	h.t.Helper()
	v, err := h.VM.RunString(src)
	if err != nil {
		h.t.Fatalf("%v\nin:\n%s", err, src)
	}
	return v
}

// Call calls exported function `name` of namespace ns with Go arguments.
func (h *H) Call(ns *sobek.Object, name string, args ...any) (sobek.Value, error) {
	f, ok := sobek.AssertFunction(ns.Get(name))
	if !ok {
		return nil, fmt.Errorf("jstest: %s is not a function", name)
	}
	vals := make([]sobek.Value, len(args))
	for i, a := range args {
		if v, ok := a.(sobek.Value); ok {
			vals[i] = v
		} else {
			vals[i] = h.VM.ToValue(a)
		}
	}
	return f(sobek.Undefined(), vals...)
}

// MustCall is Call that fails the test on a throw.
func (h *H) MustCall(ns *sobek.Object, name string, args ...any) sobek.Value {
	h.t.Helper()
	v, err := h.Call(ns, name, args...)
	if err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	return v
}
