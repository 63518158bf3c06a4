package tbs

// The record of a prepare of ours in the TPC-C database (issue #46 item 6). go-tpc keeps none:
// a prepare that stopped (an error, k6 killed) leaves tables that go-tpc's run and check take
// for loaded ones. Ours writes one row in the table TpccMarker before go-tpc creates its tables
// and moves it on as the prepare goes: `loading` (go-tpc's load running), `checking` (the load
// ended, go-tpc's prepare check running) and `done` (the check passed, or no_check skipped it).
// tpcc.js refuses to run or check a database whose marker is not `done`, and to prepare one
// that has it at all; cleanup drops it with go-tpc's tables. A database without the table (one
// go-tpc prepared, or a prepare of ours from before the marker) is taken as go-tpc takes it:
// tpcc.js checks its row counts only. Resuming is not offered: go-tpc's loader has no start
// warehouse (its Prepare loads 1..warehouses), so a stopped prepare is cleaned up and made again.

import (
	"context"
	"database/sql"
	"errors"
)

// TpccMarker is the marker's table (docs/tpcc.md).
const TpccMarker = "tbs_tpcc_prepare"

// the marker's states
const (
	markerLoading  = "loading"
	markerChecking = "checking"
	markerDone     = "done"
)

const markerDDL = "CREATE TABLE " + TpccMarker + ` (
	id INT NOT NULL PRIMARY KEY,
	state VARCHAR(16) NOT NULL,
	warehouses INT NOT NULL,
	parts INT NOT NULL,
	checked INT NOT NULL,
	gotpc VARCHAR(16) NOT NULL,
	started DATETIME NOT NULL,
	finished DATETIME NULL
)`

// markerStart creates the marker, state `loading` (a marker of an earlier prepare stops it:
// tpcc.js refused such a database already, this is the last guard).
func (t *Tpcc) markerStart(ctx context.Context) error {
	if _, err := t.db.ExecContext(ctx, markerDDL); err != nil {
		return err
	}
	_, err := t.db.ExecContext(ctx, "INSERT INTO "+TpccMarker+" VALUES (1, ?, ?, ?, 0, ?, UTC_TIMESTAMP(), NULL)",
		markerLoading, t.o.Warehouses, t.o.Parts, GoTpcVersion)
	return err
}

// markerSet moves the marker to `state` (done: with the time, and whether the check ran).
func (t *Tpcc) markerSet(ctx context.Context, state string, checked bool) error {
	q := "UPDATE " + TpccMarker + " SET state = ?, checked = ?"
	if state == markerDone {
		q += ", finished = UTC_TIMESTAMP()"
	}
	c := 0
	if checked {
		c = 1
	}
	_, err := t.db.ExecContext(ctx, q+" WHERE id = 1", state, c)
	return err
}

// Marker is what the database records of a prepare of ours: { table, exists } and, when it
// exists, { state, warehouses, parts, checked, gotpc_version, started, finished } (times UTC,
// finished empty until done). A marker table without its row (a prepare stopped between the two
// statements of markerStart) is state `loading` of 0 warehouses.
func (t *Tpcc) Marker() (map[string]any, error) {
	ctx := context.Background()
	out := map[string]any{"table": TpccMarker, "exists": false}
	var n int
	if err := t.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables "+
		"WHERE table_schema = DATABASE() AND table_name = ?", TpccMarker).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return out, nil
	}
	out["exists"] = true
	var state, gotpc, started string
	var warehouses, parts, checked int
	var finished sql.NullString
	err := t.db.QueryRowContext(ctx, "SELECT state, warehouses, parts, checked, gotpc, CAST(started AS CHAR), "+
		"CAST(finished AS CHAR) FROM "+TpccMarker+" WHERE id = 1").
		Scan(&state, &warehouses, &parts, &checked, &gotpc, &started, &finished)
	if errors.Is(err, sql.ErrNoRows) {
		state, err = markerLoading, nil
	}
	if err != nil {
		return nil, err
	}
	out["state"], out["warehouses"], out["parts"], out["checked"] = state, warehouses, parts, checked == 1
	out["gotpc_version"], out["started"], out["finished"] = gotpc, started, finished.String
	return out, nil
}

// markerDrop drops the marker (cleanup, after go-tpc's tables).
func (t *Tpcc) markerDrop(ctx context.Context) error {
	_, err := t.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+TpccMarker)
	return err
}
