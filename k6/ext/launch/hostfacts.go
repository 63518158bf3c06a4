package launch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// HostFacts is this load generator as the run manifest records it (k6/lib/run.js hostFacts
// reads them from TBS_HOST_FACTS; the report's load generator table and its saturation
// check): CPU model and cores, memory, hostname and our k6's version. The launcher reads them
// for every mode it starts (scripts/k6, compose's k6 services); a pod on Kubernetes, where
// k6-operator's runner starts k6 without the launcher, gets its own from k8s/render-testrun
// (its limits, node and name).
type HostFacts struct {
	CPUModel  string  `json:"cpu_model"`
	CPUCores  int     `json:"cpu_cores"`
	MemoryGiB float64 `json:"memory_gib"`
	Hostname  string  `json:"hostname"`
	K6        string  `json:"k6"`
}

// readHostFacts reads the facts from proc (a /proc): cpuinfo's first "model name" and its
// processors, meminfo's MemTotal in GiB to one decimal.
func readHostFacts(proc string) (HostFacts, error) {
	var f HostFacts
	err := eachLine(filepath.Join(proc, "cpuinfo"), func(k, v string) {
		switch k {
		case "model name":
			if f.CPUModel == "" {
				f.CPUModel = v
			}
		case "processor":
			f.CPUCores++
		}
	})
	if err != nil {
		return f, err
	}
	err = eachLine(filepath.Join(proc, "meminfo"), func(k, v string) {
		if k == "MemTotal" {
			if kb, perr := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64); perr == nil {
				f.MemoryGiB = math.Round(kb/1048576*10) / 10
			}
		}
	})
	if err != nil {
		return f, err
	}
	f.Hostname, _ = os.Hostname()
	f.K6 = k6Version()
	return f, nil
}

// eachLine calls fn with each "key: value" line of a /proc file, both trimmed.
func eachLine(path string, fn func(k, v string)) error {
	fh, err := os.Open(path) //nolint:gosec // a /proc file
	if err != nil {
		return err
	}
	defer func() { _ = fh.Close() }()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			fn(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return sc.Err()
}

// k6Version: the first line of `k6 version`, "k6 v1.8.1 (go1.26.8, linux/amd64)", from this
// binary's build information (k6 keeps its own version in an internal package).
func k6Version() string {
	v := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "go.k6.io/k6" {
				v = m.Version
			}
		}
	}
	return fmt.Sprintf("k6 %s (%s, %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// addHostFacts sets TBS_HOST_FACTS from /proc unless the caller gave them (a test, or a
// wrapper that knows better); without a readable /proc, none (the report says "not recorded").
func (o *runOpts) addHostFacts(env map[string]string) {
	if env["TBS_HOST_FACTS"] != "" {
		return
	}
	f, err := readHostFacts("/proc")
	if err != nil {
		o.say("warning: no host facts for the run manifest: %v", err)
		return
	}
	if b, err := json.Marshal(f); err == nil {
		env["TBS_HOST_FACTS"] = string(b)
	}
}
