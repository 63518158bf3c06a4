package tbs

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"tidb-bench-stack/k6/ext/results"
)

// CpuSeconds is the CPU time (user + system) the process has used.
func (m *Module) CpuSeconds() float64 { //nolint:revive // JS name cpuSeconds
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// RssBytes is the process' resident memory (Linux /proc/self/statm), 0 where unknown.
func (m *Module) RssBytes() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		return 0
	}
	return pages * float64(os.Getpagesize())
}

// CheckResultsDir: setup() of oltp.js checks the folder its summary goes to (results.Check:
// made when missing, writable, space left) before any load, so that a stock `k6 run` with a
// results_dir that cannot be written stops at once with the reason, instead of printing "failed
// to handle the end-of-test summary" once the whole run is over and its results are lost.
func (m *Module) CheckResultsDir(dir string) error { return results.Check(dir) }

// Cores is the number of CPUs the process may run on (its affinity mask at start).
func (m *Module) Cores() int { return runtime.NumCPU() }

// RunGCPercent is the collector's target once the VUs of a run with at least ManyThreads
// threads run (GOGC, 100 by default): at 40 the heap grows to 1.4 times what is live before a
// collection, not 2. A VU's state is made at init and then mostly stays (its runtime, modules,
// connection), so a collection frees little: at 128 threads the default's headroom was a
// third of k6's resident memory. Collecting more often costs client CPU (GOGC 50 against 100 at
// 64 threads: +11% per query, k6 alone, interleaved), so runs of fewer threads, where memory is
// small and the client's CPU per query is what limits it, keep the default; 40 against 50 at
// 128 threads cost nothing measurable and took 3-8 MiB off the 128-thread peak (docs/bench.md).
const (
	RunGCPercent = 40
	ManyThreads  = 100
)

// TuneGC sets the collector's target to RunGCPercent for a run whose largest step has
// `threads` >= ManyThreads, unless the user set GOGC (then theirs stays); it returns the target
// in effect. oltp.js calls it in setup(), which k6 runs once every VU is initialized: during
// init the heap only grows, and collecting more often there would cost CPU and save nothing.
func (m *Module) TuneGC(threads int) int {
	if v, ok := os.LookupEnv("GOGC"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
		return 100 // GOGC=off or a bad value: the runtime's own handling stands
	}
	if threads < ManyThreads {
		return 100
	}
	debug.SetGCPercent(RunGCPercent)
	return RunGCPercent
}
