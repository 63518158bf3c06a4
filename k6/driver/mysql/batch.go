package mysql

// Batches: the native event loop's statements (k6/ext/tbs batch.go) without database/sql's
// per-statement work. The loop holds this connection for one run of events (database/sql's
// Conn.Raw) and calls ExecBatch per statement between BeginBatch and EndBatch:
//
//   - one watcher of the VU's context per batch instead of a context.AfterFunc per statement:
//     a cancel (k6 stopping the VU) still interrupts the statement in flight (the socket's
//     deadline goes into the past), the statement fails with the context's error and the
//     connection is discarded, as ExecContext does;
//   - the caller says which statements open and end a transaction (it sends BEGIN and COMMIT
//     itself), so no statement text is parsed; a connection lost inside a transaction still
//     becomes error 2013 (errLostInTx), never an autocommit retry;
//   - the arguments are driver.Values already (int64, string: what database/sql's conversion
//     makes of them, unchanged) and go to go-sql-driver's statement in a reused slice;
//   - the time of last use is taken once, when the batch ends.
//
// What is sent is what ExecContext sends: the same cached server-side prepared statement per
// connection (Conn.stmt), text for statements without arguments.

import (
	"context"
	"database/sql/driver"
	"time"
)

// The transaction effect of a batch statement (ExecBatch's tx).
const (
	TxNone  = 0 // a statement inside or outside a transaction
	TxBegin = 1 // BEGIN: opens an explicit transaction
	TxEnd   = 2 // COMMIT / ROLLBACK: ends it
)

// BeginBatch starts a batch on c under ctx. It returns false when c cannot run one (a socket
// it did not dial, or a context that cannot be canceled): the caller then uses ExecContext.
func (c *Conn) BeginBatch(ctx context.Context) bool {
	if c.sock == nil || ctx.Done() == nil {
		return false
	}
	c.batchCtx = ctx
	c.fired.Store(false)
	sock := c.sock
	c.stopWatch = context.AfterFunc(ctx, func() {
		c.fired.Store(true) // before the deadline: a statement failing from it sees the cancel
		_ = sock.SetDeadline(time.Unix(1, 0))
	})
	return true
}

// ExecBatch runs one statement of the batch: ExecContext's work for it.
func (c *Conn) ExecBatch(query string, args []driver.Value, tx int) (driver.Result, error) {
	if c.lost || c.canceled {
		return nil, errLostInTx
	}
	if c.fired.Load() { // canceled between statements: the socket's deadline is past already
		c.canceled = true
		return nil, c.batchCtx.Err()
	}
	var res driver.Result
	var err error
	if len(args) == 0 {
		res, err = c.inner.(driver.ExecerContext).ExecContext(context.Background(), query, nil)
	} else {
		var s driver.Stmt
		if s, err = c.stmt(context.Background(), query); err == nil {
			// go-sql-driver's ExecContext converts the NamedValues to this slice and calls Exec
			// (rows.go: Query instead, for a statement that returns rows under MariaDB's
			// metadata cache)
			res, err = execValues(s, args)
		}
	}
	if c.fired.Load() {
		// canceled while the statement ran: whatever its outcome, the socket has (or is
		// about to have) a past deadline
		c.canceled = true
		return nil, c.batchCtx.Err()
	}
	if err != nil {
		return nil, c.failed(err)
	}
	switch tx {
	case TxBegin:
		c.inTx = true
	case TxEnd:
		c.inTx = false
	}
	return res, nil
}

// EndBatch ends the batch: the watcher stops (a cancel that came discards the connection)
// and the connection's last use is now.
func (c *Conn) EndBatch() {
	if c.stopWatch != nil && !c.stopWatch() {
		c.canceled = true
	}
	c.stopWatch, c.batchCtx = nil, nil
	c.lastUse = time.Now()
}
