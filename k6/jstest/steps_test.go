package jstest

import (
	"encoding/json"
	"fmt"
	osexec "os/exec"
	"strings"
	"testing"

	mysqldrv "tidb-bench-stack/k6/driver/mysql"
)

// stepsOf parses env with config.js and gives steps.js's scenarios, windows and thresholds.
func stepsOf(t *testing.T, h *H, env map[string]string) (map[string]map[string]any, []map[string]float64, map[string]any) {
	t.Helper()
	cfg := h.Import("lib/config.js")
	steps := h.Import("lib/steps.js")
	o, err := h.Call(cfg, "parseOptions", env)
	if err != nil {
		t.Fatal(err)
	}
	var sc map[string]map[string]any
	var win []map[string]float64
	var th map[string]any
	for _, x := range []struct {
		fn  string
		out any
	}{{"stepScenarios", &sc}, {"stepWindows", &win}, {"stepThresholds", &th}} {
		b, err := json.Marshal(h.MustCall(steps, x.fn, o).Export())
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, x.out); err != nil {
			t.Fatal(err)
		}
	}
	return sc, win, th
}

func TestThreadStepsAreScenariosOneAfterAnother(t *testing.T) {
	h := New(t, "")
	sc, win, th := stepsOf(t, h, map[string]string{"threads": "8,16,1000", "time": "30", "warmup_time": "5", "grace_time": "3"})
	if len(sc) != 3 || len(win) != 3 {
		t.Fatalf("3 steps: %d scenarios, %d windows", len(sc), len(win))
	}
	// connect_time=auto: timing.connect_s + connect_s_per_1000_threads per 1000 threads, rounded up
	connect := map[int]float64{8: 3, 16: 3, 1000: 10}
	// threads_per_vu=auto: one thread per VU below timing.threads_per_vu_from (100) threads,
	// timing.threads_per_vu_auto (8) from there (oltp_read_write runs in the native loop)
	vus := map[int]float64{8: 8, 16: 16, 1000: 125}
	start := 0.0
	for i, n := range []int{8, 16, 1000} {
		s := sc[fmt.Sprintf("t%d", n)]
		w := win[i]
		c := connect[n]
		length := c + 5 + 30
		want := map[string]any{"executor": "constant-vus", "exec": "default", "vus": vus[n],
			"duration": fmt.Sprintf("%gs", length), "startTime": fmt.Sprintf("%gs", start), "gracefulStop": "3s",
			"tags": map[string]any{"threads": fmt.Sprint(n)}}
		got, _ := json.Marshal(s)
		exp, _ := json.Marshal(want)
		if string(got) != string(exp) {
			t.Errorf("step t%d: %s, want %s", n, got, exp)
		}
		// the window: connect at the scenario's start, load after the connect phase, the
		// measured window after the warm-up, the next step after the grace time
		ms := start * 1000
		wantW := map[string]float64{"threads": float64(n), "connect": ms, "start": ms + c*1000, "measure_start": ms + (c+5)*1000,
			"measure_end": ms + (c+35)*1000, "end": ms + (c+38)*1000}
		for k, v := range wantW {
			if w[k] != v {
				t.Errorf("step t%d window %s = %v, want %v", n, k, w[k], v)
			}
		}
		for _, m := range []string{"oltp_queries", "oltp_transactions", "oltp_errors", "oltp_reconnects"} {
			if _, ok := th[fmt.Sprintf("%s{threads:%d,warmup:false}", m, n)]; !ok {
				t.Errorf("no submetric %s for step t%d", m, n)
			}
		}
		for _, k := range []string{"read", "write", "other"} {
			if _, ok := th[fmt.Sprintf("oltp_queries{threads:%d,warmup:false,kind:%s}", n, k)]; !ok {
				t.Errorf("no submetric oltp_queries kind %s for step t%d", k, n)
			}
		}
		start += length + 3
	}
	if len(th) != 3*7 {
		t.Errorf("%d submetrics, want 7 per step", len(th))
	}
}

func TestConnectTimeGiven(t *testing.T) {
	h := New(t, "")
	sc, win, _ := stepsOf(t, h, map[string]string{"threads": "2,4", "time": "1", "connect_time": "0", "grace_time": "1"})
	if sc["t2"]["duration"] != "1s" || sc["t4"]["startTime"] != "2s" {
		t.Errorf("connect_time=0: %v", sc)
	}
	if win[1]["connect"] != 2000 || win[1]["start"] != 2000 || win[1]["measure_end"] != 3000 {
		t.Errorf("connect_time=0: %v", win)
	}
}

