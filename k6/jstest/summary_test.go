package jstest

// summary.js: the end of a run, from k6's end-of-test data (made up here, as k6 gives it to
// handleSummary) and the step's sysbench histogram in k6/x/tbs (filled here with known
// latencies): the per-step figures, the printed summary and the run's JSON file.

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// summaryDriverJS: summarize() of a run of steps t4 and t8 over made-up end-of-test data, with
// t4's histogram filled with 100 events of 1..100 ms.
const summaryDriverJS = `
import { parseOptions } from './lib/config.js';
import { summarize, histName } from './lib/summary.js';
import tbs from 'k6/x/tbs';
export function run(testid) {
  // t4 ended 2 s ago, t8 starts in 4 s (grace 5 s, connect 1 s): summarize() runs in between
  const runStart = Date.now() - 13000;
  const o = parseOptions({ threads: '4,8', time: '10', connect_time: '1', grace_time: '5', mysql_password: 'pw-secret',
    workload: 'oltp_read_only', results_dir: 'out' });
  // step t4: 100 events of 1..100 ms, ending over its measured window; t8 never ran
  const measureStart = runStart + 1000;
  const hist = tbs.histogram(histName(testid, 4));
  for (let i = 1; i <= 100; i++) hist.add(i, measureStart + i * 100);
  const sel = 'threads:4,warmup:false';
  const c = (n) => ({ values: { count: n } });
  const data = {
    metrics: {
      ['oltp_queries{' + sel + '}']: c(1800), ['oltp_queries{' + sel + ',kind:read}']: c(1400),
      ['oltp_queries{' + sel + ',kind:other}']: c(400), ['oltp_transactions{' + sel + '}']: c(200),
      ['oltp_errors{' + sel + '}']: c(3),
    },
    setup_data: { testid, version: 'v9.9.9', run_start: runStart, host: {}, variables: {}, instances: 1, instance_id: '0' },
    state: { testRunDurationMs: 12345 },
  };
  return { files: summarize(data, o, tbs), runStart };
}`

