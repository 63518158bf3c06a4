package tbs

// index.d.ts is the module's JS API: this test fails when it and the Go code disagree. Every
// function the Go module gives JavaScript (the methods of the objects k6 wraps by reflection,
// under k6's names; the keys of the native objects that execer() and rand() build) is
// declared in index.d.ts with as many parameters, and every declared member exists; a method
// returning one of the module's objects is declared to return its interface; the data shapes
// (snapshot(), latencyHistogram(), rand()'s spec) have the keys Go gives them.

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/sobek"
	"go.k6.io/k6/js/common"
	"go.k6.io/k6/js/modules"
)

type dtsMember struct {
	params int // -1: a property
	ret    string
}

// parseDts: interface name -> member name -> member (one member per line, as index.d.ts says).
func parseDts(t *testing.T) map[string]map[string]dtsMember {
	t.Helper()
	b, err := os.ReadFile("index.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	start := regexp.MustCompile(`^export interface (\w+) \{$`)
	method := regexp.MustCompile(`^\s+(\w+)\((.*)\): (.+);$`)
	prop := regexp.MustCompile(`^\s+(\w+)\??: (.+);$`)
	out := map[string]map[string]dtsMember{}
	var cur map[string]dtsMember
	for n, line := range strings.Split(string(b), "\n") {
		switch {
		case start.MatchString(line):
			cur = map[string]dtsMember{}
			out[start.FindStringSubmatch(line)[1]] = cur
		case line == "}":
			cur = nil
		case cur == nil:
		case method.MatchString(line):
			m := method.FindStringSubmatch(line)
			cur[m[1]] = dtsMember{params: countParams(m[2]), ret: m[3]}
		case prop.MatchString(line):
			m := prop.FindStringSubmatch(line)
			cur[m[1]] = dtsMember{params: -1, ret: m[2]}
		case strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "/**") ||
			strings.HasPrefix(strings.TrimSpace(line), "*"):
		default:
			t.Fatalf("index.d.ts:%d: not one member per line: %q", n+1, line)
		}
	}
	return out
}

