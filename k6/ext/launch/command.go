// Package launch is tidb-bench-stack's launcher core, the k6 subcommand `k6 x tbs`: every way a
// run is started goes through it. It makes the testid (NewTestID, the one place), splits a run
// over k6 processes (plan, Segment, Sequence, CheckSplit) and assembles the target's settings
// (Settings). The mode wrappers only add what is their own:
//
//   - scripts/k6 (the local stack, and --instances N): `k6 x tbs run --stack-env .stack/k6.env
//     --log ... --run-logs ... --merge merge.py <k6 run args>`;
//   - k6/docker-entrypoint.sh (compose's k6): `k6 x tbs run --run-logs $TBS_RUN_LOGS ...`;
//   - compose/k6/instance.sh (compose's k6-instance replicas): claims an instance number, then
//     `k6 x tbs run --instances N --instance i ...`;
//   - k8s/render-testrun: `k6 x tbs plan --flag --parallelism --instances P ...` (testid, start
//     time, the split's check) for the TestRun's arguments.
//
// It is part of our k6 build because that binary is the one thing every mode has: the compose
// image and the Kubernetes runners have no Python (k6/Dockerfile's runtime stage is alpine with
// k6), and k6 v1.8.1 takes subcommand extensions (go.k6.io/k6/subcommand, `k6 x <name>`).
package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.k6.io/k6/cmd/state"
	"go.k6.io/k6/subcommand"
)

// Name is the subcommand's name: `k6 x tbs`.
const Name = "tbs"

const usage = `tidb-bench-stack's launcher core (what scripts/k6, compose's k6 services and
k8s/render-testrun run):

  k6 x tbs testid
      prints a new testid
  k6 x tbs run [--stack-env FILE] [--log FILE] [--run-logs DIR] [--merge MERGE_PY] [--prefix P]
               [--gomaxprocs-auto] K6_RUN_ARGS...
      k6 run with the target's settings assembled (the stack's from FILE; the password given by
      -e or the environment wins over the stack's), the testid made when not given, the run's
      lines appended to FILE and DIR/<testid>.log; with --instances N [--instance LIST] among
      the arguments, the run split over N k6 processes (execution segments), merged by MERGE_PY
  k6 x tbs plan [--flag NAME] [--start-in SECONDS] --instances N K6_RUN_ARGS...
      checks a split run and prints its plan as JSON (testid, start_at, instances, ...)
  k6 x tbs target [--stack-env FILE] SCRIPT < OPTIONS_JSON
      prints the target k6 would connect to (host, port, user, password, db) as JSON, from the
      user's options ({"name": "value"} on stdin), the environment and the stack's FILE`

func init() {
	subcommand.RegisterExtension(Name, func(_ *state.GlobalState) *cobra.Command {
		return &cobra.Command{
			Use:                Name,
			Short:              "tidb-bench-stack's launcher core: testid, split runs, the target's settings",
			Long:               usage,
			DisableFlagParsing: true,
			SilenceUsage:       true,
			SilenceErrors:      true,
			RunE: func(_ *cobra.Command, args []string) error {
				os.Exit(Main(args))
				return nil
			},
		}
	})
}

// Main runs `k6 x tbs ARGS` and returns its exit status: 2 for bad input (named, before
// anything starts), else the run's.
func Main(args []string) int {
	err := dispatch(args)
	var ee exitError
	var bad badInputError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &bad):
		fmt.Fprintf(os.Stderr, "error: %s\n", bad.msg)
		return 2
	default:
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		return 2
	}
}

func dispatch(args []string) error {
	if len(args) == 0 {
		fmt.Println(usage)
		return nil
	}
	switch args[0] {
	case "testid":
		fmt.Println(NewTestID(time.Now()))
		return nil
	case "run":
		o := &runOpts{prefix: "tbs"}
		rest := args[1:]
		for {
			var err error
			if len(rest) > 0 && rest[0] == "--gomaxprocs-auto" {
				o.autoProcs, rest = true, rest[1:]
				continue
			}
			n := len(rest)
			rest, err = ownFlags(rest, map[string]*string{"--stack-env": &o.stackEnv, "--log": &o.log,
				"--run-logs": &o.runLogs, "--merge": &o.merge, "--prefix": &o.prefix})
			if err != nil {
				return err
			}
			if len(rest) == n {
				break
			}
		}
		return launch(o, rest)
	case "plan":
		flag, startIn := "--instances", "10"
		rest, err := ownFlags(args[1:], map[string]*string{"--flag": &flag, "--start-in": &startIn})
		if err != nil {
			return err
		}
		return printPlan(flag, startIn, rest)
	case "target":
		stackEnv := ""
		rest, err := ownFlags(args[1:], map[string]*string{"--stack-env": &stackEnv})
		if err != nil {
			return err
		}
		return printTarget(stackEnv, rest, os.Stdin)
	case "help", "-h", "--help":
		fmt.Println(usage)
		return nil
	}
	return badInput(fmt.Sprintf("k6 x tbs %s: unknown action (valid: testid, run, plan, target)", args[0]))
}

// ownFlags takes the launcher's flags (NAME VALUE or NAME=VALUE) from the front of args.
func ownFlags(args []string, flags map[string]*string) ([]string, error) {
	for len(args) > 0 {
		name, value, joined := strings.Cut(args[0], "=")
		dst, ok := flags[name]
		if !ok {
			break
		}
		if joined {
			*dst, args = value, args[1:]
			continue
		}
		if len(args) < 2 {
			return nil, badInput(name + " needs a value")
		}
		*dst, args = args[1], args[2:]
	}
	return args, nil
}

func printPlan(flag, startIn string, args []string) error {
	r, err := parseRunArgs(args)
	if err != nil {
		return err
	}
	if !r.given {
		return badInput("k6 x tbs plan needs --instances N")
	}
	var secs int
	if _, err := fmt.Sscan(startIn, &secs); err != nil || secs < 0 {
		return badInput(fmt.Sprintf("--start-in %s: seconds from now, 0 or more", startIn))
	}
	now := time.Now()
	if ms := os.Getenv("TBS_NOW_MS"); ms != "" { // a fixed clock for tests
		var v int64
		if _, err := fmt.Sscan(ms, &v); err == nil {
			now = time.UnixMilli(v)
		}
	}
	p, err := plan(r, environMap(os.Environ()), flag, time.Duration(secs)*time.Second, now)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(p)
}
