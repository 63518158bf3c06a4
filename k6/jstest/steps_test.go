package jstest

import (
	"encoding/json"
	"fmt"
	"testing"
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
	start := 0.0
	for i, n := range []int{8, 16, 1000} {
		s := sc[fmt.Sprintf("t%d", n)]
		w := win[i]
		c := connect[n]
		length := c + 5 + 30
		want := map[string]any{"executor": "constant-vus", "exec": "default", "vus": float64(n),
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
