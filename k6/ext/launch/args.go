package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// runArgs is a `k6 run` command line as the launchers get it: k6's own flags, the options as
// -e name=value, the script last, and the launcher's --instances N / --instance LIST anywhere.
type runArgs struct {
	k6        []string          // what goes to `k6 run` (the launcher's flags taken out)
	opts      map[string]string // -e name=value (the last of a name wins, as in k6)
	script    string            // the last argument
	instances string            // --instances N ("" when not given)
	instance  string            // --instance LIST
	given     bool              // --instances was given
}

// envArg returns the name=value of an -e/--env argument pair or joined form, and how many
// arguments it spans (0: not an -e).
func envArg(args []string, i int) (string, int) {
	a := args[i]
	switch {
	case a == "-e" || a == "--env":
		if i+1 < len(args) {
			return args[i+1], 2
		}
		return "", 1
	case strings.HasPrefix(a, "-e="):
		return a[3:], 1
	case strings.HasPrefix(a, "--env="):
		return a[6:], 1
	case strings.HasPrefix(a, "-e") && len(a) > 2 && a[2] != '-':
		return a[2:], 1
	}
	return "", 0
}

func parseRunArgs(args []string) (*runArgs, error) {
	r := &runArgs{opts: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--instances":
			if i+1 >= len(args) {
				return nil, badInput("--instances needs a number of k6 processes, 1 or more")
			}
			r.instances, r.given = args[i+1], true
			i++
			continue
		case strings.HasPrefix(a, "--instances="):
			r.instances, r.given = a[len("--instances="):], true
			continue
		case a == "--instance":
			if i+1 >= len(args) {
				return nil, badInput("--instance needs the instance number(s) to run here, e.g. 0 or 0,1")
			}
			r.instance = args[i+1]
			i++
			continue
		case strings.HasPrefix(a, "--instance="):
			r.instance = a[len("--instance="):]
			continue
		}
		if kv, n := envArg(args, i); n > 0 {
			if name, value, ok := strings.Cut(kv, "="); ok {
				if abs, changed := absFile(name, value); changed {
					// k6 opens a relative file next to the script: the user meant their own directory
					value = abs
					r.opts[name] = value
					r.k6 = append(r.k6, "-e", name+"="+value)
					i += n - 1
					continue
				}
				r.opts[name] = value
			}
			r.k6 = append(r.k6, args[i:i+n]...)
			i += n - 1
			continue
		}
		r.k6 = append(r.k6, a)
	}
	// the script: the last .js or .tar argument (k6 takes options after it too:
	// `docker compose run --rm k6 run oltp.js -e threads=8`), else the last argument
	for i := len(r.k6) - 1; i >= 0 && r.script == ""; i-- {
		if a := r.k6[i]; (strings.HasSuffix(a, ".js") || strings.HasSuffix(a, ".tar")) && !strings.HasPrefix(a, "-") &&
			(i == 0 || (r.k6[i-1] != "-e" && r.k6[i-1] != "--env")) {
			r.script = a
		}
	}
	if r.script == "" && len(r.k6) > 0 {
		r.script = r.k6[len(r.k6)-1]
	}
	return r, nil
}

// option: -e wins over the environment, as k6's __ENV has it; then the default.
func (r *runArgs) option(env map[string]string, name, def string) string {
	if v, ok := r.opts[name]; ok {
		return v
	}
	if v, ok := env[name]; ok {
		return v
	}
	return def
}

// isRun: a run of oltp.js or tpcc.js (the scripts that measure; prepare.js loads tables).
func (r *runArgs) isRun() bool {
	return strings.HasSuffix(r.script, "oltp.js") || strings.HasSuffix(r.script, "tpcc.js")
}

// contract is what the launcher reads of k6/contract.json, found beside the script (k6/ here,
// /scripts in the image): the testid rule and the options' defaults.
type contract struct {
	Testid struct {
		Pattern   string `json:"pattern"`
		MaxLength int    `json:"max_length"`
	} `json:"testid"`
	Options map[string]struct {
		Default any `json:"default"`
	} `json:"options"`
	re *regexp.Regexp
}

// contracts: each contract.json read, by path: a launch reads its contract once, however many
// of its steps (the results folder, the split's plan, the target) need it.
var contracts = struct {
	sync.Mutex
	byPath map[string]*contract
}{byPath: map[string]*contract{}}

// loadContract: the contract beside the script (read once per process).
func loadContract(script string) (*contract, error) {
	path := filepath.Join(filepath.Dir(script), "contract.json")
	contracts.Lock()
	defer contracts.Unlock()
	if c, ok := contracts.byPath[path]; ok {
		return c, nil
	}
	c, err := readContract(path)
	if err == nil {
		contracts.byPath[path] = c
	}
	return c, err
}

var contractReads int // how many times a contract.json was read (a test counts them)

func readContract(path string) (*contract, error) {
	contractReads++
	b, err := os.ReadFile(path) //nolint:gosec // the repository's own file beside the script
	if err != nil {
		return nil, fmt.Errorf("reading %s (k6/contract.json, beside the script): %w", path, err)
	}
	c := &contract{}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.re, err = regexp.Compile(c.Testid.Pattern); err != nil {
		return nil, fmt.Errorf("%s: testid.pattern: %w", path, err)
	}
	return c, nil
}

func (c *contract) defaultOf(name string) string {
	o, ok := c.Options[name]
	if !ok || o.Default == nil {
		return ""
	}
	switch v := o.Default.(type) {
	case string:
		return v
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, ",")
	default:
		return fmt.Sprint(v)
	}
}

// checkTestID: the contract's rule (it also names files: results/<testid>.json, logs).
func (c *contract) checkTestID(id string) error {
	if !c.re.MatchString(id) {
		return badInput(fmt.Sprintf("testid '%s': letters, digits, '.', '_' and '-' (at most %d, starting with a letter or digit)",
			id, c.Testid.MaxLength))
	}
	return nil
}

// fileSafe: a testid that can name a file when no contract is at hand (k6 rejects bad ones itself).
var fileSafe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

type badInputError struct{ msg string }

func (e badInputError) Error() string { return e.msg }

func badInput(msg string) error { return badInputError{msg} }

// absFile: the option names a file k6 reads (mysql_password_file) by a relative path, which k6
// would open relative to the script's folder (k6/): the path from the caller's working directory
// instead, as a shell user reads it. (abs, true) when it changed the value.
func absFile(name, value string) (string, bool) {
	if name != "mysql_password_file" || value == "" || filepath.IsAbs(value) {
		return value, false
	}
	abs, err := filepath.Abs(value)
	if err != nil {
		return value, false
	}
	return abs, true
}
