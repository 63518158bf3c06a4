package tbs

// The native loop's statements (loop.go), a run() at a time on the connection the VU holds.
//
// Execer.exec goes through database/sql per statement: the pool's lock, the connection taken
// and given back (its session reset and validity checks), the arguments converted into a new
// slice, the result wrapped; then our driver's ExecContext with its per-statement context
// watcher and the statement text parsed for BEGIN/COMMIT. At full speed those are a fifth of
// k6's CPU per point select (docs/bench.md). A batch takes the pool's one connection once per
// run() (database/sql's Conn.Raw) and runs the statements on the driver connection itself:
// on our MySQL driver through its batch API (k6/driver/mysql batch.go: one cancel watcher per
// batch, the transaction effect given, not parsed), on any other driver through its
// ExecerContext with the VU's context (the jstest recording driver).
//
// What database/sql would have done stays as it was:
//   - the same statements with the same arguments: whole numbers as int64 and strings, which
//     database/sql's conversion leaves as they are (any other value goes through the pool);
//   - the connection is taken when the first statement needs it, as the pool would take it
//     (a dead connection is replaced, a failed connect is that statement's error), and given
//     back before run() returns to JavaScript, which uses the pool itself (ROLLBACK,
//     reconnect); a connection a statement left unusable is discarded then;
//   - driver.ErrBadConn (the driver is sure nothing was sent; outside a transaction our driver
//     returns it, inside one it says 2013) discards the connection, and the statement goes
//     to the pool, which retries it on a new connection as before.
//
// Conn.Raw hands the connection to a function and takes it back when the function returns;
// the batch keeps it across the loop's calls, so Raw runs on a goroutine of its own that
// waits until the batch ends (one goroutine and a few channel operations per run()).

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	tbsmysql "tidb-bench-stack/k6/driver/mysql"
)

// batchConn is our MySQL driver's batch API.
type batchConn interface {
	BeginBatch(ctx context.Context) bool
	ExecBatch(query string, args []driver.Value, tx int) (driver.Result, error)
	EndBatch()
}

var _ batchConn = (*tbsmysql.Conn)(nil)

// The transaction effect of a statement, as our driver names it.
const (
	txNone  = tbsmysql.TxNone
	txBegin = tbsmysql.TxBegin
	txEnd   = tbsmysql.TxEnd
)

type batch struct {
	e       *Execer
	ctx     context.Context
	held    bool
	bc      batchConn            // our driver's connection in batch mode, or nil
	ex      driver.ExecerContext // any other driver's connection
	release chan error           // the error Raw's function returns (ErrBadConn discards the connection)
	done    chan struct{}        // Raw returned and the connection is back in the pool
	vals    [8]driver.Value
	named   [8]driver.NamedValue
}

// hold takes the pool's connection for the rest of the batch.
func (b *batch) hold() error {
	if b.e.pool == nil {
		return errNoPool
	}
	c, err := b.e.pool.Conn(b.ctx)
	if err != nil {
		return err
	}
	got := make(chan any)
	b.release, b.done = make(chan error), make(chan struct{})
	go func(release <-chan error, done chan<- struct{}) {
		_ = c.Raw(func(dc any) error {
			got <- dc
			return <-release
		})
		_ = c.Close()
		close(done)
	}(b.release, b.done)
	var dc any
	select {
	case dc = <-got:
	case <-b.done: // (Raw could not take the connection: the Conn was closed)
		return sql.ErrConnDone
	}
	b.held = true
	b.bc, b.ex = nil, nil
	if bc, ok := dc.(batchConn); ok && bc.BeginBatch(b.ctx) {
		b.bc = bc
		return nil
	}
	if ex, ok := dc.(driver.ExecerContext); ok {
		b.ex = ex
		return nil
	}
	b.end(nil)
	return fmt.Errorf("k6/x/tbs: the driver's connection (%T) runs no statements without database/sql", dc)
}

// end gives the connection back to the pool; bad (driver.ErrBadConn) discards it.
func (b *batch) end(bad error) {
	if !b.held {
		return
	}
	if b.bc != nil {
		b.bc.EndBatch()
	}
	b.held, b.bc, b.ex = false, nil, nil
	b.release <- bad
	<-b.done
}

var errNoPool = errors.New("k6/x/tbs: exec needs a database from sql.open(), got none (the connection was closed)")

// exec runs statement q with args (tx: its transaction effect) on the held connection.
func (b *batch) exec(q string, tx int, args ...any) (driver.Result, error) {
	for _, a := range args {
		switch a.(type) {
		case int64, string:
		default: // not a value the driver takes as it is: database/sql converts it
			return b.viaPool(nil, q, args)
		}
	}
	if len(args) > len(b.vals) {
		return b.viaPool(nil, q, args)
	}
	if !b.held {
		if err := b.hold(); err != nil {
			return nil, err
		}
	}
	var res driver.Result
	var err error
	if b.bc != nil {
		vals := b.vals[:len(args)]
		for i, a := range args {
			vals[i] = a
		}
		res, err = b.bc.ExecBatch(q, vals, tx)
		clear(vals)
	} else {
		if err = b.ctx.Err(); err != nil { // what the pool checks before a statement
			return nil, err
		}
		var named []driver.NamedValue
		if len(args) > 0 {
			named = b.named[:len(args)]
			for i, a := range args {
				named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
			}
		}
		res, err = b.ex.ExecContext(b.ctx, q, named)
		clear(named)
	}
	if errors.Is(err, driver.ErrBadConn) {
		// nothing was sent: the connection is discarded and the pool retries the statement
		// on a new one, as database/sql does
		return b.viaPool(driver.ErrBadConn, q, args)
	}
	return res, err
}

// viaPool gives the connection back (bad: discards it) and runs the statement through the pool.
func (b *batch) viaPool(bad error, q string, args []any) (driver.Result, error) {
	b.end(bad)
	return b.e.exec(q, append([]any(nil), args...)...) // (a copy: exec's own arguments stay on the stack)
}
