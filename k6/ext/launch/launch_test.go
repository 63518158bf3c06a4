package launch

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestNewTestIDFollowsTheContract(t *testing.T) {
	c, err := loadContract("../../oltp.js")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 8, 15, 0, 0, time.FixedZone("CET", 3600))
	seen := map[string]bool{}
	for i := 0; i < 64; i++ {
		id := NewTestID(at)
		if !regexp.MustCompile(`^20261126-071500-[0-9a-f]{4}$`).MatchString(id) || c.checkTestID(id) != nil {
			t.Fatalf("testid %q: want UTC time and 4 hex digits, and the contract's rule", id)
		}
		seen[id] = true
	}
	if len(seen) < 32 {
		t.Fatalf("64 testids of one second gave only %d different ones", len(seen))
	}
}

func TestSegmentsCoverTheRunOnce(t *testing.T) {
	if got := Sequence(4); got != "0,1/4,2/4,3/4,1" {
		t.Fatal(got)
	}
	var segs []string
	for i := 0; i < 3; i++ {
		segs = append(segs, Segment(i, 3))
	}
	if strings.Join(segs, " ") != "0:1/3 1/3:2/3 2/3:1" {
		t.Fatal(segs)
	}
	if err := CheckSplit("--instances", 4, "150,3"); err == nil || !strings.Contains(err.Error(), "smallest thread step has 3") {
		t.Fatal(err)
	}
	if err := CheckSplit("--instances", 3, "3,6"); err != nil {
		t.Fatal(err)
	}
}

