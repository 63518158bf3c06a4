package jstest

// disturb.js: the disturb VU's reads, kept as notes, become the manifest's steps[i].disturbance
// in summary.js: here the reads are real (this host's /proc, the canary), taken 300 ms apart,
// and the step's JSON has every field with the canary and the database's process added.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

func TestStepDisturbanceFromTheDisturbVUsNotes(t *testing.T) {
	h := New(t, "")
	testid := fmt.Sprintf("jstest-disturb-%s", h.Host)
	h.Files["jstest_disturb.js"] = `
import { stepDisturbance, database } from './lib/disturb.js';
import tbs from 'k6/x/tbs';
export function run(testid, pid) {
  const note = (k, v) => tbs.note('disturb/' + testid + '/' + k, JSON.stringify(v));
  note('database', { pid, name: 'me', why: '' });
  note('t4/canary_before', tbs.canary(2));
  note('t4/start', tbs.hostSample(pid));
  const until = Date.now() + 300;
  let x = 0;
  while (Date.now() < until) x += Math.sqrt(x + 1); // CPU for this process over the window
  note('t4/end', tbs.hostSample(pid));
  note('t4/canary_after', tbs.canary(2));
  const d = stepDisturbance(tbs.notes(), testid, 4);
  return { json: JSON.stringify(d), none: stepDisturbance(tbs.notes(), testid, 8) === undefined,
    remote: database({ mysql_host: 'tidb', mysql_port: 4000 }).why };
}`
	ns := h.Import("jstest_disturb.js")
	res := h.MustCall(ns, "run", testid, os.Getpid()).Export().(map[string]any)
	var d map[string]any
	if err := json.Unmarshal([]byte(res["json"].(string)), &d); err != nil {
		t.Fatal(err, res["json"])
	}
	for _, k := range []string{"available", "window", "window_s", "cpus", "cpu_s", "busy_cpu_s", "steal_share",
		"psi_some_share", "client_cpu_s", "db_cpu_s", "other_cpu_s", "other_share", "db_process",
		"canary_before_ns", "canary_after_ns", "canary_repeats", "canary_work"} {
		if _, ok := d[k]; !ok {
			t.Errorf("no %s in %v", k, d)
		}
	}
	if d["available"] != true || d["db_process"] != fmt.Sprintf("me (pid %d)", os.Getpid()) {
		t.Errorf("disturbance %v", d)
	}
	// the database is this process here: it and "k6" are the same CPU, read one after the other
	// (self, then the pid) at each end of the window. /proc counts whole ticks (10 ms), and a
	// timer tick may land between the two reads, on each of two cores' threads: so they agree
	// within 4 ticks (a fresh-machine run read 0.22 and 0.23 s of about 0.3)
	if db, cl := d["db_cpu_s"].(float64), d["client_cpu_s"].(float64); db <= 0 || math.Abs(db-cl) > 0.04+1e-9 {
		t.Errorf("db %v, client %v", d["db_cpu_s"], d["client_cpu_s"])
	}
	if b, a := d["canary_before_ns"].(float64), d["canary_after_ns"].(float64); b < 1e5 || a < 1e5 {
		t.Errorf("canaries %v %v", b, a)
	}
	if res["none"] != true {
		t.Error("a step without reads has a disturbance")
	}
	if r, _ := res["remote"].(string); r == "" || !strings.Contains(r, "not on this host") {
		t.Errorf("a remote target: %q", r)
	}
}
