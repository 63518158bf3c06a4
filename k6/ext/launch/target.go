package launch

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// readEnvFile reads NAME=value lines (# comments and blank lines skipped; the value is
// everything after the first '='), as .stack/k6.env is written by scripts/stack.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path) //nolint:gosec // the stack's own settings file
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out, sc.Err()
}

// Settings assembles the environment of the k6 processes of a run: the caller's environment
// (env), the stack's settings (stack: .stack/k6.env, or nil) and the user's -e options (opts).
//
//   - Anything the stack sets that is not the target's password goes in when the caller's
//     environment does not set it (k6's -e wins over the environment anyway).
//   - The password is one setting however given (mysql_password or mysql_password_file): the
//     user's (-e) wins over the caller's environment, which wins over the stack's; the others
//     are left out, so k6 never sees both. The stack's password goes only with the stack's
//     host and user (never to another server); given by file when the stack has one.
//
// The password never becomes an argument: it stays in the environment or a file. The stack's
// tidb_status_addr, too, goes with the stack's host only.
//
// overridden names (sorted) the keys where the caller's environment wins over a different
// value of the stack's (a shell that exported another checkout's k6.env does this silently);
// the launcher says so, naming the keys only, never a value.
func Settings(env, stack, opts map[string]string) (out map[string]string, overridden []string) {
	out = make(map[string]string, len(env)+len(stack))
	for k, v := range env {
		out[k] = v
	}
	for k, v := range stack {
		if k == "mysql_password" || k == "mysql_password_file" || k == hostBound {
			continue
		}
		if e, ok := env[k]; !ok {
			out[k] = v
		} else if _, user := opts[k]; !user && e != v {
			overridden = append(overridden, k)
		}
	}
	_, userPw := opts["mysql_password"]
	_, userFile := opts["mysql_password_file"]
	_, envPw := env["mysql_password"]
	_, envFile := env["mysql_password_file"]
	effective := func(k string) string {
		if v, ok := opts[k]; ok {
			return v
		}
		return out[k]
	}
	// the stack's password is its own servers' (their user): it goes with its host and user only
	stackPw := stack != nil && effective("mysql_host") == stack["mysql_host"] &&
		effective("mysql_user") == stack["mysql_user"]
	switch {
	case userPw || userFile:
		delete(out, "mysql_password")
		delete(out, "mysql_password_file")
	case envPw || envFile:
		if !stackPw {
			break
		}
		_, stackHasPw := stack["mysql_password"]
		_, stackHasFile := stack["mysql_password_file"]
		if !stackHasPw && !stackHasFile {
			break
		}
		for _, k := range []string{"mysql_password", "mysql_password_file"} {
			if e, ok := env[k]; ok {
				if s, sok := stack[k]; !sok || s != e {
					overridden = append(overridden, k)
				}
			}
		}
	case stackPw:
		if f, ok := stack["mysql_password_file"]; ok {
			out["mysql_password_file"] = f
		} else if pw, ok := stack["mysql_password"]; ok {
			out["mysql_password"] = pw
		}
	}
	// the stack's TiDB status address (the profiles) is its own server's, as its password is
	if v, ok := stack[hostBound]; ok && effective("mysql_host") == stack["mysql_host"] {
		if _, set := env[hostBound]; !set {
			out[hostBound] = v
		}
	}
	sort.Strings(overridden)
	return out, overridden
}

// hostBound is the stack setting that goes with the stack's host only: a run on another
// server must not profile the stack's TiDB.
const hostBound = "tidb_status_addr"

func environMap(environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

func environList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	return out
}

// Target is where a run connects and as whom, as k6 will see it (for the scripts that talk to
// the target themselves: the sweep's ANALYZE TABLE, the plan's checks).
type Target struct {
	Host     string `json:"mysql_host"`
	Port     string `json:"mysql_port"`
	User     string `json:"mysql_user"`
	Password string `json:"mysql_password"`
	DB       string `json:"mysql_db"`
}

// printTarget: `k6 x tbs target [--stack-env FILE] SCRIPT`, the user's options (-e) as a JSON
// object on stdin (never arguments: they may hold the password); prints the Target as JSON.
func printTarget(stackEnv string, args []string, in io.Reader) error {
	r, err := parseRunArgs(args)
	if err != nil {
		return err
	}
	if err := json.NewDecoder(in).Decode(&r.opts); err != nil && !errors.Is(err, io.EOF) {
		return badInput(fmt.Sprintf("k6 x tbs target: the options on stdin are not a JSON object: %v", err))
	}
	c, err := loadContract(r.script)
	if err != nil {
		return err
	}
	var stack map[string]string
	if stackEnv != "" {
		if stack, err = readEnvFile(stackEnv); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	env, _ := Settings(environMap(os.Environ()), stack, r.opts) // the run says what the environment overrides
	get := func(k string) string { return r.option(env, k, c.defaultOf(k)) }
	t := Target{Host: get("mysql_host"), Port: get("mysql_port"), User: get("mysql_user"),
		Password: get("mysql_password"), DB: get("mysql_db")}
	if f := get("mysql_password_file"); f != "" {
		b, err := os.ReadFile(f) //nolint:gosec // the user's password file
		if err != nil {
			return badInput(fmt.Sprintf("mysql_password_file %s: cannot read the file (%v)", f, err))
		}
		t.Password = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	return json.NewEncoder(os.Stdout).Encode(t)
}
