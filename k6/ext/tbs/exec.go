package tbs

// The hot path of a VU: statements on the xk6-sql database it opened, without the
// reflection wrapper.
//
// A JavaScript call of xk6-sql's db.exec(q, ...args) goes through sobek's reflection wrapper
// (wrapReflectFunc: every argument converted with reflect, the sql.Result wrapped in a new
// JavaScript object, whose rowsAffected() is one more reflected call). At tens of thousands of
// statements per second on one client core that wrapper is a tenth of k6's CPU per query
// (docs/bench.md). Execer's exec and execCount are native sobek functions that do what db.exec
// does — DB.ExecContext on the same database/sql pool, with the VU's context, the same
// arguments (sobek's Export, as the wrapper exports them), the same error thrown (a GoError
// with the driver's message) — and give the affected rows as a number.
//
// The pool stays xk6-sql's: sql.open makes it (driver, DSN, pool options), db.query and
// db.close use it; only the per-statement call is ours. xk6-sql keeps the *sql.DB in an
// unexported field, read here with reflect and unsafe; poolOf checks the field's type, so a
// different xk6-sql (k6/go.mod pins v1.0.5) fails at the first call with a clear error
// instead of misbehaving, and tbs_test.go tests it against the pinned version.

import (
	"database/sql"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/grafana/sobek"
	xsql "github.com/grafana/xk6-sql/sql"
)

var sqlDBType = reflect.TypeOf((*sql.DB)(nil))

// poolOf returns the database/sql pool inside an xk6-sql Database.
func poolOf(d *xsql.Database) (*sql.DB, error) {
	if d == nil {
		return nil, fmt.Errorf("k6/x/tbs: exec needs a database from sql.open(), got null")
	}
	f := reflect.ValueOf(d).Elem().FieldByName("db")
	if !f.IsValid() || f.Type() != sqlDBType {
		return nil, fmt.Errorf("k6/x/tbs: this xk6-sql's Database has no `db *sql.DB` field (k6/go.mod pins github.com/grafana/xk6-sql v1.0.5): update k6/ext/tbs/exec.go")
	}
	p := *(**sql.DB)(unsafe.Pointer(f.UnsafeAddr())) //nolint:gosec // read-only access to the pinned field
	if p == nil {
		return nil, fmt.Errorf("k6/x/tbs: exec needs a database from sql.open(), got one without a pool")
	}
	return p, nil
}

// Execer is a VU's statement runner: its exec and execCount functions stay the same for the
// VU's whole life, and use(db) points them at the pool of the connection the VU holds now
// (a reconnect opens a new pool). The events bind the functions once, so running a
// statement reads a local, not a property of the connection object (sobek keeps an
// object's properties in a map: a lookup per statement was about a tenth of the script's
// CPU per event; docs/bench.md).
type Execer struct {
	m    *Module
	pool *sql.DB
	buf  [8]any // arguments of one call (database/sql copies them; the slice is reused)
}

// Use points the functions at db's pool; null leaves them without one (a statement then
// throws, naming sql.open).
func (e *Execer) Use(v sobek.Value) error {
	if v == nil || sobek.IsNull(v) || sobek.IsUndefined(v) {
		e.pool = nil
		return nil
	}
	d, ok := v.Export().(*xsql.Database)
	if !ok {
		return fmt.Errorf("k6/x/tbs: execer.use needs a database from sql.open(), got %s", v.String())
	}
	p, err := poolOf(d)
	if err != nil {
		return err
	}
	e.pool = p
	return nil
}

// run runs one statement: what xk6-sql's db.exec does, the same error thrown (a GoError with
// the driver's message).
func (e *Execer) run(rt *sobek.Runtime, call sobek.FunctionCall) sql.Result {
	if e.pool == nil {
		panic(rt.NewGoError(fmt.Errorf("k6/x/tbs: exec needs a database from sql.open(), got none (the connection was closed)")))
	}
	q := call.Argument(0).String()
	args := e.buf[:0]
	if n := len(call.Arguments) - 1; n > len(e.buf) {
		args = make([]any, 0, n)
	}
	for _, a := range call.Arguments[1:] {
		args = append(args, a.Export())
	}
	res, err := e.pool.ExecContext(e.m.vu.Context(), q, args...)
	clear(e.buf[:])
	if err != nil {
		panic(rt.NewGoError(err))
	}
	return res
}

// exec runs statement q with args on the VU's pool: run's work, for the native loop (loop.go).
func (e *Execer) exec(q string, args ...any) (sql.Result, error) {
	if e.pool == nil {
		return nil, fmt.Errorf("k6/x/tbs: exec needs a database from sql.open(), got none (the connection was closed)")
	}
	return e.pool.ExecContext(e.m.vu.Context(), q, args...)
}

// Execer returns a new statement runner as an object: exec(q, ...args) runs a statement and
// returns nothing (reads, BEGIN, COMMIT), execCount(q, ...args) returns its affected rows
// (sysbench counts a statement that changed rows as a write), use(db) picks the pool.
func (m *Module) Execer() (*sobek.Object, error) {
	e := &Execer{m: m}
	rt := m.vu.Runtime()
	o := rt.NewObject()
	if err := o.Set("exec", func(call sobek.FunctionCall) sobek.Value {
		e.run(rt, call)
		return sobek.Undefined()
	}); err != nil {
		return nil, err
	}
	if err := o.Set("execCount", func(call sobek.FunctionCall) sobek.Value {
		n, err := e.run(rt, call).RowsAffected()
		if err != nil {
			panic(rt.NewGoError(err))
		}
		return rt.ToValue(n)
	}); err != nil {
		return nil, err
	}
	if err := o.Set("use", e.Use); err != nil {
		return nil, err
	}
	if err := hide(rt, o, "_execer", e); err != nil { // for loop()
		return nil, err
	}
	return o, nil
}
