package tbs

// The hot path of a VU: statements on the xk6-sql database it opened, without the
// reflection wrapper.
//
// A JavaScript call of xk6-sql's db.exec(q, ...args) goes through sobek's reflection wrapper
// (wrapReflectFunc: every argument converted with reflect, the sql.Result wrapped in a new
// JavaScript object, whose rowsAffected() is one more reflected call). At tens of thousands of
// statements per second on one client core that wrapper is a tenth of k6's CPU per query
// (docs/bench.md). Exec and ExecCount return native sobek functions that do what db.exec
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

// execFn makes the native function; counted: return the affected rows (else undefined).
func (m *Module) execFn(d *xsql.Database, counted bool) (sobek.Value, error) {
	pool, err := poolOf(d)
	if err != nil {
		return nil, err
	}
	rt := m.vu.Runtime()
	var buf [8]any // arguments of one call (database/sql copies them; the slice is reused)
	return rt.ToValue(func(call sobek.FunctionCall) sobek.Value {
		q := call.Argument(0).String()
		args := buf[:0]
		if n := len(call.Arguments) - 1; n > len(buf) {
			args = make([]any, 0, n)
		}
		for _, a := range call.Arguments[1:] {
			args = append(args, a.Export())
		}
		res, err := pool.ExecContext(m.vu.Context(), q, args...)
		clear(buf[:])
		if err != nil {
			panic(rt.NewGoError(err))
		}
		if !counted {
			return sobek.Undefined()
		}
		n, err := res.RowsAffected()
		if err != nil {
			panic(rt.NewGoError(err))
		}
		return rt.ToValue(n)
	}), nil
}

// Exec returns a native function (q, ...args) that runs db.exec(q, ...args) and returns
// nothing: for statements whose affected rows do not matter (reads, BEGIN, COMMIT).
func (m *Module) Exec(d *xsql.Database) (sobek.Value, error) { return m.execFn(d, false) }

// ExecCount returns a native function (q, ...args) that runs db.exec(q, ...args) and
// returns its affected rows (sysbench counts a statement that changed rows as a write).
func (m *Module) ExecCount(d *xsql.Database) (sobek.Value, error) { return m.execFn(d, true) }
