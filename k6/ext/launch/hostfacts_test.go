package launch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostFactsAreReadFromProc(t *testing.T) {
	proc := t.TempDir()
	cpu := "processor\t: 0\nmodel name\t: Test CPU \"X\" @ 2.00GHz\n\nprocessor\t: 1\nmodel name\t: Test CPU \"X\" @ 2.00GHz\n\n" +
		"processor\t: 2\nmodel name\t: Test CPU \"X\" @ 2.00GHz\n"
	mem := "MemTotal:        8058936 kB\nMemFree:         1000000 kB\n"
	for name, text := range map[string]string{"cpuinfo": cpu, "meminfo": mem} {
		if err := os.WriteFile(filepath.Join(proc, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := readHostFacts(proc)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if f.CPUModel != `Test CPU "X" @ 2.00GHz` || f.CPUCores != 3 || f.MemoryGiB != 7.7 || f.Hostname != host {
		t.Errorf("facts %+v", f)
	}
	if !strings.HasPrefix(f.K6, "k6 ") || !strings.Contains(f.K6, "(go1.") {
		t.Errorf("k6 version %q, want the first line of `k6 version`", f.K6)
	}
	if _, err := readHostFacts(filepath.Join(proc, "missing")); err == nil {
		t.Error("no /proc: want an error")
	}
}

func TestLaunchAddsHostFactsUnlessGiven(t *testing.T) {
	o := &runOpts{prefix: "test"}
	env := map[string]string{}
	o.addHostFacts(env)
	var f map[string]any
	if err := json.Unmarshal([]byte(env["TBS_HOST_FACTS"]), &f); err != nil {
		t.Fatalf("TBS_HOST_FACTS %q: %v", env["TBS_HOST_FACTS"], err)
	}
	for _, k := range []string{"cpu_model", "cpu_cores", "memory_gib", "hostname", "k6"} {
		if _, ok := f[k]; !ok {
			t.Errorf("TBS_HOST_FACTS has no %s: %v", k, f)
		}
	}
	given := map[string]string{"TBS_HOST_FACTS": `{"hostname":"pod"}`}
	o.addHostFacts(given)
	if given["TBS_HOST_FACTS"] != `{"hostname":"pod"}` {
		t.Errorf("given facts replaced: %s", given["TBS_HOST_FACTS"])
	}
}

// The launcher reads the contract once per launch: the results folder, the split's plan and
// the target's settings all ask for it.
func TestTheContractIsReadOncePerLaunch(t *testing.T) {
	before := contractReads
	for i := 0; i < 3; i++ {
		if _, err := loadContract("../../oltp.js"); err != nil {
			t.Fatal(err)
		}
	}
	if n := contractReads - before; n > 1 {
		t.Errorf("k6/contract.json read %d times for one script", n)
	}
}
