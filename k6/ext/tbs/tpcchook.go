package tbs

// How we see each transaction go-tpc runs. go-tpc's Run(ctx, thread) runs one transaction,
// drawn from its mix, and measures it into its own histograms, which it keeps private and
// prints: nothing tells its caller which transaction ran, how long it took or how it ended.
// So once per workloader, each of its five transactions' action (the unexported field
// txns[i].action, func(ctx, thread) error) is wrapped in one that times the call and hands
// name, latency and error to the calling thread (found in ctx). The wrapper measures exactly
// what go-tpc's Run measures: the action alone, after the keying time, before the think time.
//
// The fields are go-tpc v1.0.7's (GoTpcVersion, pinned in k6/go.mod); hook fails, naming
// what is missing, if another release lays them out otherwise (TestTpccHook checks it).

import (
	"context"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	"github.com/pingcap/go-tpc/pkg/workload"
	"github.com/pingcap/go-tpc/tpcc"
)

type txnAction = func(ctx context.Context, threadID int) error

// tpccThreadKey: the ctx value that carries the calling *TpccThread.
type tpccThreadKey struct{}

// field returns the (possibly unexported) field `name` of the struct v as a settable value.
func field(v reflect.Value, name string) (reflect.Value, error) {
	f := v.FieldByName(name)
	if !f.IsValid() {
		return f, fmt.Errorf("go-tpc %s: %s has no field %s (this build expects go-tpc %s)", GoTpcVersion, v.Type(), name, GoTpcVersion)
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), nil
}

// hook wraps w's transactions (see above) and returns their names and weights in go-tpc's order.
func hook(w workload.Workloader) (names []string, weights []int, err error) {
	tw, ok := w.(*tpcc.Workloader)
	if !ok {
		return nil, nil, fmt.Errorf("go-tpc: not a *tpcc.Workloader: %T", w)
	}
	txns, err := field(reflect.ValueOf(tw).Elem(), "txns")
	if err != nil || txns.Kind() != reflect.Slice {
		return nil, nil, fmt.Errorf("go-tpc: cannot reach its transactions: %v", err)
	}
	for i := 0; i < txns.Len(); i++ {
		txn := txns.Index(i)
		name, err1 := field(txn, "name")
		weight, err2 := field(txn, "weight")
		action, err3 := field(txn, "action")
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, nil, fmt.Errorf("go-tpc: transaction %d: %v %v %v", i, err1, err2, err3)
		}
		orig, ok := action.Interface().(txnAction)
		if !ok || name.Kind() != reflect.String {
			return nil, nil, fmt.Errorf("go-tpc: transaction %d has an action of type %s", i, action.Type())
		}
		n := name.String()
		action.Set(reflect.ValueOf(txnAction(func(ctx context.Context, threadID int) error {
			t0 := time.Now()
			e := orig(ctx, threadID)
			if th, ok := ctx.Value(tpccThreadKey{}).(*TpccThread); ok {
				th.ended(n, time.Since(t0), e)
			}
			return e
		})))
		names = append(names, n)
		weights = append(weights, int(weight.Int()))
	}
	return names, weights, nil
}