func TestPlan(t *testing.T) {
	dir := t.TempDir()
	now := time.UnixMilli(1795400000000)
	args := func(a ...string) *runArgs {
		r, err := parseRunArgs(append(a, "../../oltp.js"))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	env := map[string]string{"results_dir": dir}
	p, err := plan(args("--instances", "3", "-e", "threads=3,6", "--env=workload=oltp_read_only"), env, "--instances",
		10*time.Second, now)
	if err != nil {
		t.Fatal(err)
	}
	if p.N != 3 || len(p.IDs) != 3 || p.StartAt != 1795400010000 || p.Workload != "oltp_read_only" || p.Results != dir {
		t.Fatalf("%+v", p)
	}
	got := strings.Join(p.args(1, args("-e", "threads=3,6", "-e", "testid=x").k6), " ")
	want := "run --address  --execution-segment 1/3:2/3 --execution-segment-sequence 0,1/3,2/3,1 --tag instance_id=1 " +
		"--tag testid=" + p.TestID + " --tag workload=oltp_read_only -e testid=" + p.TestID +
		" -e start_at=1795400010000 -e threads=3,6 ../../oltp.js"
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	bad := map[string][]string{
		"--instances '0'":                    {"--instances", "0"},
		"--instances 'x'":                    {"--instances=x"},
		"the smallest thread step has 3":     {"--instances", "4", "-e", "threads=3"},
		"give every host the same -e testid": {"--instances", "2", "--instance", "1", "-e", "threads=3"},
		"sets the execution segments itself": {"--instances", "2", "--execution-segment", "0:1/2"},
		"tags each process with instance_id": {"--instances", "2", "--tag", "a=b,instance_id=3"},
		"instances of --instances 2 are 0..1": {"--instances", "2", "--instance", "2", "-e", "threads=2", "-e", "testid=t", "-e",
			"start_at=1795400010000"},
		"testid 'bad/x'": {"--instances", "1", "-e", "testid=bad/x"},
		"start_at=12":    {"--instances", "1", "-e", "start_at=12"},
	}
	for msg, a := range bad {
		if _, err := plan(args(a...), env, "--instances", 0, now); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%v: got %v, want %q", a, err, msg)
		}
	}
	r, _ := parseRunArgs([]string{"--instances", "2", "prepare.js"})
	if _, err := plan(r, env, "--instances", 0, now); err == nil || !strings.Contains(err.Error(), "loads the tables once") {
		t.Error(err)
	}
	// a testid names one run
	p, _ = plan(args("--instances", "2", "-e", "testid=taken", "-e", "threads=2"), env, "--instances", 0, now)
	if err := os.WriteFile(filepath.Join(dir, "taken.instance-1.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.checkFree(); err == nil || !strings.Contains(err.Error(), "taken.instance-1.json exists") {
		t.Fatal(err)
	}
}

// The target's settings: the password is one setting; the user's wins, then the caller's
// environment's, then the stack's (only with the stack's host and user); k6 never sees both.
func TestSettings(t *testing.T) {
	stack := map[string]string{"K6_OUT": "rw", "mysql_host": "127.0.0.1", "mysql_port": "4000",
		"mysql_user": "sbtest", "mysql_password": "stackpw"}
	stackFile := map[string]string{"mysql_host": "127.0.0.1", "mysql_user": "sbtest",
		"mysql_password_file": "/s/sbtest"}
	cases := []struct {
		name            string
		env, stack, opt map[string]string
		want            map[string]string // "" : absent
	}{
		{"the stack's", nil, stack, nil,
			map[string]string{"K6_OUT": "rw", "mysql_port": "4000", "mysql_password": "stackpw", "mysql_password_file": ""}},
		{"the stack's by file", nil, stackFile, nil,
			map[string]string{"mysql_password": "", "mysql_password_file": "/s/sbtest"}},
		{"another port of the stack's host", nil, stack, map[string]string{"mysql_port": "3306"},
			map[string]string{"mysql_password": "stackpw"}},
		{"the user's file", nil, stack, map[string]string{"mysql_password_file": "/u/pw"},
			map[string]string{"mysql_password": "", "mysql_password_file": ""}},
		{"the user's password over the compose file", map[string]string{"mysql_password_file": "/run/secrets/x"}, nil,
			map[string]string{"mysql_password": "x"}, map[string]string{"mysql_password": "", "mysql_password_file": ""}},
		{"the caller's environment", map[string]string{"mysql_password_file": "/e/pw", "K6_OUT": "mine"}, stack, nil,
			map[string]string{"mysql_password": "", "mysql_password_file": "/e/pw", "K6_OUT": "mine"}},
		{"another server", nil, stack, map[string]string{"mysql_host": "db.example"},
			map[string]string{"mysql_password": "", "mysql_password_file": ""}},
		{"the stack's status address with its host", nil, map[string]string{"mysql_host": "127.0.0.1", "tidb_status_addr": "127.0.0.1:10080"},
			map[string]string{"mysql_port": "3306"}, map[string]string{"tidb_status_addr": "127.0.0.1:10080"}},
		{"not the stack's status address with another host", nil, map[string]string{"mysql_host": "127.0.0.1", "tidb_status_addr": "127.0.0.1:10080"},
			map[string]string{"mysql_host": "db.example"}, map[string]string{"tidb_status_addr": ""}},
		{"another user", map[string]string{"mysql_user": "bench"}, stack, nil,
			map[string]string{"mysql_password": "", "mysql_user": "bench"}},
	}
	for _, c := range cases {
		env := map[string]string{"PATH": "/bin"}
		for k, v := range c.env {
			env[k] = v
		}
		got, _ := Settings(env, c.stack, c.opt)
		for k, v := range c.want {
			if g, ok := got[k]; (v == "" && ok) || (v != "" && g != v) {
				t.Errorf("%s: %s=%q (set: %v), want %q", c.name, k, g, ok, v)
			}
		}
		if got["PATH"] != "/bin" {
			t.Errorf("%s: the environment is lost", c.name)
		}
	}
}

// A shell that exported another checkout's k6.env silently overrode the stack's settings: the
// run names each key the environment overrides with another value, never a value.
func TestTheRunSaysWhatTheEnvironmentOverrides(t *testing.T) {
	stack := map[string]string{"K6_OUT": "stack-out", "mysql_host": "127.0.0.1", "mysql_user": "sbtest",
		"mysql_password_file": "/main/.stack/secrets/sbtest"}
	say := func(env, opts map[string]string) string {
		_, keys := Settings(env, stack, opts)
		old := os.Stderr
		rd, wr, _ := os.Pipe()
		os.Stderr = wr
		(&runOpts{prefix: "scripts/k6", stackEnv: ".stack/k6.env"}).sayOverridden(keys)
		_ = wr.Close()
		os.Stderr = old
		out, _ := io.ReadAll(rd)
		for _, m := range []map[string]string{env, stack, opts} {
			for k, v := range m {
				if strings.Contains(string(out), v) {
					t.Errorf("the value of %s shows: %s", k, out)
				}
			}
		}
		return string(out)
	}
	line := func(k string) string {
		return "scripts/k6: " + k + " from the environment overrides .stack/k6.env (unset it to use the stack's)\n"
	}
	other := map[string]string{"mysql_host": "127.0.0.1", "mysql_password_file": "/other/.stack/secrets/sbtest",
		"K6_OUT": "env-out"}
	if out := say(other, nil); out != line("K6_OUT")+line("mysql_password_file") {
		t.Errorf("another checkout's settings: %q", out)
	}
	if out := say(map[string]string{"mysql_password": "envsecret"}, nil); out != line("mysql_password") {
		t.Errorf("a password over the stack's file: %q", out)
	}
	same := map[string]string{"mysql_host": "127.0.0.1", "mysql_password_file": "/main/.stack/secrets/sbtest",
		"K6_OUT": "stack-out"}
	if out := say(same, nil); out != "" {
		t.Errorf("the stack's own values: %q", out)
	}
	// -e wins over both, and the stack's password never goes to another server: nothing overridden
	if out := say(other, map[string]string{"K6_OUT": "opt-out", "mysql_password_file": "/u/pw"}); out != "" {
		t.Errorf("the user's -e: %q", out)
	}
	if out := say(map[string]string{"mysql_password": "envsecret"}, map[string]string{"mysql_host": "db.example"}); out != "" {
		t.Errorf("another server: %q", out)
	}
}

func TestParseRunArgs(t *testing.T) {
	r, err := parseRunArgs([]string{"-q", "-e", "a=1", "--env=b=2", "-ec=3", "--instances=2", "--instance", "1",
		"--tag", "x=y", "-e", "a=4", "k6/oltp.js"})
	if err != nil {
		t.Fatal(err)
	}
	if r.opts["a"] != "4" || r.opts["b"] != "2" || r.opts["c"] != "3" || r.instances != "2" || r.instance != "1" ||
		r.script != "k6/oltp.js" || !r.isRun() {
		t.Fatalf("%+v", r)
	}
	if strings.Join(r.k6, " ") != "-q -e a=1 --env=b=2 -ec=3 --tag x=y -e a=4 k6/oltp.js" {
		t.Fatal(r.k6)
	}
	if r, _ := parseRunArgs([]string{"oltp.js", "-e", "threads=8", "-e", "x.js=1"}); r.script != "oltp.js" {
		t.Fatal(r.script)
	}
	if got := strings.Join(withoutOpts(r.k6, "a"), " "); got != "-q --env=b=2 -ec=3 --tag x=y k6/oltp.js" {
		t.Fatal(got)
	}
}

func TestWebExport(t *testing.T) {
	o := &runOpts{prefix: "test"}
	env := map[string]string{"K6_WEB_DASHBOARD": "true"}
	o.webExport(env, "/r", "t1")
	if env["K6_WEB_DASHBOARD_EXPORT"] != "/r/t1-web-dashboard.html" {
		t.Fatal(env)
	}
	env = map[string]string{"K6_WEB_DASHBOARD": "true", "K6_WEB_DASHBOARD_EXPORT": "/mine.html"}
	o.webExport(env, "/r", "t1")
	off := map[string]string{}
	o.webExport(off, "/r", "t1")
	if env["K6_WEB_DASHBOARD_EXPORT"] != "/mine.html" || len(off) != 0 {
		t.Fatal(env, off)
	}
}

func TestTarget(t *testing.T) {
	dir := t.TempDir()
	stack := filepath.Join(dir, "k6.env")
	if err := os.WriteFile(stack, []byte("# the stack\nmysql_host=127.0.0.1\nmysql_port=4000\nmysql_user=sbtest\n"+
		"mysql_password=stackpw\nmysql_db=sbtest\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"mysql_port":"3306"}`:                `"mysql_port":"3306","mysql_user":"sbtest","mysql_password":"stackpw"`,
		`{"mysql_password_file":"` + pw + `"}`: `"mysql_password":"mine","mysql_db":"sbtest"`,
		`{"mysql_host":"db.example"}`:          `"mysql_host":"db.example","mysql_port":"4000","mysql_user":"sbtest","mysql_password":""`,
	} {
		old := os.Stdout
		rd, wr, _ := os.Pipe()
		os.Stdout = wr
		err := printTarget(stack, []string{"../../oltp.js"}, bytes.NewBufferString(in))
		_ = wr.Close()
		os.Stdout = old
		out, _ := io.ReadAll(rd)
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s: %v %s, want %s", in, err, out, want)
		}
	}
}
