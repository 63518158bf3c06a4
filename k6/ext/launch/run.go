package launch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runOpts are the launcher's own settings (flags of `k6 x tbs run` before the k6 arguments).
type runOpts struct {
	stackEnv  string // .stack/k6.env: the stack's settings (scripts/k6)
	log       string // append every line here too (.stack/logs/k6.log)
	runLogs   string // a run's lines also go to <runLogs>/<testid>.log (Loki's testid label)
	merge     string // a program whose `merge` verb merges a split run's files (scripts/k6: tidbbench.merge)
	prefix    string // message prefix
	autoProcs bool   // --gomaxprocs-auto: GOMAXPROCS=1 against a database on this small host
}

// exitError carries the exit status the launcher should end with.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func (o *runOpts) say(format string, a ...any) {
	fmt.Fprintf(os.Stderr, o.prefix+": "+format+"\n", a...)
}

// sayOverridden: one line per key of the stack's settings that the caller's environment
// overrides with another value (Settings); the key only, never a value (it may be a secret).
func (o *runOpts) sayOverridden(keys []string) {
	for _, k := range keys {
		o.say("%s from the environment overrides %s (unset it to use the stack's)", k, o.stackEnv)
	}
}

// launch runs `k6 run` with args as the launchers give it: the target's settings assembled,
// the testid made when not given, split over --instances N processes when asked.
func launch(o *runOpts, args []string) error {
	r, err := parseRunArgs(args)
	if err != nil {
		return err
	}
	env := environMap(os.Environ())
	if abs, changed := absFile("mysql_password_file", env["mysql_password_file"]); changed {
		env["mysql_password_file"] = abs
	}
	var stack map[string]string
	if o.stackEnv != "" {
		if stack, err = readEnvFile(o.stackEnv); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	env, overridden := Settings(env, stack, r.opts)
	o.sayOverridden(overridden)
	o.addHostFacts(env) // every mode the launcher starts: scripts/k6, compose's k6 services
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// the results folder: option results_dir, else the contract's default (k6/contract.json's
	// own, "results", when the script has no contract beside it)
	results := "results"
	if r.isRun() {
		if c, err := loadContract(r.script); err == nil {
			results = c.defaultOf("results_dir")
		}
		results = r.option(env, "results_dir", results)
		if err := checkResults(results); err != nil {
			return err
		}
	}
	if r.given || r.instance != "" {
		if !r.given {
			return badInput("--instance goes with --instances N (the number of k6 processes of the run)")
		}
		p, err := plan(r, env, "--instances", 10*time.Second, time.Now())
		if err != nil {
			return err
		}
		if err := p.checkFree(); err != nil {
			return err
		}
		if o.autoProcs {
			o.gomaxprocs(r, env)
		}
		return o.instances(self, p, r, env)
	}
	if o.autoProcs && r.isRun() {
		o.gomaxprocs(r, env)
	}
	k6args := append([]string{"run"}, r.k6...)
	logs := []string{}
	if o.log != "" {
		logs = append(logs, o.log)
	}
	if r.isRun() {
		id := r.option(env, "testid", "")
		if id == "" {
			id = NewTestID(time.Now())
			k6args = append([]string{"run", "-e", "testid=" + id}, r.k6...)
		}
		if fileSafe.MatchString(id) {
			o.webExport(env, results, id)
		}
		if o.runLogs != "" && fileSafe.MatchString(id) { // else k6 rejects the testid itself
			if err := os.MkdirAll(o.runLogs, 0o755); err == nil { //nolint:gosec // read by the log shipper (otelcol locally, Alloy in compose)
				logs = append(logs, filepath.Join(o.runLogs, id+".log"))
			} else {
				o.say("warning: %v: the run's lines go to the console only", err)
			}
		}
	}
	if len(logs) == 0 {
		return syscall.Exec(self, append([]string{self}, k6args...), environList(env)) //nolint:gosec // our own k6
	}
	return runTee(self, k6args, environList(env), logs)
}

// runTee runs k6 with its output on stdout and appended to the files, passing INT and TERM on
// (k6 runs in a process group of its own: a Ctrl-C reaches it once, from here, and k6 stops
// gracefully, writing its summary). Ends with k6's exit status.
func runTee(self string, args, env, files []string) error {
	var outs []io.Writer
	outs = append(outs, os.Stdout)
	for _, f := range files {
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644) //nolint:gosec // logs
		if err != nil {
			return err
		}
		defer func() { _ = fh.Close() }()
		outs = append(outs, fh)
	}
	cmd := exec.Command(self, args...) //nolint:gosec // our own k6
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.MultiWriter(outs...), pr)
		close(done)
	}()
	stop := forward(func(s os.Signal) { _ = cmd.Process.Signal(s) })
	defer stop()
	if err := cmd.Start(); err != nil {
		return err
	}
	err := cmd.Wait()
	_ = pw.Close()
	<-done
	return exitOf(err)
}

// forward passes SIGINT and SIGTERM to fn until the returned stop is called.
func forward(fn func(os.Signal)) func() {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				fn(s)
			case <-quit:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(quit) }
}

// exitOf: the shell's exit status of a finished process (128+N for signal N).
func exitOf(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitError{statusOf(ee.ProcessState)}
	}
	return err
}

