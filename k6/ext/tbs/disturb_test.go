package tbs

import (
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fixtures: the files as Linux 6.x writes them.
const statText = `cpu  43632 7 6050 30301 397 11 182 444 5 0
cpu0 21545 0 3052 15360 270 0 62 230 0 0
cpu1 22086 0 2997 14941 126 0 120 213 0 0
intr 1 2 3
ctxt 99
`

const psiText = `some avg10=46.30 avg60=49.71 avg300=29.83 total=127107837
full avg10=0.00 avg60=0.00 avg300=0.00 total=0
`

// a process name with a space and a ')' in it; utime 1200, stime 34
const pidStatText = "4242 (tidb server) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1200 34 0 0 20 0 40 0 100 123456 789 18446744073709551615\n"

const tcpText = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0FA0 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5551 1 0000000000000000 100 0 0 10 0
   1: 0100007F:0FA0 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 5552 1 0000000000000000 20 4 29 10 -1
   2: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5553 1 0000000000000000 100 0 0 10 0
`

func TestParseProcStat(t *testing.T) {
	c, err := parseProcStat(statText)
	if err != nil {
		t.Fatal(err)
	}
	// user..steal: 43632+7+6050+30301+397+11+182+444 (guest, 5, is inside user)
	if c.total != 81024 || c.idle != 30301+397 || c.steal != 444 || c.cpus != 2 {
		t.Fatalf("got %+v", c)
	}
	if _, err := parseProcStat("intr 1 2\n"); err == nil || !strings.Contains(err.Error(), "no cpu line") {
		t.Fatalf("no cpu line: %v", err)
	}
	if _, err := parseProcStat("cpu 1 2 3\n"); err == nil || !strings.Contains(err.Error(), "columns") {
		t.Fatalf("a short cpu line: %v", err)
	}
	if _, err := parseProcStat("cpu 1 2 3 x 5 6 7 8\n"); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("a bad number: %v", err)
	}
}

func TestParsePSI(t *testing.T) {
	v, err := parsePSI(psiText)
	if err != nil || v != 127107837 {
		t.Fatalf("got %v, %v", v, err)
	}
	if _, err := parsePSI("full avg10=0.00 total=5\n"); err == nil {
		t.Fatal("a file without a some line is not an error")
	}
}

func TestParsePidStat(t *testing.T) {
	name, ticks, err := parsePidStat(pidStatText)
	if err != nil || name != "tidb server) x" || ticks != 1234 {
		t.Fatalf("got %q %v %v", name, ticks, err)
	}
	if _, _, err := parsePidStat("4242 (x) S 1 2\n"); err == nil {
		t.Fatal("a short line is not an error")
	}
}

func TestListenInodes(t *testing.T) {
	got := listenInodes(tcpText, 4000) // 0x0FA0; the established socket (st 01) is not a listener
	if len(got) != 1 || got[0] != "5551" {
		t.Fatalf("port 4000: %v", got)
	}
	if got := listenInodes(tcpText, 3306); len(got) != 1 || got[0] != "5553" {
		t.Fatalf("port 3306: %v", got)
	}
	if got := listenInodes(tcpText, 9090); len(got) != 0 {
		t.Fatalf("port 9090: %v", got)
	}
}

// A made-up /proc: the listener's inode held by pid 77's fd 5.
func TestListenerPidInAFakeProc(t *testing.T) {
	proc := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(proc, "net"), 0o755))
	must(os.WriteFile(filepath.Join(proc, "net/tcp"), []byte(tcpText), 0o644))
	for _, p := range []string{"12", "77"} {
		must(os.MkdirAll(filepath.Join(proc, p, "fd"), 0o755))
	}
	must(os.Symlink("socket:[9999]", filepath.Join(proc, "12/fd/3")))
	must(os.Symlink("socket:[5551]", filepath.Join(proc, "77/fd/5")))
	if pid, why := listenerPid(proc, 4000); pid != 77 {
		t.Fatalf("port 4000: pid %d (%s)", pid, why)
	}
	// its name: the command line's program, else the kernel's (cut) comm
	must(os.WriteFile(filepath.Join(proc, "77/cmdline"), []byte("/opt/tidb/bin/tidb-server-v8.5.1\x00-P\x004000\x00"), 0o644))
	must(os.WriteFile(filepath.Join(proc, "12/stat"), []byte(pidStatText), 0o644))
	if n := processName(proc, 77); n != "tidb-server-v8.5.1" {
		t.Fatalf("name from cmdline: %q", n)
	}
	if n := processName(proc, 12); n != "tidb server) x" {
		t.Fatalf("name from stat: %q", n)
	}
	if pid, why := listenerPid(proc, 3306); pid != 0 || !strings.Contains(why, "no process") {
		t.Fatalf("port 3306 (nobody holds 5553): pid %d, %q", pid, why)
	}
	if pid, why := listenerPid(proc, 9090); pid != 0 || !strings.Contains(why, "no socket listens on port 9090") {
		t.Fatalf("port 9090: pid %d, %q", pid, why)
	}
}

// The real /proc: this test's own listener is found as this process, and its sample is sane.
func TestListenerPidAndSampleOnThisHost(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if pid, why := listenerPid("/proc", l.Addr().(*net.TCPAddr).Port); pid != os.Getpid() {
		t.Fatalf("listener: pid %d (%s), want %d", pid, why, os.Getpid())
	}
	s := readHostSample("/proc", os.Getpid())
	if s.Error != "" || s.Total <= 0 || s.Cpus < 1 || s.SelfTicks < 0 || s.PidTicks < 0 {
		t.Fatalf("sample %+v", s)
	}
	if s.PsiSomeUs < 0 && s.PsiWhy == "" {
		t.Fatal("PSI n/a without a reason")
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestDisturbance(t *testing.T) {
	// 10 s on 2 CPUs = 2000 ticks: 100 steal, 500 idle, so 1400 busy; the database 800, k6 400
	a := HostSample{At: 1000, Cpus: 2, Total: 10000, Idle: 3000, Steal: 50, PsiSomeUs: 1e6, Pid: 7, PidTicks: 100, SelfTicks: 10}
	b := HostSample{At: 11000, Cpus: 2, Total: 12000, Idle: 3500, Steal: 150, PsiSomeUs: 3.5e6, Pid: 7, PidTicks: 900, SelfTicks: 410}
	d := disturbance(a, b)
	want := map[string]float64{"window_s": 10, "cpu_s": 20, "busy_cpu_s": 14, "steal_share": 0.05,
		"psi_some_share": 0.25, "db_cpu_s": 8, "client_cpu_s": 4, "other_cpu_s": 2, "other_share": 0.1}
	for k, v := range want {
		got, ok := d[k].(float64)
		if !ok || !near(got, v) {
			t.Errorf("%s = %v, want %v", k, d[k], v)
		}
	}
	if d["available"] != true {
		t.Error("not available")
	}
	// no PSI, no database: n/a with reasons, never a number made up
	a.PsiSomeUs, b.PsiSomeUs, a.PsiWhy = -1, -1, "no PSI here"
	a.PidTicks = -1
	d = disturbance(a, b)
	if d["psi_some_share"] != nil || d["psi_why"] != "no PSI here" || d["db_cpu_s"] != nil || d["other_share"] != nil {
		t.Errorf("n/a: %v", d)
	}
	if !strings.Contains(d["db_why"].(string), "process 7") {
		t.Errorf("db_why: %v", d["db_why"])
	}
	if d := disturbance(a, a); d["available"] != false {
		t.Errorf("an empty window: %v", d)
	}
	b.Error = "open /proc/stat: no such file"
	if d := disturbance(a, b); d["available"] != false || !strings.Contains(d["why"].(string), "no such file") {
		t.Errorf("a failed read: %v", d)
	}
}

// The canary does the same work every time: a slower CPU shows as more ns. Its timing is
// short (about 11 ms on a quiet 2-core cloud VM; the bounds leave room for a test machine
// under load) and the minimum is not above the median.
func TestCanary(t *testing.T) {
	lo, med := canary(5)
	if lo <= 0 || med < lo {
		t.Fatalf("min %v, median %v", lo, med)
	}
	if lo > 2e9 || med > 20*lo {
		t.Fatalf("min %.1f ms, median %.1f ms: not a short, repeatable calibration", lo/1e6, med/1e6)
	}
	// the work is fixed: the same rounds leave the same sum in the table
	t1, t2 := make([]uint64, canaryTable), make([]uint64, canaryTable)
	canaryOnce(t1)
	canaryOnce(t2)
	for i := range t1 {
		if t1[i] != t2[i] {
			t.Fatalf("the canary's work differs between two runs at %d", i)
		}
	}
	t.Logf("canary: min %.2f ms, median %.2f ms", lo/1e6, med/1e6)
}
