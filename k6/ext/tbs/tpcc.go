package tbs

// TPC-C as go-tpc v1.0.7 runs it (github.com/pingcap/go-tpc, the tool behind `tiup bench tpcc`,
// Apache-2.0), driven from k6. go-tpc's own tpcc package does the work: its schema (with
// --parts), its data generation, its five transactions with their statements, mix, NURand
// constants and the 1% New-Order rollback, and its consistency checks. What is ours: the
// threads are k6 VUs (one go-tpc thread each, a connection of its own), thread steps, the
// metrics and the run manifest. tpcchook.go sees each transaction go-tpc runs; tpccstep.go
// keeps a step's figures.

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/pingcap/go-tpc/pkg/workload"
	"github.com/pingcap/go-tpc/tpcc"
)

// GoTpcVersion is the go-tpc release linked in (k6/go.mod pins it; tests/test_tpcc.py checks
// that scripts/lib/versions.sh builds the same release's CLI for the parity tests).
const GoTpcVersion = "v1.0.7"

// TpccTables are go-tpc's tables, in the order its cleanup drops them.
var TpccTables = []string{"item", "customer", "district", "history", "new_order", "order_line", "orders", "stock", "warehouse"}

// TpccOptions: what tpcc.js gives the workload (k6/contract.json's options, checked there first).
type TpccOptions struct {
	DSN         string `js:"dsn"` // our driver's DSN (k6/lib/config.js dsn()); never logged
	Warehouses  int    `js:"warehouses"`
	Parts       int    `js:"parts"`
	Wait        bool   `js:"wait"`
	CheckAll    bool   `js:"check_all"`
	IgnoreError bool   `js:"ignore_error"`
	NoCheck     bool   `js:"no_check"` // prepare without its check (go-tpc's --no-check)
}

// validate repeats tpcc.js's checks (go-tpc panics on parts > warehouses).
func (o TpccOptions) validate() error {
	if o.Warehouses < 1 {
		return fmt.Errorf("invalid option warehouses=%d: must be a whole number >= 1", o.Warehouses)
	}
	if o.Parts < 1 || o.Parts > o.Warehouses {
		return fmt.Errorf("invalid option parts=%d: must be from 1 to warehouses (%d)", o.Parts, o.Warehouses)
	}
	return nil
}

// Tpcc is one TPC-C target of the process: its connection pool and the go-tpc workloader of
// the run (a fresh one per command: go-tpc's prepare and check split the warehouses by their
// thread count).
type Tpcc struct {
	o   TpccOptions
	db  *sql.DB
	mu  sync.Mutex
	run workload.Workloader // hooked (tpcchook.go), made on first thread()
	// go-tpc's transactions and their weights, from the hook
	names   []string
	weights []int
}

// Tpcc returns the process-wide TPC-C workload `name` (made on first use with o).
func (m *Module) Tpcc(name string, o TpccOptions) (*Tpcc, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	if t, ok := m.r.tpccs[name]; ok {
		return t, nil
	}
	// go-tpc opens its pool with multiStatements=true; our driver (k6/driver/mysql) reads the
	// same DSN as xk6-sql's pools, with its TLS parameter.
	db, err := openTpccDB(o.DSN)
	if err != nil {
		return nil, err
	}
	t := &Tpcc{o: o, db: db}
	m.r.tpccs[name] = t
	return t, nil
}

func openTpccDB(dsn string) (*sql.DB, error) {
	return sql.Open("tbs-mysql", dsn+"&multiStatements=true")
}

func (t *Tpcc) config(threads int) *tpcc.Config {
	return &tpcc.Config{
		DBName: "", Threads: threads, Parts: t.o.Parts, Warehouses: t.o.Warehouses,
		CheckAll: t.o.CheckAll, Wait: t.o.Wait, MaxMeasureLatency: maxMeasureLatency,
		// go-tpc prepare's defaults (--retry-count 50, --retry-interval 10s)
		PrepareRetryCount: 50, PrepareRetryInterval: prepareRetryInterval,
	}
}

// workloader makes go-tpc's workloader for `threads` threads (go-tpc panics on bad input:
// validate ran first, the recover is the last guard).
func (t *Tpcc) workloader(threads int) (w workload.Workloader, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("go-tpc: %v", p)
		}
	}()
	t.db.SetMaxIdleConns(threads + 2)
	return tpcc.NewWorkloader(t.db, t.config(threads))
}

// each runs f on `threads` go-tpc threads at once (each its InitThread / CleanupThread and
// connection), as go-tpc's executeWorkload does, and returns the first error. A thread that
// fails cancels the others. go-tpc's prepare makes its threads wait for thread 0's CREATE
// TABLEs: if thread 0 fails there, the others would wait forever, so each returns as soon as
// one thread has failed (the waiting ones end with the process).
func (t *Tpcc) each(threads int, f func(ctx context.Context, w workload.Workloader, id int) error) error {
	w, err := t.workloader(threads)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, threads)
	for i := 0; i < threads; i++ {
		go func(id int) {
			defer func() {
				if p := recover(); p != nil {
					errs <- fmt.Errorf("go-tpc thread %d: %v", id, p)
				}
			}()
			tctx := w.InitThread(ctx, id)
			defer w.CleanupThread(tctx, id)
			errs <- f(tctx, w, id)
		}(i)
	}
	for i := 0; i < threads; i++ {
		if e := <-errs; e != nil {
			cancel()
			return e
		}
	}
	return nil
}

// Prepare loads the warehouses with go-tpc's Prepare on `threads` threads (go-tpc creates
// the tables, thread 0 loads the items, the warehouses and districts are shared out), then
// runs go-tpc's prepare check (all its consistency conditions) as `go-tpc tpcc prepare` does,
// unless no_check (its --no-check). The prepare marker (tpccmarker.go) records each stage:
// `done` only when everything ended well.
func (t *Tpcc) Prepare(threads int) error {
	ctx := context.Background()
	if err := t.markerStart(ctx); err != nil {
		return fmt.Errorf("could not write the prepare marker (table %s): %v", TpccMarker, err)
	}
	if err := t.each(threads, func(ctx context.Context, w workload.Workloader, id int) error {
		return w.Prepare(ctx, id)
	}); err != nil {
		return fmt.Errorf("prepare stopped: %v", err)
	}
	if t.o.NoCheck {
		return t.markerSet(ctx, markerDone, false)
	}
	if err := t.markerSet(ctx, markerChecking, false); err != nil {
		return err
	}
	if err := t.each(threads, func(ctx context.Context, w workload.Workloader, id int) error {
		return w.CheckPrepare(ctx, id)
	}); err != nil {
		return fmt.Errorf("the check after prepare failed: %v", err)
	}
	return t.markerSet(ctx, markerDone, true)
}

// Check runs go-tpc's consistency check (check_all: every condition, else go-tpc's default set).
func (t *Tpcc) Check(threads int) error {
	return t.each(threads, func(ctx context.Context, w workload.Workloader, id int) error {
		return w.Check(ctx, id)
	})
}

// Cleanup drops go-tpc's tables (DROP TABLE IF EXISTS each), then the prepare marker.
func (t *Tpcc) Cleanup() error {
	if err := t.each(1, func(ctx context.Context, w workload.Workloader, id int) error {
		return w.Cleanup(ctx, id)
	}); err != nil {
		return err
	}
	return t.markerDrop(context.Background())
}

// Close closes the pool.
func (t *Tpcc) Close() error { return t.db.Close() }
