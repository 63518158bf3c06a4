package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Plan is one run split over N k6 processes: k6's own execution segments split every thread
// step (150 threads over 4: 38+38+37+37). Every process gets the same testid and start time
// (epoch ms; each process's setup() waits for it, so a step covers the same wall-clock
// interval everywhere) and the tag instance_id.
type Plan struct {
	TestID   string `json:"testid"`
	StartAt  int64  `json:"start_at"`
	N        int    `json:"instances"`
	IDs      []int  `json:"ids"` // the instances run here
	Workload string `json:"workload"`
	Results  string `json:"results_dir"`
	Partial  bool   `json:"partial"` // --instance: part of a run split over several hosts
}

// Segment is instance i's execution segment of n: i/n:(i+1)/n.
func Segment(i, n int) string { return frac(i, n) + ":" + frac(i+1, n) }

// Sequence is the execution-segment sequence of n equal segments: 0,1/n,...,1.
func Sequence(n int) string {
	s := make([]string, 0, n+1)
	for i := 0; i <= n; i++ {
		s = append(s, frac(i, n))
	}
	return strings.Join(s, ",")
}

func frac(i, n int) string {
	switch {
	case i == 0:
		return "0"
	case i == n:
		return "1"
	}
	return fmt.Sprintf("%d/%d", i, n)
}

var (
	countRE   = regexp.MustCompile(`^[0-9]{1,6}$`)
	threadsRE = regexp.MustCompile(`^[0-9]+(,[0-9]+)*$`)
	listRE    = regexp.MustCompile(`^[0-9]+(,[0-9]+)*$`)
	startRE   = regexp.MustCompile(`^[0-9]{13}$`)
)

// CheckSplit: n processes can split a run of `threads` (a thread list) when each gets at least
// one thread of every step. flag names n in the message (--instances, --parallelism, ...).
func CheckSplit(flag string, n int, threads string) error {
	if !threadsRE.MatchString(threads) {
		return badInput(fmt.Sprintf("threads=%s: a thread count or a list like 8,16,32", threads))
	}
	smallest := -1
	for _, t := range strings.Split(threads, ",") {
		v, _ := strconv.Atoi(t)
		if smallest < 0 || v < smallest {
			smallest = v
		}
	}
	if n > smallest {
		return badInput(fmt.Sprintf("%s %d: the smallest thread step has %d thread(s); each of the %d instances needs "+
			"at least one thread of every step (use %s 1..%d or more threads)", flag, n, smallest, n, flag, smallest))
	}
	return nil
}

// plan checks a split run's command line and decides its testid, start time and instances,
// before anything starts. flag names the count (--instances; render-testrun: --parallelism).
func plan(r *runArgs, env map[string]string, flag string, startIn time.Duration, now time.Time) (*Plan, error) {
	if !countRE.MatchString(r.instances) || r.instances == strings.Repeat("0", len(r.instances)) {
		return nil, badInput(fmt.Sprintf("%s '%s': the number of k6 processes, a whole number 1 or more (e.g. %s 4)",
			flag, r.instances, flag))
	}
	n, _ := strconv.Atoi(r.instances)
	if err := checkSplitArgs(r, flag); err != nil {
		return nil, err
	}
	c, err := loadContract(r.script)
	if err != nil {
		return nil, err
	}
	if err := CheckSplit(flag, n, r.option(env, "threads", c.defaultOf("threads"))); err != nil {
		return nil, err
	}
	p := &Plan{N: n, Workload: r.option(env, "workload", c.defaultOf("workload")),
		Results: r.option(env, "results_dir", c.defaultOf("results_dir"))}
	p.TestID = r.option(env, "testid", "")
	start := r.option(env, "start_at", "")
	if p.IDs, p.Partial, err = instanceIDs(r, n, flag, p.TestID, start); err != nil {
		return nil, err
	}
	if p.TestID == "" {
		p.TestID = NewTestID(now)
	}
	if err := c.checkTestID(p.TestID); err != nil {
		return nil, err
	}
	if p.StartAt, err = startAt(start, startIn, now); err != nil {
		return nil, err
	}
	return p, nil
}

