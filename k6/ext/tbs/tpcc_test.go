package tbs

import (
	"reflect"
	"strings"
	"testing"
)

// The hook reaches go-tpc v1.0.7's five transactions, in its order and mix (TPC-C 5.2.3:
// 45/43/4/4/4), and wraps each: a go-tpc whose fields moved fails here, not in a run.
func TestTpccHook(t *testing.T) {
	tp := &Tpcc{o: TpccOptions{DSN: "u:p@tcp(127.0.0.1:1)/x?timeout=1s", Warehouses: 2, Parts: 1}}
	var err error
	if tp.db, err = openTpccDB(tp.o.DSN); err != nil {
		t.Fatal(err)
	}
	w, err := tp.workloader(1)
	if err != nil {
		t.Fatal(err)
	}
	before := actionPointers(t, w)
	names, weights, err := hook(w)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"new_order", "payment", "order_status", "delivery", "stock_level"}; !reflect.DeepEqual(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if want := []int{45, 43, 4, 4, 4}; !reflect.DeepEqual(weights, want) {
		t.Errorf("weights %v, want %v", weights, want)
	}
	after := actionPointers(t, w)
	for i := range before {
		if before[i] == after[i] {
			t.Errorf("transaction %s: its action was not wrapped", names[i])
		}
	}
}

func actionPointers(t *testing.T, w any) []uintptr {
	t.Helper()
	txns, err := field(reflect.ValueOf(w).Elem(), "txns")
	if err != nil {
		t.Fatal(err)
	}
	var out []uintptr
	for i := 0; i < txns.Len(); i++ {
		a, err := field(txns.Index(i), "action")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a.Pointer())
	}
	return out
}

func TestTpccOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		o    TpccOptions
		want string
	}{
		{TpccOptions{Warehouses: 0, Parts: 1}, "warehouses=0"},
		{TpccOptions{Warehouses: 4, Parts: 5}, "parts=5: must be from 1 to warehouses (4)"},
		{TpccOptions{Warehouses: 4, Parts: 0}, "parts=0"},
		{TpccOptions{Warehouses: 4, Parts: 4}, ""},
	} {
		err := c.o.validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
}

func TestFieldNamesWhatIsMissing(t *testing.T) {
	_, err := field(reflect.ValueOf(&struct{ a int }{}).Elem(), "txns")
	if err == nil || !strings.Contains(err.Error(), "no field txns") {
		t.Errorf("err %v", err)
	}
}
