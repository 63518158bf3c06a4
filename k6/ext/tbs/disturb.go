package tbs

// What disturbed a step (issue #43): the host's CPU over the step's measured window, read from
// /proc at the window's start and end (hostSample), and a canary timed just before the step's
// load and just after its window (canary). disturbance() turns two samples into the manifest's
// steps[i].disturbance (k6/lib/disturb.js schedules the reads; docs/report.md says what each
// figure is and the rule that calls a sample disturbed).
//
//   - CPU steal: the `steal` column of /proc/stat's `cpu` line, as a share of every CPU's time
//     in the window: time the hypervisor gave to another guest while this one wanted to run.
//   - CPU pressure: /proc/pressure/cpu's `some ... total=` (µs in which at least one task waited
//     for a CPU), as a share of the window's wall time; kernels without PSI (before 4.20, or
//     built or booted without it) have no such file: n/a, with the reason.
//   - the database's and the client's CPU: utime + stime of /proc/<pid>/stat (the process
//     listening on the target's port, listenerPid; and k6's own, /proc/self/stat), in clock ticks.
//   - the other processes' CPU: the host's busy time (all but idle, iowait and steal) minus both.
//
// Clock ticks (USER_HZ) are 100 on every Linux architecture Go runs k6 on (sysconf(_SC_CLK_TCK)
// needs cgo, which the build does not use); /proc/stat and /proc/<pid>/stat count in the same
// ticks, so shares do not depend on it.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

const userHz = 100

// cpuTimes: /proc/stat's aggregate `cpu` line, in ticks summed over every CPU.
type cpuTimes struct {
	total, idle, steal float64 // total: user..steal (guest is inside user); idle: idle + iowait
	cpus               int
}

// parseProcStat reads /proc/stat's text: the `cpu ` line and the number of `cpuN` lines.
func parseProcStat(text string) (cpuTimes, error) {
	var c cpuTimes
	found := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			c.cpus++
			continue
		}
		if len(f) < 9 {
			return c, fmt.Errorf("/proc/stat: the cpu line has %d columns, at least 8 values expected: %q", len(f)-1, line)
		}
		var v [8]float64
		for i := range v {
			x, err := strconv.ParseFloat(f[i+1], 64)
			if err != nil {
				return c, fmt.Errorf("/proc/stat: cpu column %d is not a number: %q", i+1, f[i+1])
			}
			v[i] = x
		}
		for _, x := range v {
			c.total += x
		}
		c.idle = v[3] + v[4]
		c.steal = v[7]
		found = true
	}
	if !found {
		return c, errors.New("/proc/stat has no cpu line")
	}
	return c, nil
}

// parsePSI reads /proc/pressure/cpu's text: the `some` line's total (µs).
func parsePSI(text string) (float64, error) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				return strconv.ParseFloat(v, 64)
			}
		}
	}
	return 0, errors.New("no 'some ... total=' line")
}

// parsePidStat reads /proc/<pid>/stat's text: the process' name and its utime + stime (ticks).
// The name is in parentheses and may hold spaces and parentheses itself: the fields count from
// the last ')'.
func parsePidStat(text string) (string, float64, error) {
	open, shut := strings.IndexByte(text, '('), strings.LastIndexByte(text, ')')
	if open < 0 || shut < open {
		return "", 0, fmt.Errorf("not a /proc/<pid>/stat line: %q", text)
	}
	f := strings.Fields(text[shut+1:])
	if len(f) < 13 { // f[0] is field 3 (state); utime and stime are fields 14 and 15
		return "", 0, fmt.Errorf("/proc/<pid>/stat has %d fields after the name, 13 expected", len(f))
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	s, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return "", 0, fmt.Errorf("/proc/<pid>/stat: utime %q, stime %q are not numbers", f[11], f[12])
	}
	return text[open+1 : shut], u + s, nil
}

// listenInodes reads /proc/net/tcp or tcp6's text: the socket inodes listening on `port`.
func listenInodes(text string, port int) []string {
	var out []string
	want := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		// sl local_address rem_address st ... inode (field 10)
		if len(f) < 10 || f[3] != "0A" || !strings.HasSuffix(f[1], want) {
			continue
		}
		if f[9] != "0" {
			out = append(out, f[9])
		}
	}
	return out
}

