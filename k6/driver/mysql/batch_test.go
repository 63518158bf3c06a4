package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// The batch API (batch.go), as the native loop uses it: the connection held through
// database/sql's Conn.Raw, statements run with ExecBatch between BeginBatch and EndBatch.

// inBatch runs f on db's connection in one batch under ctx.
func inBatch(t *testing.T, db *sql.DB, ctx context.Context, f func(c *Conn)) {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		bc := dc.(*Conn)
		if !bc.BeginBatch(ctx) {
			t.Fatal("BeginBatch: no batch on a connection our dialer made, with a cancelable context")
		}
		defer bc.EndBatch()
		f(bc)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestBatchPreparesOncePerConnection: a batch executes the statement the connection prepared
// before (sysbench's thread_init), from the same cache, without preparing it again, and
// returns its affected rows and reads' results as ExecContext does.
func TestBatchPreparesOncePerConnection(t *testing.T) {
	needsServers(t)
	db := open(t, DriverName, targets()[1].addr) // MariaDB counts prepares per session
	if _, err := db.Exec(PrepareMarker + "SELECT ? + 1"); err != nil {
		t.Fatal(err)
	}
	before := sessionStatus(t, db, "Com_stmt_prepare")
	execs := sessionStatus(t, db, "Com_stmt_execute")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inBatch(t, db, ctx, func(c *Conn) {
		for i := 0; i < 50; i++ {
			if _, err := c.ExecBatch("SELECT ? + 1", []driver.Value{int64(i)}, TxNone); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.ExecBatch("BEGIN", nil, TxBegin); err != nil || !c.inTx {
			t.Fatalf("BEGIN in a batch: %v, inTx %v", err, c.inTx)
		}
		if _, err := c.ExecBatch("COMMIT", nil, TxEnd); err != nil || c.inTx {
			t.Fatalf("COMMIT in a batch: %v, inTx %v", err, c.inTx)
		}
	})
	if n := sessionStatus(t, db, "Com_stmt_prepare") - before; n != 0 {
		t.Errorf("%d prepares in a batch of a statement prepared before, want 0", n)
	}
	if n := sessionStatus(t, db, "Com_stmt_execute") - execs; n != 50 {
		t.Errorf("%d executions for 50 statements in a batch", n)
	}
}

// TestBatchCancelInterruptsStatement: one watcher for the whole batch still interrupts the
// statement in flight when the context is canceled (k6 stopping the VU): it fails at once
// with the context's error, the connection is discarded when the batch ends, and the pool's
// next statement runs on a new one.
func TestBatchCancelInterruptsStatement(t *testing.T) {
	needsServers(t)
	for _, tg := range targets() {
		t.Run(tg.name, func(t *testing.T) {
			db := open(t, DriverName, tg.addr)
			ctx, cancel := context.WithCancel(context.Background())
			inBatch(t, db, ctx, func(c *Conn) {
				if _, err := c.ExecBatch("SELECT ? + 1", []driver.Value{int64(1)}, TxNone); err != nil {
					t.Fatal(err)
				}
				time.AfterFunc(200*time.Millisecond, cancel)
				start := time.Now()
				_, err := c.ExecBatch("SELECT SLEEP(?)", []driver.Value{int64(5)}, TxNone)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("want context.Canceled from the interrupted SELECT SLEEP(5), got %v", err)
				}
				if took := time.Since(start); took > 2*time.Second {
					t.Fatalf("the cancel took %v to interrupt SELECT SLEEP(5)", took)
				}
				if _, err := c.ExecBatch("SELECT ? + 1", []driver.Value{int64(1)}, TxNone); err == nil {
					t.Fatal("a statement after the cancel ran on the interrupted connection")
				}
			})
			var v int
			if err := db.QueryRow("SELECT ? + 1", 41).Scan(&v); err != nil || v != 42 {
				t.Fatalf("next statement after the batch: %v, %d", err, v)
			}
		})
	}
}

// TestBatchLostConnectionInsideTransaction: the connection drops between two statements of a
// transaction opened in a batch: the next statement fails with 2013, nothing of the
// transaction is committed, and the connection is not used again.
func TestBatchLostConnectionInsideTransaction(t *testing.T) {
	needsServers(t)
	for _, tg := range targets() {
		t.Run(tg.name, func(t *testing.T) {
			admin := open(t, "mysql", tg.addr)
			for _, q := range []string{"DROP TABLE IF EXISTS driver_batch_lost", "CREATE TABLE driver_batch_lost (id INT PRIMARY KEY)"} {
				if _, err := admin.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			defer admin.Exec("DROP TABLE IF EXISTS driver_batch_lost")
			proxy := newCutProxy(t, tg.addr)
			db := open(t, DriverName, proxy.addr())
			var connID int64
			if err := db.QueryRow("SELECT CONNECTION_ID()").Scan(&connID); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			inBatch(t, db, ctx, func(c *Conn) {
				if _, err := c.ExecBatch("BEGIN", nil, TxBegin); err != nil {
					t.Fatal(err)
				}
				if _, err := c.ExecBatch("INSERT INTO driver_batch_lost (id) VALUES (?)", []driver.Value{int64(1)}, TxNone); err != nil {
					t.Fatal(err)
				}
				proxy.cut()
				waitGone(t, admin, connID)
				_, err := c.ExecBatch("INSERT INTO driver_batch_lost (id) VALUES (?)", []driver.Value{int64(2)}, TxNone)
				var me *gomysql.MySQLError
				if !errors.As(err, &me) || me.Number != 2013 {
					t.Fatalf("want error 2013 after the connection was cut inside the transaction, got %v", err)
				}
				if _, err := c.ExecBatch("COMMIT", nil, TxEnd); err != errLostInTx {
					t.Fatalf("the lost connection was used again: %v", err)
				}
			})
			var n int
			if err := admin.QueryRow("SELECT COUNT(*) FROM driver_batch_lost").Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d rows of the cut transaction are in the table (%v), want 0", n, err)
			}
		})
	}
}
