// Command gofloor is the reference point of tools/bench: oltp_point_select's query
// (SELECT c FROM sbtest<t> WHERE id=?) sent the way our k6 sends it — one database/sql pool
// of one connection per thread, DB.ExecContext with a cancelable context, our driver module
// (server-side prepared statements, go-sql-driver/mysql underneath) — in a plain Go loop,
// without k6 and without JavaScript. What it costs per query is what the Go stack under
// xk6-sql costs; the difference to our k6 is what k6 and the script add.
//
//	TBS_GOFLOOR_DSN='user:pass@tcp(127.0.0.1:3306)/db' gofloor -threads 8 -seconds 10 -tables 4 -table-size 50000
//
// It prints one line as sysbench words it: `    queries: N (Q per sec.)`. Keys are uniform
// (the key distribution does not change the client's cost).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	tbsmysql "tidb-bench-stack/k6/driver/mysql"
)

func main() {
	threads := flag.Int("threads", 8, "connections, one goroutine each")
	seconds := flag.Int("seconds", 10, "duration")
	tables := flag.Int("tables", 1, "sbtest tables")
	size := flag.Int("table-size", 10000, "rows per table")
	flag.Parse()
	dsn := os.Getenv("TBS_GOFLOOR_DSN")
	if dsn == "" || *threads < 1 || *seconds < 1 || *tables < 1 || *size < 1 {
		fmt.Fprintln(os.Stderr, "gofloor: set TBS_GOFLOOR_DSN; -threads, -seconds, -tables, -table-size must be >= 1")
		os.Exit(2)
	}
	queries := make([]string, *tables+1)
	for t := 1; t <= *tables; t++ {
		queries[t] = fmt.Sprintf("SELECT c FROM sbtest%d WHERE id=?", t)
	}
	// a cancelable context, as k6 gives each VU
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, *threads)
	start := time.Now()
	stop := start.Add(time.Duration(*seconds) * time.Second)
	for i := 0; i < *threads; i++ {
		db, err := sql.Open(tbsmysql.DriverName, dsn)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gofloor:", err)
			os.Exit(1)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer db.Close()
			n := int64(0)
			for time.Now().Before(stop) {
				if _, err := db.ExecContext(ctx, queries[1+rand.IntN(*tables)], 1+rand.IntN(*size)); err != nil {
					errs <- err
					return
				}
				n++
			}
			total.Add(n)
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", err)
		os.Exit(1)
	}
	el := time.Since(start).Seconds()
	fmt.Printf("    queries: %d (%.2f per sec.)\n", total.Load(), float64(total.Load())/el)
}