// checkSplitArgs refuses the k6 arguments a split run sets itself (segments, instance_id) and
// any script but k6/oltp.js.
func checkSplitArgs(r *runArgs, flag string) error {
	for i, a := range r.k6 {
		if strings.HasPrefix(a, "--execution-segment") || strings.HasPrefix(a, "--segment") {
			return badInput(fmt.Sprintf("%s: %s sets the execution segments itself; leave out %s", a, flag, a))
		}
		tag := ""
		if (a == "--tag" || a == "-t") && i+1 < len(r.k6) {
			tag = r.k6[i+1]
		} else if strings.HasPrefix(a, "--tag=") {
			tag = a[len("--tag="):]
		}
		for _, kv := range strings.Split(tag, ",") {
			if strings.HasPrefix(kv, "instance_id=") {
				return badInput(fmt.Sprintf("--tag %s: %s tags each process with instance_id itself", tag, flag))
			}
		}
	}
	switch {
	case strings.HasSuffix(r.script, "prepare.js"):
		return badInput(flag + " splits a run of k6/oltp.js; k6/prepare.js loads the tables once: run it without " + flag)
	case strings.HasSuffix(r.script, "tpcc.js"):
		return badInput(flag + " splits a run of k6/oltp.js; k6/tpcc.js runs in one k6 process (docs/tpcc.md): run it without " + flag)
	case !r.isRun():
		script := r.script
		if script == "" {
			script = "nothing"
		}
		return badInput(fmt.Sprintf("%s splits a run of k6/oltp.js (the script must come last; got '%s')", flag, script))
	}
	return nil
}

// instanceIDs: the instances this host runs (--instance, a partial run: testid and start_at
// given to every host; else all n) -> (ids, partial).
func instanceIDs(r *runArgs, n int, flag, testid, start string) ([]int, bool, error) {
	var out []int
	if r.instance != "" {
		if !listRE.MatchString(r.instance) {
			return nil, false, badInput(fmt.Sprintf("--instance '%s': instance numbers 0..%d, comma-separated", r.instance, n-1))
		}
		for _, s := range strings.Split(r.instance, ",") {
			i, _ := strconv.Atoi(s)
			if i >= n {
				return nil, false, badInput(fmt.Sprintf("--instance %d: instances of %s %d are 0..%d", i, flag, n, n-1))
			}
			out = append(out, i)
		}
		if testid == "" || start == "" {
			return nil, false, badInput("--instance runs part of a split run: give every host the same -e testid=... and " +
				"-e start_at=<epoch ms> (e.g. start_at=$(( ($(date +%s) + 60) * 1000 )))")
		}
		return out, true, nil
	}
	for i := 0; i < n; i++ {
		out = append(out, i)
	}
	return out, false, nil
}

// startAt: option start_at (epoch ms; a time past warns), else startIn from now.
func startAt(start string, startIn time.Duration, now time.Time) (int64, error) {
	nowMS := now.UnixMilli()
	switch {
	case start == "":
		return nowMS + startIn.Milliseconds(), nil
	case !startRE.MatchString(start):
		return 0, badInput(fmt.Sprintf("start_at=%s: a time in epoch milliseconds (13 digits), e.g. $(( ($(date +%%s) + 60) * 1000 ))", start))
	default:
		at, _ := strconv.ParseInt(start, 10, 64)
		if at < nowMS {
			fmt.Fprintf(os.Stderr, "tbs: warning: start_at=%s is %d s in the past: this host starts at once\n",
				start, (nowMS-at)/1000)
		}
		return at, nil
	}
}

// checkFree: no instance file of this testid exists yet (a testid names one run).
func (p *Plan) checkFree() error {
	if err := os.MkdirAll(p.Results, 0o755); err != nil { //nolint:gosec // the results folder is shared
		return badInput(fmt.Sprintf("results_dir %s: %v", p.Results, err))
	}
	for _, i := range p.IDs {
		f := p.instanceFile(i, ".json")
		if _, err := os.Stat(f); err == nil {
			return badInput(fmt.Sprintf("%s exists: a testid names one run; choose another -e testid", f))
		}
	}
	return nil
}

func (p *Plan) instanceFile(i int, ext string) string {
	return filepath.Join(p.Results, fmt.Sprintf("%s.instance-%d%s", p.TestID, i, ext))
}

// args is instance i's `k6 run` command line: its segment of the sequence, its tags (k6's --tag
// replaces the script's own tags on k6's built-in series: testid and workload too), the
// shared testid and start time, then the user's arguments (the script last).
func (p *Plan) args(i int, user []string) []string {
	a := []string{"run", "--address", "", "--execution-segment", Segment(i, p.N), "--execution-segment-sequence", Sequence(p.N),
		"--tag", fmt.Sprintf("instance_id=%d", i), "--tag", "testid=" + p.TestID}
	if p.Workload != "" {
		a = append(a, "--tag", "workload="+p.Workload)
	}
	a = append(a, "-e", "testid="+p.TestID, "-e", fmt.Sprintf("start_at=%d", p.StartAt))
	return append(a, withoutOpts(user, "testid", "start_at")...)
}

// withoutOpts drops the -e pairs of the given names (the plan sets them).
func withoutOpts(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if kv, n := envArg(args, i); n > 0 {
			name, _, _ := strings.Cut(kv, "=")
			drop := false
			for _, x := range names {
				drop = drop || name == x
			}
			if !drop {
				out = append(out, args[i:i+n]...)
			}
			i += n - 1
			continue
		}
		out = append(out, args[i])
	}
	return out
}
