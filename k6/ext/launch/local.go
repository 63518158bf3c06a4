package launch

import (
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"tidb-bench-stack/k6/ext/results"
)

// checkResults: results.Check (k6/ext/results), as the launcher's bad input.
func checkResults(dir string) error {
	if err := results.Check(dir); err != nil {
		return badInput(err.Error())
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
