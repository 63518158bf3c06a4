package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// rowsTable makes a table of 4 columns, as sbtest's, with k = 1..6 (one row each), for a
// statement of 4 columns that returns 0 to 6 rows.
func rowsTable(t *testing.T, db *sql.DB) string {
	t.Helper()
	name := fmt.Sprintf("tbs_rows_%d", time.Now().UnixNano()%1e9)
	for _, q := range []string{
		"CREATE TABLE " + name + " (id INT PRIMARY KEY, k INT, c CHAR(20), pad CHAR(20), KEY (k))",
		"INSERT INTO " + name + " VALUES (1,1,'a','p'),(2,2,'a','p'),(3,3,'a','p'),(4,4,'a','p'),(5,5,'a','p'),(6,6,'a','p')",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + name) })
	return name
}

// pointsOf returns 6 IN() values of which `hit` name a row (k 1..6), the others none.
func pointsOf(hit int) []any {
	args := make([]any, 6)
	for i := range args {
		args[i] = int64(1000 + i)
		if i < hit {
			args[i] = int64(i + 1)
		}
	}
	return args
}

// TestRowsOfCachedMetadataStatement: a prepared statement of 4 columns that returns 0 to 6
// rows runs to its end on both targets, twice or more per connection (MariaDB sends no
// column definitions after the first time: its metadata cache), through the pool's Exec and
// through a batch. go-sql-driver v1.10.1's Exec alone hangs on MariaDB for fewer rows than
// columns (rows.go): each statement has a 3-s bound here, so that failure is an error.
func TestRowsOfCachedMetadataStatement(t *testing.T) {
	needsServers(t)
	for _, tg := range targets() {
		t.Run(tg.name, func(t *testing.T) {
			db := open(t, DriverName, tg.addr)
			table := rowsTable(t, db)
			q := "SELECT id, k, c, pad FROM " + table + " WHERE k IN (?, ?, ?, ?, ?, ?)"
			for round := 0; round < 3; round++ {
				for hit := 0; hit <= 6; hit++ {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					_, err := db.ExecContext(ctx, q, pointsOf(hit)...)
					cancel()
					if err != nil {
						t.Fatalf("Exec of a statement returning %d rows of 4 columns (round %d): %v", hit, round, err)
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			inBatch(t, db, ctx, func(c *Conn) {
				for round := 0; round < 3; round++ {
					for hit := 0; hit <= 6; hit++ {
						args := pointsOf(hit)
						vals := make([]driver.Value, len(args))
						for i, a := range args {
							vals[i] = a
						}
						if _, err := c.ExecBatch(q, vals, TxNone); err != nil {
							t.Fatalf("ExecBatch of a statement returning %d rows of 4 columns (round %d): %v", hit, round, err)
						}
					}
				}
			})
			// the connection is still in step with the server: a query's answer is its own
			var n int
			if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil || n != 6 {
				t.Fatalf("after the statements: COUNT(*) = %d, %v; want 6", n, err)
			}
		})
	}
}

// TestCachedColumnsFieldExists: returnsRows finds the column definitions go-sql-driver keeps
// under MariaDB's metadata cache (a statement with a result set: yes; an UPDATE: no), and
// none on TiDB, which has no such cache. A go-sql-driver upgrade that renames the field fails
// here: then see whether Exec reads a cached statement's reply right upstream (rows.go).
func TestCachedColumnsFieldExists(t *testing.T) {
	needsServers(t)
	for _, tg := range targets() {
		t.Run(tg.name, func(t *testing.T) {
			db := open(t, DriverName, tg.addr)
			table := rowsTable(t, db)
			c, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Raw(func(dc any) error {
				inner := dc.(*Conn).inner.(driver.ConnPrepareContext)
				sel, err := inner.PrepareContext(context.Background(), "SELECT id, k, c, pad FROM "+table+" WHERE k = ?")
				if err != nil {
					return err
				}
				defer sel.Close()
				upd, err := inner.PrepareContext(context.Background(), "UPDATE "+table+" SET k = k WHERE id = ?")
				if err != nil {
					return err
				}
				defer upd.Close()
				if reflect.ValueOf(sel).Elem().FieldByName(cachedColumnsField).Kind() != reflect.Slice {
					t.Fatalf("go-sql-driver's statement (%T) has no slice field %q any more: see rows.go", sel, cachedColumnsField)
				}
				wantSel := tg.name == "mariadb"
				if got := returnsRows(sel); got != wantSel {
					t.Errorf("returnsRows(SELECT) = %v on %s, want %v", got, tg.name, wantSel)
				}
				if returnsRows(upd) {
					t.Errorf("returnsRows(UPDATE) = true on %s", tg.name)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