func statusOf(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// instances runs the plan's processes here: output prefixed "[k6 i] " (also raw in
// results/<testid>.instance-<i>.log), a pid file per process while it runs, INT/TERM passed
// on; then each one's exit status and end time go to `MERGE merge` (scripts/k6 merge: tidbbench.merge),
// which writes results/<testid>.json. Ends with the first failed process' status, or the merge's.
func (o *runOpts) instances(self string, p *Plan, r *runArgs, env map[string]string) error {
	env["TBS_INSTANCES"] = fmt.Sprint(p.N) // one monitor VU per process (k6/lib/progress.js)
	ids := strings.Trim(fmt.Sprint(p.IDs), "[]")
	o.say("testid=%s split over %d instance(s) (running %s here), start_at=%d (%d s from now)",
		p.TestID, p.N, ids, p.StartAt, (p.StartAt-time.Now().UnixMilli())/1000)
	f := &fleet{shared: io.Discard, running: map[*instance]bool{}, results: make(chan instanceExit, len(p.IDs))}
	if o.log != "" {
		if fh, err := os.OpenFile(o.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil { //nolint:gosec // logs
			defer func() { _ = fh.Close() }()
			f.shared = fh
		}
	}
	stop := forward(func(os.Signal) { f.interrupt() })
	defer stop()
	started := 0
	for _, i := range p.IDs {
		cmd := exec.Command(self, p.args(i, r.k6)...) //nolint:gosec // our own k6
		cmd.Env = environList(env)
		pid, err := f.start(i, cmd, p.instanceFile(i, ".log"), p.instanceFile(i, ".pid"))
		if err != nil {
			return err
		}
		started++
		o.say("instance %d (%s) pid %d, output in %s", i, Segment(i, p.N), pid, p.instanceFile(i, ".log"))
	}
	failed := 0
	var exits []string
	for ; started > 0; started-- {
		res := <-f.results
		exits = append(exits, "--exit", fmt.Sprintf("%d=%d@%d", res.id, res.rc, res.at))
		if res.rc != 0 {
			o.say("instance %d exited with status %d (output: %s)", res.id, res.rc, p.instanceFile(res.id, ".log"))
			if failed == 0 {
				failed = res.rc
			}
		}
	}
	return o.mergeInstances(p, ids, exits, failed)
}

// mergeInstances hands the instances' exits to `MERGE merge`, or, for a partial plan (or no
// merge command), says how to merge on one host. The first failed instance's status wins.
func (o *runOpts) mergeInstances(p *Plan, ids string, exits []string, failed int) error {
	if p.Partial || o.merge == "" {
		o.say("instance(s) %s of %s done; copy %s of every host into one results/ folder and run: scripts/k6 merge %s",
			ids, p.TestID, filepath.Join(p.Results, p.TestID+".instance-*.json"), p.TestID)
		if failed != 0 {
			return exitError{failed}
		}
		return nil
	}
	merge := exec.Command(o.merge, append([]string{"merge", "--results", p.Results, "--expect", fmt.Sprint(p.N)},
		append(exits, p.TestID)...)...) //nolint:gosec // the repository's scripts/k6 (its `merge`: tidbbench.merge)
	merge.Stdout, merge.Stderr = os.Stdout, os.Stderr
	merr := exitOf(merge.Run())
	if failed != 0 {
		return exitError{failed}
	}
	return merr
}

// fleet is the processes of instances: the shared log, the running ones (INT/TERM goes to
// them), and each one's exit as it ends.
type fleet struct {
	mu      sync.Mutex
	shared  io.Writer
	running map[*instance]bool
	results chan instanceExit
}

type instance struct {
	id   int
	cmd  *exec.Cmd
	done chan struct{} // closed when its output is all copied
}

type instanceExit struct {
	id int
	rc int
	at int64 // epoch ms
}

func (f *fleet) interrupt() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for q := range f.running {
		_ = q.cmd.Process.Signal(syscall.SIGINT)
	}
}

// start runs instance i's cmd in a process group of its own, its output copied to logf and,
// prefixed, to stdout and the shared log; a pid file (.<name of pidf>) while it runs. Its
// exit goes to f.results.
func (f *fleet) start(i int, cmd *exec.Cmd, logf, pidf string) (int, error) {
	fh, err := os.Create(logf) //nolint:gosec // results folder
	if err != nil {
		return 0, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	q := &instance{id: i, cmd: cmd, done: make(chan struct{})}
	go f.copyOutput(q, pr, fh)
	f.mu.Lock()
	err = cmd.Start()
	if err == nil {
		f.running[q] = true
	}
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	pidf = filepath.Join(filepath.Dir(pidf), "."+filepath.Base(pidf))
	_ = os.WriteFile(pidf, []byte(fmt.Sprintf("%d\n", cmd.Process.Pid)), 0o644) //nolint:gosec // a pid
	go f.wait(q, pw, pidf)
	return cmd.Process.Pid, nil
}

func (f *fleet) copyOutput(q *instance, pr *io.PipeReader, fh *os.File) {
	defer close(q.done)
	defer func() { _ = fh.Close() }()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		_, _ = fmt.Fprintln(fh, line)
		f.mu.Lock()
		_, _ = fmt.Fprintf(os.Stdout, "[k6 %d] %s\n", q.id, line)
		_, _ = fmt.Fprintf(f.shared, "[k6 %d] %s\n", q.id, line)
		f.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, pr)
}

func (f *fleet) wait(q *instance, pw *io.PipeWriter, pidf string) {
	err := q.cmd.Wait()
	at := time.Now().UnixMilli()
	_ = pw.Close()
	<-q.done
	_ = os.Remove(pidf)
	rc := 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			rc = statusOf(ee.ProcessState)
		} else {
			rc = 1
		}
	}
	f.mu.Lock()
	delete(f.running, q)
	f.mu.Unlock()
	f.results <- instanceExit{q.id, rc, at}
}