// threads_per_vu: the VUs of a step are its threads divided by the threads each VU runs,
// rounded up; only the native loop runs more than one thread per VU.
func TestThreadsPerVu(t *testing.T) {
	h := New(t, "")
	for _, c := range []struct {
		env  map[string]string
		want map[string]float64
	}{
		{map[string]string{"threads": "8,3,100", "threads_per_vu": "3"}, map[string]float64{"t8": 3, "t3": 1, "t100": 34}},
		{map[string]string{"threads": "99,100,1500"}, map[string]float64{"t99": 99, "t100": 13, "t1500": 188}},
		{map[string]string{"threads": "200", "threads_per_vu": "1"}, map[string]float64{"t200": 200}},
		// the JavaScript path: one thread per VU whatever auto would give
		{map[string]string{"threads": "200", "workload": "bulk_insert"}, map[string]float64{"t200": 200}},
		{map[string]string{"threads": "200", "rate": "100"}, map[string]float64{"t200": 200}},
		{map[string]string{"threads": "200", "native_loop": "off"}, map[string]float64{"t200": 200}},
		{map[string]string{"threads": "200", "workload": "oltp_insert"}, map[string]float64{"t200": 25}}, // the native loop runs it too
	} {
		sc, _, _ := stepsOf(t, h, c.env)
		for name, want := range c.want {
			if got := sc[name]["vus"]; got != want {
				t.Errorf("%v: step %s runs %v VUs, want %v", c.env, name, got, want)
			}
		}
	}
	cfg := h.Import("lib/config.js")
	steps := h.Import("lib/steps.js")
	for env, want := range map[string]string{
		"threads_per_vu=0":                      "invalid option threads_per_vu=0: must be auto or a whole number >= 1",
		"threads_per_vu=x":                      "invalid option threads_per_vu=x: must be auto or a whole number >= 1",
		"threads_per_vu=2 native_loop=off":      "invalid option threads_per_vu=2: only the native loop runs several threads per VU",
		"threads_per_vu=4 rate=10":              "with rate=10 is not): use threads_per_vu=1 or auto",
		"threads_per_vu=2 workload=bulk_insert": "bulk_insert is not",
	} {
		e := map[string]string{}
		for _, kv := range strings.Fields(env) {
			k, v, _ := strings.Cut(kv, "=")
			e[k] = v
		}
		o, err := h.Call(cfg, "parseOptions", e)
		if err == nil {
			_, err = h.Call(steps, "stepScenarios", o)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", env, err, want)
		}
	}
}

// The connect phase's formula has one Python copy (tidbbench/contract.py connect_seconds: the
// tools, the docs generator and the tests read it) beside the run's own in steps.js, which cannot
// import it: the two must give the same seconds, the ceiling included (tools/tbstools/drive.py
// once dropped it and planned 2.03 s where the run waited 3 s).
func TestConnectSecondsIsTidbbenchContracts(t *testing.T) {
	threads := []int{1, 4, 125, 126, 250, 251, 999, 1000, 1001, 1500, 4000}
	args := []string{"-c", "import sys; from tidbbench.contract import connect_seconds; " +
		"print(' '.join(str(connect_seconds(int(n), 'auto')) for n in sys.argv[1:]))"}
	for _, n := range threads {
		args = append(args, fmt.Sprint(n))
	}
	cmd := osexec.Command("python3", args...)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 tidbbench.contract.connect_seconds: %v: %s", err, out)
	}
	want := strings.Fields(string(out))
	h := New(t, "")
	steps := h.Import("lib/steps.js")
	for i, n := range threads {
		got := h.MustCall(steps, "connectSeconds", map[string]any{"connect_time": "auto"}, n).Export()
		if fmt.Sprint(got) != want[i] {
			t.Errorf("connectSeconds(%d) = %v in steps.js, %s in tidbbench/contract.py", n, got, want[i])
		}
	}
}

// A VU finds its step's thread count in the run's own thread counts by the scenario's name
// (stepName), never by parsing the name; a name that is no step of the run is an error.
func TestStepThreadsIsALookUpOfStepName(t *testing.T) {
	h := New(t, "")
	cfg := h.Import("lib/config.js")
	steps := h.Import("lib/steps.js")
	o, err := h.Call(cfg, "parseOptions", map[string]string{"threads": "8,16,1000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{8, 16, 1000} {
		name := h.MustCall(steps, "stepName", n).String()
		if got := h.MustCall(steps, "stepThreads", o, name).ToInteger(); got != int64(n) {
			t.Errorf("stepThreads(%s) = %d, want %d", name, got, n)
		}
	}
	if _, err := h.Call(steps, "stepThreads", o, "t7"); err == nil || !strings.Contains(err.Error(), "t7") {
		t.Errorf("stepThreads of a scenario not in threads=8,16,1000: %v, want an error naming it", err)
	}
}

// conn.js's prepare-only prefix is the driver's PrepareMarker (the one source: JavaScript
// cannot import a Go constant).
func TestPrepareMarkerIsTheDrivers(t *testing.T) {
	h := New(t, "")
	if got := h.Import("lib/conn.js").Get("PREPARE").String(); got != mysqldrv.PrepareMarker {
		t.Errorf("k6/lib/conn.js PREPARE = %q, k6/driver/mysql PrepareMarker = %q", got, mysqldrv.PrepareMarker)
	}
}
