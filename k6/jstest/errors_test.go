package jstest

// events.js: sysbench's error handling around an event (runEvent): an ignored error rolls
// back and restarts the event, a lost connection (when ignored) reconnects, prepares again
// and restarts it, any other error aborts the test with a message naming the target.

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/grafana/sobek"
)

// failOnce makes the recording server fail statement number n (1-based, counted from now)
// with err, once.
func failOnce(h *H, n int64, err error) {
	var seen atomic.Int64
	h.Server.failure = func(string) error {
		if seen.Add(1) == n {
			return err
		}
		return nil
	}
}

func queries(ss []Stmt) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Kind+" "+s.Query)
	}
	return out
}

// samples: the metric samples the stand-in k6/metrics recorded, as "metric code=.. ignored=.." lines.
func samples(t *testing.T, h *H, metric string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, s := range h.Run(`__k6.samples`).Export().([]any) {
		m := s.(map[string]any)
		if m["metric"] == metric {
			out = append(out, m["tags"].(map[string]any))
		}
	}
	return out
}

func runEventOnce(t *testing.T, s *step) float64 {
	t.Helper()
	v, err := s.run(sobek.Undefined())
	if err != nil {
		t.Fatalf("runEvent threw: %v", err)
	}
	return v.ToFloat()
}

func TestAnIgnoredErrorRollsBackAndRestartsTheEvent(t *testing.T) {
	h := New(t, "")
	s := startStep(t, h, map[string]string{"workload": "oltp_read_write", "rand_seed": "5", "point_selects": "2"}, 0, 1, 0)
	whole := queries(s.call(t, s.event)) // one event's statements, for their shape
	failOnce(h, 3, errors.New("Error 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"))
	if end := runEventOnce(t, s); end < 0 {
		t.Fatalf("the event did not finish: %v", end)
	}
	got := queries(h.Server.take())
	want := append(append(append([]string{}, whole[:3]...), "exec ROLLBACK"), whole...)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after a deadlock on statement 3:\n%s\nwant (the attempt, ROLLBACK, the whole event again):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	errs := samples(t, h, "oltp_errors")
	if len(errs) != 1 || errs[0]["code"] != "1213" || errs[0]["ignored"] != "true" {
		t.Errorf("oltp_errors samples: %v, want one with code 1213 ignored", errs)
	}
	if a := h.Run(`__k6.aborted.length`).ToInteger(); a != 0 {
		t.Errorf("an ignored error aborted the test")
	}
}

func TestAnErrorNotIgnoredAbortsNamingTheTarget(t *testing.T) {
	h := New(t, "")
	s := startStep(t, h, map[string]string{"workload": "oltp_insert", "mysql_password": "pw-not-shown"}, 0, 1, 0)
	failOnce(h, 1, errors.New("Error 1062 (23000): Duplicate entry '5' for key 'PRIMARY'"))
	// k6's exec.test.abort() ends the test there (the stand-in throws, as k6's interrupts the VU)
	if v, err := s.run(sobek.Undefined()); err == nil || !strings.Contains(err.Error(), "test aborted") {
		t.Errorf("runEvent went on after an error not ignored: %v, %v", v, err)
	}
	ab := h.Run(`__k6.aborted`).Export().([]any)
	if len(ab) != 1 {
		t.Fatalf("aborted %d times, want once", len(ab))
	}
	msg := ab[0].(string)
	for _, w := range []string{"error 1062", h.Host + ":4000", "user 'sbtest'", "Duplicate entry"} {
		if !strings.Contains(msg, w) {
			t.Errorf("the abort message does not name %q: %s", w, msg)
		}
	}
	if strings.Contains(msg, "pw-not-shown") {
		t.Errorf("the abort message shows the password: %s", msg)
	}
	errs := samples(t, h, "oltp_errors")
	if len(errs) != 1 || errs[0]["code"] != "1062" || errs[0]["ignored"] != "false" {
		t.Errorf("oltp_errors samples: %v", errs)
	}
}

func TestALostConnectionReconnectsPreparesAgainAndRestarts(t *testing.T) {
	h := New(t, "")
	s := startStep(t, h, map[string]string{"workload": "oltp_point_select", "mysql_ignore_errors": "2013", "tables": "2"}, 0, 1, 0)
	var prepared []string
	for _, st := range s.setup {
		if st.Kind == "prepare" {
			prepared = append(prepared, "prepare "+st.Query)
		}
	}
	opens := h.Server.opens
	failOnce(h, 1, errors.New("invalid connection"))
	if end := runEventOnce(t, s); end < 0 {
		t.Fatalf("the event did not finish after the reconnect")
	}
	got := queries(h.Server.take())
	if h.Server.opens != opens+1 {
		t.Errorf("%d new connections after a lost one, want 1", h.Server.opens-opens)
	}
	// the failed statement, the statements prepared again on the new connection, the event again
	if len(got) != 1+len(prepared)+1 || strings.Join(got[1:1+len(prepared)], "\n") != strings.Join(prepared, "\n") ||
		!strings.HasPrefix(got[len(got)-1], "exec SELECT c FROM sbtest") {
		t.Errorf("after a lost connection: %v (prepared at connect: %v)", got, prepared)
	}
	if r := samples(t, h, "oltp_reconnects"); len(r) != 1 {
		t.Errorf("oltp_reconnects samples: %v, want 1", r)
	}
	if e := samples(t, h, "oltp_errors"); len(e) != 0 {
		t.Errorf("a reconnect counted as an error: %v", e)
	}
	var events []string
	for _, m := range samples(t, h, "oltp_marker") {
		events = append(events, m["event"].(string))
	}
	if strings.Join(events, ",") != "outage_start,outage_end" {
		t.Errorf("outage markers: %v", events)
	}
}