func TestSummaryFiguresAndFile(t *testing.T) {
	h := New(t, "")
	testid := fmt.Sprintf("jstest-summary-%s", h.Host) // the histograms are process-wide: a name of its own
	h.Files["jstest_summary.js"] = summaryDriverJS
	ns := h.Import("jstest_summary.js")
	res := h.MustCall(ns, "run", testid).Export().(map[string]any)
	files, runStart := res["files"].(map[string]any), toFloat(res["runStart"])
	stdout, _ := files["stdout"].(string)
	raw, ok := files["out/"+testid+".json"].(string)
	if !ok {
		t.Fatalf("no out/%s.json among %v", testid, keys(files))
	}
	if strings.Contains(raw, "pw-secret") || strings.Contains(stdout, "pw-secret") {
		t.Error("the summary shows the password")
	}
	var out struct {
		Workload    string         `json:"workload"`
		Interrupted bool           `json:"interrupted"`
		Options     map[string]any `json:"options"`
		Steps       []struct {
			Threads  int                `json:"threads"`
			Elapsed  float64            `json:"elapsed_s"`
			Queries  map[string]float64 `json:"queries"`
			Tx       float64            `json:"transactions"`
			Errors   float64            `json:"errors"`
			QPS, TPS float64
			Latency  map[string]float64 `json:"latency_ms"`
			Window   map[string]float64 `json:"window"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Options["mysql_password"]; ok {
		t.Error("options keep mysql_password")
	}
	// t8 had not started at the end: the run is interrupted
	if len(out.Steps) != 1 || !out.Interrupted || out.Workload != "oltp_read_only" {
		t.Fatalf("steps %d, interrupted %v, workload %s", len(out.Steps), out.Interrupted, out.Workload)
	}
	s := out.Steps[0]
	// the measured window: run start + connect (1 s) .. + 10 s; the last event ended inside it,
	// so the elapsed time is the planned 10 s
	if s.Window["measure_start"] != runStart+1000 || s.Window["measure_end"] != runStart+11000 || s.Elapsed != 10 {
		t.Errorf("window %v, elapsed %v", s.Window, s.Elapsed)
	}
	if s.Queries["read"] != 1400 || s.Queries["write"] != 0 || s.Queries["other"] != 400 || s.Queries["total"] != 1800 ||
		s.Tx != 200 || s.Errors != 3 {
		t.Errorf("counts %v tx %v errors %v", s.Queries, s.Tx, s.Errors)
	}
	// rates over the elapsed time; latency from the histogram: sysbench's nearest rank of
	// 1..100 ms (the bucket's value, within the bucket ratio 1.018 of the exact rank)
	var js map[string]any
	_ = json.Unmarshal([]byte(raw), &js)
	st := js["steps"].([]any)[0].(map[string]any)
	if st["qps"] != 180.0 || st["tps"] != 20.0 {
		t.Errorf("qps %v tps %v, want 180 and 20", st["qps"], st["tps"])
	}
	for k, exact := range map[string]float64{"p50": 50, "p95": 95, "p99": 99, "pct_value": 95} {
		if v := s.Latency[k]; math.Abs(v/exact-1) > 0.0185 {
			t.Errorf("latency %s = %v, want about %v", k, v, exact)
		}
	}
	if s.Latency["min"] != 1 || s.Latency["max"] != 100 || s.Latency["avg"] != 50.5 {
		t.Errorf("latency %v", s.Latency)
	}
	for _, w := range []string{"SQL statistics (oltp_read_only, testid " + testid, "threads: 4   measured: 10.000s of 10s planned",
		"queries performed:  read: 1400  write: 0  other: 400  total: 1800", "transactions:       200  (20.00 per sec.)",
		"| 4 | 180.00 | 20.00 |"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("the printed summary has no %q:\n%s", w, stdout)
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSummaryThreadsFairness: each step gives sysbench's threads fairness (events and
// execution time per thread: avg and stddev, as sysbench, plus min and max), and a thread
// with no events, or below timing.fair_share of the average, is a WARNING in the printed
// summary and in the step's figures (the run's JSON file), naming the thread.
func TestSummaryThreadsFairness(t *testing.T) {
	h := New(t, "")
	h.Files["jstest_fair.js"] = `
import { parseOptions } from './lib/config.js';
import { fairnessOf, summaryText } from './lib/summary.js';
export function run(events) {
  const o = parseOptions({ threads: '4', workload: 'select_random_points' });
  const f = fairnessOf({ ids: [0, 1, 2, 3], events, time_ms: [2000, 1000, 2000, 3000] });
  const step = { threads: 4, seconds: 2, elapsed_s: 2, queries: { read: 1, write: 0, other: 0, total: 1 }, transactions: 1,
    errors: 0, reconnects: 0, latency_ms: { min: 0, avg: 0, max: 0, p50: 0, p95: 0, p99: 0, pct: 95, pct_value: 0 }, fairness: f };
  return { f: JSON.stringify(f), text: summaryText([step], o, { testid: 'x', version: 'v' }) };
}`
	ns := h.Import("jstest_fair.js")
	type fair struct {
		Threads int `json:"threads"`
		Events  struct{ Avg, Stddev, Min, Max float64 }
		TimeS   struct{ Avg, Stddev, Min, Max float64 } `json:"time_s"`
		Warn    []string                                `json:"warnings"`
	}
	get := func(events []int) (fair, string) {
		res := h.MustCall(ns, "run", events).Export().(map[string]any)
		var f fair
		if err := json.Unmarshal([]byte(res["f"].(string)), &f); err != nil {
			t.Fatal(err)
		}
		return f, res["text"].(string)
	}
	even, text := get([]int{100, 100, 100, 100})
	if even.Threads != 4 || even.Events.Avg != 100 || even.Events.Stddev != 0 || len(even.Warn) != 0 {
		t.Errorf("four even threads: %+v", even)
	}
	if math.Abs(even.TimeS.Avg-2) > 1e-9 || math.Abs(even.TimeS.Stddev-math.Sqrt(0.5)) > 1e-9 || even.TimeS.Min != 1 || even.TimeS.Max != 3 {
		t.Errorf("execution time (s) over the threads: %+v, want avg 2, stddev sqrt(0.5) (population), min 1, max 3", even.TimeS)
	}
	for _, want := range []string{"threads fairness (4 threads):", "events (avg/stddev):          100.0000/0.00   (min/max: 100/100)",
		"execution time (avg/stddev):  2.0000/0.71   (min/max: 1.0000/3.0000)"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "WARNING") {
		t.Errorf("even threads warned:\n%s", text)
	}
	// the stall of issue #42: two of three threads stop after one event
	stalled, text := get([]int{3000, 1, 0, 2990})
	if len(stalled.Warn) != 2 || !strings.HasPrefix(stalled.Warn[0], "thread 1 ran 1 event (") || !strings.HasPrefix(stalled.Warn[1], "thread 2 ran 0 events (") {
		t.Errorf("warnings %q, want threads 1 and 2 named", stalled.Warn)
	}
	if !strings.Contains(text, "WARNING: thread 2 ran 0 events") || !strings.Contains(text, "its own slice of k") {
		t.Errorf("summary does not warn of thread 2, or lacks select_random_*'s note:\n%s", text)
	}
	// just above the share: no warning; just below it: one
	if f, _ := get([]int{1000, 1000, 1000, 109}); len(f.Warn) != 0 {
		t.Errorf("a thread at 14%% of the average warned: %q", f.Warn)
	}
	if f, _ := get([]int{1000, 1000, 1000, 70}); len(f.Warn) != 1 {
		t.Errorf("a thread at 9%% of the average: warnings %q, want one", f.Warn)
	}
}
