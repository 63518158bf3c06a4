package tbs

import (
	"os"
	"runtime"
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
