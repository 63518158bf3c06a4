package tbs

import (
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	xsql "github.com/grafana/xk6-sql/sql"
)

// poolOf reads the pool of the pinned xk6-sql's Database: the field is there with its type
// (a zero Database says "no pool", not "no field"), and a set pool is the one returned.
func TestPoolOfPinnedXk6SQL(t *testing.T) {
	if _, err := poolOf(nil); err == nil || !strings.Contains(err.Error(), "sql.open") {
		t.Fatalf("poolOf(nil): want an error naming sql.open, got %v", err)
	}
	d := &xsql.Database{}
	if _, err := poolOf(d); err == nil || !strings.Contains(err.Error(), "without a pool") {
		t.Fatalf("poolOf(zero Database): want the no-pool error (the field exists), got %v", err)
	}
	want := &sql.DB{}
	f := reflect.ValueOf(d).Elem().FieldByName("db")
	*(**sql.DB)(unsafe.Pointer(f.UnsafeAddr())) = want
	got, err := poolOf(d)
	if err != nil || got != want {
		t.Fatalf("poolOf: got %p, %v; want %p", got, err, want)
	}
}