// listenerPid: the process of this host that listens on TCP `port` (in k6's network namespace),
// found by its socket's inode among /proc/<pid>/fd; 0 and why when none can be seen.
func listenerPid(proc string, port int) (int, string) {
	var inodes []string
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		b, err := os.ReadFile(filepath.Join(proc, f))
		if err == nil {
			inodes = append(inodes, listenInodes(string(b), port)...)
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Sprintf("no socket listens on port %d in k6's network namespace (/proc/net/tcp)", port)
	}
	want := map[string]bool{}
	for _, i := range inodes {
		want["socket:["+i+"]"] = true
	}
	dirs, _ := filepath.Glob(filepath.Join(proc, "[0-9]*"))
	var pids []int
	for _, d := range dirs {
		if p, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, p)
		}
	}
	sort.Ints(pids)
	for _, p := range pids {
		fds, err := os.ReadDir(filepath.Join(proc, strconv.Itoa(p), "fd"))
		if err != nil {
			continue // another user's process: not ours to read
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(proc, strconv.Itoa(p), "fd", fd.Name()))
			if err == nil && want[l] {
				return p, ""
			}
		}
	}
	return 0, fmt.Sprintf("a socket listens on port %d, but no process whose file descriptors k6 may read holds it "+
		"(another user's: run k6 as that user or root to measure the database's CPU)", port)
}

// ListenerPid is the process listening on TCP `port` on this host: {pid, name} or {pid: 0, why}.
func (m *Module) ListenerPid(port int) map[string]any {
	pid, why := listenerPid("/proc", port)
	if pid == 0 {
		return map[string]any{"pid": 0, "name": "", "why": why}
	}
	return map[string]any{"pid": pid, "name": processName("/proc", pid), "why": ""}
}

// processName: the program of process pid (its command line's first word, without the folder;
// the kernel's comm, cut at 15 characters, where the command line cannot be read).
func processName(proc string, pid int) string {
	if b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "cmdline")); err == nil {
		if arg, _, _ := strings.Cut(string(b), "\x00"); arg != "" {
			return filepath.Base(arg)
		}
	}
	if b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat")); err == nil {
		name, _, _ := parsePidStat(string(b))
		return name
	}
	return ""
}

// HostSample is one read of the host's CPU counters (what hostSample gives and disturbance takes).
type HostSample struct {
	At        float64 `js:"at"`          // epoch ms
	Cpus      int     `js:"cpus"`        // CPUs in /proc/stat
	Total     float64 `js:"total"`       // ticks of every CPU, idle included
	Idle      float64 `js:"idle"`        // idle + iowait ticks
	Steal     float64 `js:"steal"`       // steal ticks
	PsiSomeUs float64 `js:"psi_some_us"` // /proc/pressure/cpu some total (µs); -1: n/a
	PsiWhy    string  `js:"psi_why"`     // why n/a
	Pid       int     `js:"pid"`         // the database's process (0: none)
	PidTicks  float64 `js:"pid_ticks"`   // its utime + stime; -1: not read
	SelfTicks float64 `js:"self_ticks"`  // k6's own utime + stime
	Error     string  `js:"error"`       // /proc/stat could not be read
}

func (s HostSample) data() map[string]any {
	return map[string]any{"at": s.At, "cpus": s.Cpus, "total": s.Total, "idle": s.Idle, "steal": s.Steal,
		"psi_some_us": s.PsiSomeUs, "psi_why": s.PsiWhy, "pid": s.Pid, "pid_ticks": s.PidTicks,
		"self_ticks": s.SelfTicks, "error": s.Error}
}

func readHostSample(proc string, pid int) HostSample {
	s := HostSample{At: now(), PsiSomeUs: -1, PidTicks: -1, SelfTicks: -1, Pid: pid}
	if b, err := os.ReadFile(filepath.Join(proc, "stat")); err != nil {
		s.Error = err.Error()
	} else if c, err := parseProcStat(string(b)); err != nil {
		s.Error = err.Error()
	} else {
		s.Cpus, s.Total, s.Idle, s.Steal = c.cpus, c.total, c.idle, c.steal
	}
	if b, err := os.ReadFile(filepath.Join(proc, "pressure/cpu")); err != nil {
		s.PsiWhy = "this kernel has no " + filepath.Join(proc, "pressure/cpu") + " (PSI: Linux 4.20 or later, CONFIG_PSI, not psi=0)"
	} else if v, err := parsePSI(string(b)); err != nil {
		s.PsiWhy = "/proc/pressure/cpu: " + err.Error()
	} else {
		s.PsiSomeUs = v
	}
	if b, err := os.ReadFile(filepath.Join(proc, "self/stat")); err == nil {
		if _, t, err := parsePidStat(string(b)); err == nil {
			s.SelfTicks = t
		}
	}
	if pid > 0 {
		if b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat")); err == nil {
			if _, t, err := parsePidStat(string(b)); err == nil {
				s.PidTicks = t
			}
		}
	}
	return s
}