// countParams counts a parameter list's top-level commas.
func countParams(s string) int {
	if strings.TrimSpace(s) == "" {
		return 0
	}
	depth, n := 0, 1
	for _, c := range s {
		switch c {
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sameNames fails unless the two name sets are equal.
func sameNames(t *testing.T, iface string, goNames, dtsNames []string) {
	t.Helper()
	in := func(xs []string, x string) bool {
		for _, y := range xs {
			if y == x {
				return true
			}
		}
		return false
	}
	for _, g := range goNames {
		if !in(dtsNames, g) {
			t.Errorf("index.d.ts: interface %s does not declare %s, which the Go module gives JavaScript", iface, g)
		}
	}
	for _, d := range dtsNames {
		if !in(goNames, d) {
			t.Errorf("index.d.ts: interface %s declares %s, which the Go module does not have", iface, d)
		}
	}
}

type fakeVU struct {
	modules.VU
	rt *sobek.Runtime
}

func (v fakeVU) Runtime() *sobek.Runtime { return v.rt }

func TestIndexDtsIsTheGoModule(t *testing.T) {
	dts := parseDts(t)
	// the objects k6 wraps by reflection: JS names are k6's (common.MethodName)
	reflected := map[string]reflect.Type{
		"Tbs": reflect.TypeOf(&Module{}), "Histogram": reflect.TypeOf(&Histogram{}),
		"Recorder": reflect.TypeOf(&Recorder{}), "Queue": reflect.TypeOf(&QueueHandle{}),
		"Unique": reflect.TypeOf(&Unique{}), "Counter": reflect.TypeOf(&Counter{}), "Barrier": reflect.TypeOf(&BarrierHandle{}),
		"Tally": reflect.TypeOf(&TallyHandle{}),
		"Tpcc":  reflect.TypeOf(&Tpcc{}), "TpccThread": reflect.TypeOf(&TpccThread{}), "TpccStep": reflect.TypeOf(&TpccStep{}),
		"TpccRecorder": reflect.TypeOf(&TpccRecorder{}),
	}
	checkMethods(t, dts, reflected)
	m := checkNativeKeys(t, dts)
	checkDataShapes(t, dts, m)
}

// checkMethods: each reflected object's methods are its interface's, with as many parameters
// and the interface each returns.
func checkMethods(t *testing.T, dts map[string]map[string]dtsMember, reflected map[string]reflect.Type) {
	t.Helper()
	ifaceOf := map[reflect.Type]string{}
	for name, typ := range reflected {
		ifaceOf[typ] = name
	}
	// the module's methods that build native objects, and the interfaces they are
	nativeRet := map[string]string{"execer": "Execer", "rand": "Rand", "loop": "Loop", "group": "Group"}
	for iface, typ := range reflected {
		decl, ok := dts[iface]
		if !ok {
			t.Errorf("index.d.ts has no interface %s", iface)
			continue
		}
		var names []string
		for i := 0; i < typ.NumMethod(); i++ {
			m := typ.Method(i)
			if iface == "Tbs" && m.Name == "Exports" { // k6's modules.Instance, not the API
				continue
			}
			js := common.MethodName(typ, m)
			names = append(names, js)
			d, ok := decl[js]
			if !ok {
				continue
			}
			if n := m.Type.NumIn() - 1; d.params != n {
				t.Errorf("index.d.ts: %s.%s has %d parameters, Go's %s has %d", iface, js, d.params, m.Name, n)
			}
			want := nativeRet[js]
			if iface != "Tbs" {
				want = ""
			}
			if m.Type.NumOut() > 0 {
				if w, ok := ifaceOf[m.Type.Out(0)]; ok {
					want = w
				}
			}
			if want != "" && d.ret != want {
				t.Errorf("index.d.ts: %s.%s returns %s, Go returns %s", iface, js, d.ret, want)
			}
			if want == "" && (reflected[d.ret] != nil || d.ret == "Execer" || d.ret == "Rand" || d.ret == "Loop" || d.ret == "Group") {
				t.Errorf("index.d.ts: %s.%s returns %s, Go does not", iface, js, d.ret)
			}
		}
		sort.Strings(names)
		sameNames(t, iface, names, sortedKeys(decl))
	}
}

// checkNativeKeys: the keys of the native objects (execer, rand, loop, group) are their
// interfaces' -> the module they were made by.
func checkNativeKeys(t *testing.T, dts map[string]map[string]dtsMember) *Module {
	t.Helper()
	rt := sobek.New()
	rt.SetFieldNameMapper(common.FieldNameMapper{})
	m := &Module{r: newRoot(), vu: fakeVU{rt: rt}}
	ex, err := m.Execer()
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Rand(RandSpec{Type: "uniform", SpecIter: 12, SpecPct: 1, SpecRes: 75, ParetoH: 0.2, ZipfExp: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	by := r.Get("byName").ToObject(rt)
	lp, err := m.Loop(LoopSpec{}, r, ex, nil, rt.NewObject())
	if err != nil {
		t.Fatal(err)
	}
	arr := rt.NewArray(lp)
	gr, err := m.Group(arr, 200)
	if err != nil {
		t.Fatal(err)
	}
	for iface, o := range map[string]*sobek.Object{"Execer": ex, "Rand": r, "RandByName": by, "Loop": lp, "Group": gr} {
		keys := o.Keys()
		sort.Strings(keys)
		sameNames(t, iface, keys, sortedKeys(dts[iface]))
	}

	return m
}

// checkDataShapes: the data the module hands JavaScript has its interface's fields.
func checkDataShapes(t *testing.T, dts map[string]map[string]dtsMember, m *Module) {
	t.Helper()
	snap := sortedKeys(newHistogram().Snapshot())
	sameNames(t, "HistogramSnapshot", snap, sortedKeys(dts["HistogramSnapshot"]))
	sameNames(t, "HostSample", sortedKeys(HostSample{}.data()), sortedKeys(dts["HostSample"]))
	sameNames(t, "ListenerPid", sortedKeys(m.ListenerPid(1)), sortedKeys(dts["ListenerPid"]))
	sameNames(t, "CanaryTiming", sortedKeys(m.Canary(1)), sortedKeys(dts["CanaryTiming"]))
	// every key disturbance() may give: a full window, one without PSI and database, a failed read
	dk := map[string]bool{}
	full := HostSample{At: 1, Total: 1, Pid: 1, PidTicks: 0}
	for _, d := range []map[string]any{disturbance(full, HostSample{At: 2, Total: 2, Pid: 1, PidTicks: 1}),
		disturbance(HostSample{At: 1, PsiSomeUs: -1, Pid: 1, PidTicks: -1}, HostSample{At: 2, Total: 1, PsiSomeUs: -1}),
		disturbance(HostSample{Error: "x"}, HostSample{})} {
		for k := range d {
			dk[k] = true
		}
	}
	sameNames(t, "Disturbance", sortedKeys(dk), sortedKeys(dts["Disturbance"]))
	spec := sortedKeys(m.LatencyHistogram())
	var specNames []string
	for _, k := range spec {
		if k != "$comment" {
			specNames = append(specNames, k)
		}
	}
	sameNames(t, "LatencyHistogramSpec", specNames, sortedKeys(dts["LatencyHistogramSpec"]))
	for iface, v := range map[string]any{"RandSpec": RandSpec{}, "LoopSpec": LoopSpec{}} {
		sameNames(t, iface, jsFieldNames(reflect.TypeOf(v)), sortedKeys(dts[iface]))
	}
	sameNames(t, "TpccOptions", jsFieldNames(reflect.TypeOf(TpccOptions{})), sortedKeys(dts["TpccOptions"]))
	sameNames(t, "ProfileResult", jsFieldNames(reflect.TypeOf(ProfileResult{})), sortedKeys(dts["ProfileResult"]))
	sameNames(t, "ProfileTarget", jsFieldNames(reflect.TypeOf(ProfileTarget{})), sortedKeys(dts["ProfileTarget"]))
}

// jsFieldNames: a struct's fields as JavaScript sees them (k6's common.FieldName), sorted.
func jsFieldNames(typ reflect.Type) []string {
	var names []string
	for i := 0; i < typ.NumField(); i++ {
		names = append(names, common.FieldName(typ, typ.Field(i)))
	}
	sort.Strings(names)
	return names
}
