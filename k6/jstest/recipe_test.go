package jstest

// docs/ARCHITECTURE.md's "Adding a workload", applied: one line in k6/contract.json (the
// harness reads it in place of the file; nothing else of k6/ changes), and the option
// validation, the events, the prepared statements and the model all take the new workload.
// (tests/test_contract.py applies the same line for the Python side: docs/options.md, the
// parity cases, the report's titles.)

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ToyLine is the recipe's example: a workload made of parts sysbench.js has.
const ToyLine = `    "oltp_toy": {"trx": true, "event": ["point_selects", "index_updates"], "tables_after": "sum_k"},`

// withToy returns k6/contract.json with the recipe's line added as the first workload.
func withToy(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(k6Dir, "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	const open = `  "workloads": {` + "\n"
	if strings.Count(s, open) != 1 {
		t.Fatalf("k6/contract.json: no single %q to add a workload under", open)
	}
	return strings.Replace(s, open, open+ToyLine+"\n", 1)
}

func TestAddingAWorkloadFollowsTheRecipe(t *testing.T) {
	h := New(t, "")
	h.Files["contract.json"] = withToy(t)
	c, names := readContract(t, h)
	if names[0] != "oltp_toy" {
		t.Fatalf("the toy is not declared: %v", names)
	}
	// the option validation takes it and names it among the valid ones
	if o, err := parse(t, h, map[string]string{"workload": "oltp_toy"}); err != nil || o["workload"] != "oltp_toy" {
		t.Fatalf("workload=oltp_toy: %v %v", o, err)
	}
	if _, err := parse(t, h, map[string]string{"workload": "oltp_toys"}); err == nil || !strings.Contains(err.Error(), "oltp_toy,") {
		t.Errorf("a bad workload's error does not list oltp_toy: %v", err)
	}
	// its events are the model's (sysbench's parts, in the declared order), for every option set
	sent := 0
	for _, set := range optionSets {
		sent += checkWorkload(t, h, "oltp_toy", c.Workloads["oltp_toy"], set)
	}
	if sent == 0 {
		t.Fatal("the toy sent no statement")
	}
	// with the defaults: BEGIN, 10 point selects on one table, 1 index update, COMMIT
	s := startStep(t, h, map[string]string{"workload": "oltp_toy", "tables": "2"}, 0, 1, 0)
	got := queries(s.call(t, s.event))
	if len(got) != 13 || got[0] != "exec BEGIN" || got[12] != "exec COMMIT" ||
		!strings.HasPrefix(got[1], "exec SELECT c FROM sbtest") || !strings.HasPrefix(got[11], "exec UPDATE sbtest") {
		t.Errorf("oltp_toy's event: %v", got)
	}
	// only the contract was changed (jstest_driver.js is the harness' own module)
	for f := range h.Files {
		if f != "contract.json" && f != "jstest_driver.js" {
			t.Errorf("the recipe changed %s", f)
		}
	}
}

// The k6 scripts switch on no workload's name, so a new workload needs none: the events come
// from the declaration. The exceptions are setup facts of two of sysbench's workloads that
// are not events (bulk_insert's tables per thread and its ids after earlier runs, oltp_insert's
// empty tables when ids are made by the client).
func TestNoSwitchOnWorkloadNames(t *testing.T) {
	h := New(t, "")
	_, names := readContract(t, h)
	allowed := map[string]map[string]bool{
		"bulk_insert": {"oltp.js": true, "prepare.js": true},
		"oltp_insert": {"prepare.js": true},
	}
	files, _ := filepath.Glob(filepath.Join(k6Dir, "*.js"))
	lib, _ := filepath.Glob(filepath.Join(k6Dir, "lib", "*.js"))
	files = append(files, lib...)
	if len(files) < 10 {
		t.Fatalf("found %d JS files under %s", len(files), k6Dir)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code := regexp.MustCompile(`(?m)//.*$`).ReplaceAllString(string(b), "") // comments may name them
		rel, _ := filepath.Rel(k6Dir, f)
		for _, w := range names {
			if regexp.MustCompile(`['"`+"`"+`]`+w+`['"`+"`"+`]`).MatchString(code) && !allowed[w][rel] {
				t.Errorf("%s names workload %s: declare what it needs in k6/contract.json's workloads instead", rel, w)
			}
		}
	}
}