// HostSample reads the host's CPU counters now (/proc), with process `pid`'s CPU (0: none).
func (m *Module) HostSample(pid int) map[string]any { return readHostSample("/proc", pid).data() }

// disturbance: the figures of the window between samples a and b (the manifest's
// steps[i].disturbance without the canaries, which k6/lib/disturb.js adds).
func disturbance(a, b HostSample) map[string]any {
	if a.Error != "" || b.Error != "" {
		return map[string]any{"available": false, "why": "reading /proc/stat failed: " + a.Error + b.Error}
	}
	total := b.Total - a.Total
	window := (b.At - a.At) / 1000
	if total <= 0 || window <= 0 {
		return map[string]any{"available": false, "why": "no CPU time passed between the window's two reads of /proc/stat"}
	}
	busy := (total - (b.Idle - a.Idle) - (b.Steal - a.Steal)) / userHz
	out := map[string]any{
		"available": true, "window": []float64{a.At, b.At}, "window_s": window, "cpus": b.Cpus,
		"cpu_s": total / userHz, "busy_cpu_s": busy, "steal_share": (b.Steal - a.Steal) / total,
	}
	if a.PsiSomeUs >= 0 && b.PsiSomeUs >= 0 {
		out["psi_some_share"] = (b.PsiSomeUs - a.PsiSomeUs) / (window * 1e6)
	} else {
		out["psi_some_share"] = nil
		out["psi_why"] = a.PsiWhy + b.PsiWhy
		if out["psi_why"] == "" {
			out["psi_why"] = "not read"
		}
	}
	client := 0.0
	if a.SelfTicks >= 0 && b.SelfTicks >= 0 {
		client = (b.SelfTicks - a.SelfTicks) / userHz
		out["client_cpu_s"] = client
	} else {
		out["client_cpu_s"] = nil
	}
	if a.Pid > 0 && a.Pid == b.Pid && a.PidTicks >= 0 && b.PidTicks >= 0 {
		db := (b.PidTicks - a.PidTicks) / userHz
		other := busy - db - client
		out["db_cpu_s"], out["other_cpu_s"], out["other_share"] = db, other, other/(total/userHz)
	} else {
		out["db_cpu_s"], out["other_cpu_s"], out["other_share"] = nil, nil, nil
		if a.Pid > 0 {
			out["db_why"] = fmt.Sprintf("the database's process %d could not be read at both ends of the window (it restarted, or ended)", a.Pid)
		}
	}
	return out
}

// Disturbance is what disturbed the window between two hostSample reads.
func (m *Module) Disturbance(a, b HostSample) map[string]any { return disturbance(a, b) }

// The canary: a fixed amount of CPU work (integer arithmetic and reads and writes over a
// 256 KiB table, which fits the caches of every server CPU), timed. The work never changes
// (CanaryWork names it, and the manifest records the name): a slower host, or a host whose CPU
// is shared at that moment, takes longer. About 11 ms on this project's 2-core cloud VM.
const (
	canaryRounds = 1 << 22
	canaryTable  = 1 << 15 // uint64s: 256 KiB
	// CanaryWork names the canary's work; change it whenever the work changes.
	CanaryWork = "xorshift64 over a 256 KiB table, 4194304 rounds (k6/ext/tbs/disturb.go)"
)

var canarySink uint64 // keeps the work from being optimised away

func canaryOnce(table []uint64) time.Duration {
	t0 := time.Now()
	x := uint64(0x9E3779B97F4A7C15)
	var acc uint64
	for i := 0; i < canaryRounds; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		j := x & (canaryTable - 1)
		table[j] += x
		acc += table[(j*7+1)&(canaryTable-1)]
	}
	canarySink += acc
	return time.Since(t0)
}

// canary: the fastest and the median of `repeats` timings of the canary's work (ns).
func canary(repeats int) (float64, float64) {
	if repeats < 1 {
		repeats = 1
	}
	table := make([]uint64, canaryTable)
	ts := make([]float64, repeats)
	for i := range ts {
		ts[i] = float64(canaryOnce(table).Nanoseconds())
	}
	sort.Float64s(ts)
	return ts[0], ts[len(ts)/2]
}

// Canary times the canary's fixed work `repeats` times: {min_ns, median_ns, repeats, work}.
func (m *Module) Canary(repeats int) map[string]any {
	lo, med := canary(repeats)
	return map[string]any{"min_ns": lo, "median_ns": med, "repeats": repeats, "work": CanaryWork}
}
