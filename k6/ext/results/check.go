// Package results: the run's results folder, checked by the launcher (k6 x tbs run) and by
// oltp.js' setup() (k6/x/tbs checkResultsDir, for a stock `k6 run`), one check for both.
package results

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Check: a run writes <results_dir>/<testid>.json at its end; make sure it can, before any
// query, rather than find out after two hours (TBS_MIN_FREE_MB, default 64 MiB free). A folder
// that does not exist is made. The error names the value, what is wrong with it and what to do.
func Check(dir string) error {
	fail := func(why string) error {
		return fmt.Errorf("results_dir %s %s: the run could not write its summary <testid>.json there; "+
			"free some space or choose another folder with -e results_dir=DIR (nothing was run)", dir, why)
	}
	if dir == "" {
		return fail("is empty")
	}
	if st, err := os.Stat(dir); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // the results folder is shared
			return fail("does not exist and cannot be created")
		}
	} else if !st.IsDir() {
		return fail("is not a folder")
	}
	probe, err := os.CreateTemp(dir, ".write-check.")
	if err != nil {
		return fail("is not writable")
	}
	_, werr := probe.WriteString("ok\n")
	cerr := probe.Close()
	_ = os.Remove(probe.Name())
	if werr != nil || cerr != nil {
		return fail("is not writable (no space left?)")
	}
	need := int64(64)
	if v, err := strconv.ParseInt(os.Getenv("TBS_MIN_FREE_MB"), 10, 64); err == nil {
		need = v
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(dir, &fs) == nil {
		free := int64(fs.Bavail) * int64(fs.Bsize) / (1 << 20) //nolint:gosec,unconvert // sizes fit
		if free < need {
			return fail(fmt.Sprintf("has only %d MiB free (need %d MiB, TBS_MIN_FREE_MB)", free, need))
		}
	}
	return nil
}
