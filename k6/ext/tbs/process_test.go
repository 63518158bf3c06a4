package tbs

import (
	"os"
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target (SetGCPercent returns the one it replaces).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestTuneGCOnlyForManyThreadsAndNeverOverTheUsersGOGC(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	m := &Module{}
	t.Setenv("GOGC", "")
	// t.Setenv cannot unset: the cases without GOGC run with it removed from the environment
	unsetenv(t, "GOGC")
	debug.SetGCPercent(100)
	if got := m.TuneGC(ManyThreads - 1); got != 100 || gcPercent() != 100 {
		t.Errorf("TuneGC(%d) = %d, GC at %d: want the default kept (100)", ManyThreads-1, got, gcPercent())
	}
	if got := m.TuneGC(1500); got != RunGCPercent || gcPercent() != RunGCPercent {
		t.Errorf("TuneGC(1500) = %d, GC at %d: want %d", got, gcPercent(), RunGCPercent)
	}
	debug.SetGCPercent(100)
	t.Setenv("GOGC", "80")
	if got := m.TuneGC(1500); got != 80 || gcPercent() != 100 {
		t.Errorf("with GOGC=80: TuneGC = %d, GC at %d: want the user's 80 and the runtime left alone", got, gcPercent())
	}
}

func unsetenv(t *testing.T, k string) {
	t.Helper()
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}
