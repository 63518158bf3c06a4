package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// checkResults: a run writes <results_dir>/<testid>.json at its end; make sure it can, before
// any query, rather than find out after two hours (TBS_MIN_FREE_MB, default 64).
func checkResults(dir string) error {
	fail := func(why string) error {
		return badInput(fmt.Sprintf("results_dir %s %s: the run could not write its summary <testid>.json there; "+
			"free some space or choose another folder with -e results_dir=DIR (nothing was run)", dir, why))
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

// gomaxprocs: a run against a database on this host with few cores holds k6 to one core
// (GOMAXPROCS=1): the Go scheduler then does not spin a second thread waiting for replies,
// which costs a shared 2-core machine 10-30% of k6's CPU per query and the database the same in
// QPS (measured with tools/bench). GOMAXPROCS in the environment wins; TBS_GOMAXPROCS_AUTO=0
// turns this off. k6 can use at most GOMAXPROCS cores: the host facts record it for the
// report's saturation check.
func (o *runOpts) gomaxprocs(r *runArgs, env map[string]string) {
	if _, set := env["GOMAXPROCS"]; !set && env["TBS_GOMAXPROCS_AUTO"] != "0" {
		switch host := r.option(env, "mysql_host", "127.0.0.1"); {
		case strings.HasPrefix(host, "127.") || host == "localhost" || host == "::1":
			if n := runtime.NumCPU(); n <= 4 {
				env["GOMAXPROCS"] = "1"
				o.say("GOMAXPROCS=1 (the database is on this %d-core host; set GOMAXPROCS to override)", n)
			}
		}
	}
	facts := env["TBS_HOST_FACTS"]
	if regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(env["GOMAXPROCS"]) && strings.HasPrefix(facts, "{") &&
		strings.HasSuffix(facts, "}") && !strings.Contains(facts, `"gomaxprocs"`) {
		env["TBS_HOST_FACTS"] = strings.TrimSuffix(facts, "}") + `,"gomaxprocs":` + env["GOMAXPROCS"] + "}"
	}
}

// webExport: with k6's web dashboard on (K6_WEB_DASHBOARD=true) a run's HTML export is saved
// beside its manifest as <results_dir>/<testid>-web-dashboard.html (unless
// K6_WEB_DASHBOARD_EXPORT says where).
func (o *runOpts) webExport(env map[string]string, results, testid string) {
	if env["K6_WEB_DASHBOARD"] != "true" || env["K6_WEB_DASHBOARD_EXPORT"] != "" {
		return
	}
	path := filepath.Join(results, testid+"-web-dashboard.html")
	env["K6_WEB_DASHBOARD_EXPORT"] = path
	o.say("web dashboard export: %s", path)
}
