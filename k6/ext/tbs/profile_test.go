package tbs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	httppprof "net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// cpuProfile: a CPU profile as Go's runtime writes one, of `seconds` with `n` samples of
// 10 ms on the stack leaf <- main.
func cpuProfile(t *testing.T, seconds, n int, leaf string) []byte {
	t.Helper()
	fm := &profile.Function{ID: 1, Name: "main.main"}
	fl := &profile.Function{ID: 2, Name: leaf}
	lm := &profile.Location{ID: 1, Address: 0x10, Line: []profile.Line{{Function: fm}}}
	ll := &profile.Location{ID: 2, Address: 0x20, Line: []profile.Line{{Function: fl}}}
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10_000_000,
		DurationNanos: int64(seconds) * 1e9,
		TimeNanos:     time.Now().UnixNano(),
		Function:      []*profile.Function{fm, fl},
		Location:      []*profile.Location{lm, ll},
		Sample:        []*profile.Sample{{Location: []*profile.Location{ll, lm}, Value: []int64{int64(n), int64(n) * 10_000_000}}},
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPartsSplitEvenly(t *testing.T) {
	for _, c := range []struct {
		s, max int
		want   []int
	}{{10, 30, []int{10}}, {30, 30, []int{30}}, {31, 30, []int{16, 15}}, {70, 30, []int{24, 23, 23}}, {5, 0, []int{5}}, {0, 30, nil}} {
		if got := parts(c.s, c.max); !reflect.DeepEqual(got, c.want) {
			t.Errorf("parts(%d, %d) = %v, want %v", c.s, c.max, got, c.want)
		}
	}
}

// A window longer than a part: one request per part, for each part's seconds, and one merged
// profile with every part's samples that pprof reads back.
func TestProfileInPartsIsMerged(t *testing.T) {
	var mu sync.Mutex
	var asked []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/profile" {
			http.NotFound(w, r)
			return
		}
		s, _ := strconv.Atoi(r.URL.Query().Get("seconds"))
		mu.Lock()
		asked = append(asked, s)
		mu.Unlock()
		_, _ = w.Write(cpuProfile(t, s, s*3, "pkg/executor.(*X).Next"))
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "run.profiles", "step-8.pb.gz")
	r := TakeProfile(context.Background(), strings.TrimPrefix(srv.URL, "http://"), 7, 3, 5, path)
	if !r.OK {
		t.Fatalf("no profile: %s", r.Why)
	}
	if !reflect.DeepEqual(asked, []int{3, 2, 2}) {
		t.Errorf("asked for %v seconds, want [3 2 2]", asked)
	}
	if r.Samples != 21 || r.Seconds != 7 || r.CPUs < 0.2099 || r.CPUs > 0.2101 {
		t.Errorf("samples %d, seconds %g, cpu %g: want 21, 7, 0.21", r.Samples, r.Seconds, r.CPUs)
	}
	p := keptProfile(t, path)
	if len(p.Sample) != 1 || p.Sample[0].Value[0] != 21 {
		t.Errorf("merged samples %v, want one stack of 21", p.Sample)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}
}

// A status port that refuses, answers 404, answers something that is not a profile or is too
// slow: no file, a reason in one line that names no address, and never longer than the part
// plus its slack.
func TestProfileFaultsSayWhy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	_ = ln.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("<html>hello</html>"))
	}))
	defer html.Close()
	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(stop)
	addr := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	for _, c := range []struct{ name, addr, want string }{
		{"refused", refused, "refused the connection"},
		{"404", addr(notFound), "answered HTTP 404"},
		{"not a profile", addr(html), "not a pprof profile"},
		{"slow", addr(slow), "gave no profile within 2 s"},
		{"not host:port", "http://user:secret@h:1", "not host:port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.pb.gz")
			t0 := time.Now()
			r := TakeProfile(context.Background(), c.addr, 1, 30, 1, path)
			if r.OK || !strings.Contains(r.Why, c.want) {
				t.Errorf("got ok=%v why %q, want %q", r.OK, r.Why, c.want)
			}
			if strings.Contains(r.Why, "127.0.0.1") || strings.Contains(r.Why, "secret") || strings.Contains(r.Why, "\n") {
				t.Errorf("the reason names an address or a secret, or is not one line: %q", r.Why)
			}
			if d := time.Since(t0); d > 4*time.Second {
				t.Errorf("took %v, more than the part and its slack", d)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("a file was written: %v", err)
			}
		})
	}
}

// -- TiKV, PD and the client: against real pprof servers, other processes of this test binary.
//
// No TiKV or PD can run where these tests run (neither is served to this machine), so
// TiKV's and PD's profiles are untested against a real TiKV or PD. What the tests below prove:
// every component's profile is taken at once over one window, from its own process, in parts
// merged, at the path and with the request header that TiKV's and PD's sources read (the helper
// refuses a request without it), and our own k6 process' profile is this process'. What they do
// not prove: that TiKV's pprof-rs protobuf and PD's pprof of a real cluster parse and merge as
// Go's do (TestOlderPprofRsProfileIsNormalized holds the shapes pprof-rs writes), or that the
// addresses a cluster gives are the right ones.

const helperEnv = "TBS_PPROF_HELPER"

// TestMain runs this binary as a pprof helper process when asked (helperEnv), else the tests.
func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		pprofHelper(spec)
		return
	}
	os.Exit(m.Run())
}

// helperBusyWork and clientBusyWork burn CPU, so that each process' profile has samples and
// names the process it came from.
//
//go:noinline
func helperBusyWork(stop <-chan struct{}) { busy(stop) }

//go:noinline
func clientBusyWork(stop <-chan struct{}) { busy(stop) }

var sink uint64

func busy(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		t := time.Now()
		for time.Since(t) < 20*time.Millisecond { // 20 ms of every 100
			for i := 0; i < 1000; i++ {
				sink += uint64(i) * 2654435761
			}
		}
		time.Sleep(80 * time.Millisecond)
	}
}

// pprofHelper serves Go's net/http/pprof CPU profile (the handler PD registers under its API,
// and TiDB's status port serves) at the spec's path ("path|header|value"), refusing a request
// without the header when one is named; prints its address and runs until its stdin closes.
func pprofHelper(spec string) {
	f := strings.SplitN(spec, "|", 3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(f[0], func(w http.ResponseWriter, r *http.Request) {
		if f[1] != "" && r.Header.Get(f[1]) != f[2] {
			http.Error(w, "the helper requires the header "+f[1]+": "+f[2], http.StatusBadRequest)
			return
		}
		httppprof.Profile(w, r)
	})
	go helperBusyWork(make(chan struct{}))
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	fmt.Println("ADDR " + ln.Addr().String())
	_ = http.Serve(ln, mux) //nolint:gosec // a test helper on 127.0.0.1
}

// startHelper starts one pprof helper process and gives its address.
func startHelper(t *testing.T, path, header, value string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$") //nolint:gosec // this test binary
	cmd.Env = append(os.Environ(), helperEnv+"="+path+"|"+header+"|"+value)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		t.Fatalf("the helper gave no address: %q %v", line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "ADDR "))
}

// keptProfile: a kept profile file, parsed by google/pprof (the test fails when it is not one).
func keptProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("%s is not a profile: %v", path, err)
	}
	return p
}

// functionsOf: the function names of a kept profile.
func functionsOf(t *testing.T, path string) map[string]bool {
	t.Helper()
	p := keptProfile(t, path)
	out := map[string]bool{}
	for _, fn := range p.Function {
		out[fn.Name] = true
	}
	return out
}

func TestProfilesOfEveryComponentAtOnce(t *testing.T) {
	dir := t.TempDir()
	targets := []ProfileTarget{
		{"tidb", startHelper(t, "/debug/pprof/profile", "", ""), filepath.Join(dir, "step-8.pb.gz")},
		{"tikv", startHelper(t, "/debug/pprof/profile", "Content-Type", "application/protobuf"), filepath.Join(dir, "step-8.tikv-1.pb.gz")},
		{"tikv", startHelper(t, "/debug/pprof/profile", "Content-Type", "application/protobuf"), filepath.Join(dir, "step-8.tikv-2.pb.gz")},
		{"pd", startHelper(t, "/pd/api/v1/debug/pprof/profile", "PD-Allow-follower-handle", "true"), filepath.Join(dir, "step-8.pd-1.pb.gz")},
		{"client", "", filepath.Join(dir, "step-8.client.pb.gz")},
	}
	stop := make(chan struct{})
	go clientBusyWork(stop)
	defer close(stop)
	t0 := time.Now()
	rs := TakeProfiles(context.Background(), targets, 3, 2, 5)
	if d := time.Since(t0); d > 6*time.Second {
		t.Errorf("took %v: the profiles were not taken at once (3 s each)", d)
	}
	for i, r := range rs {
		tg := targets[i]
		if !r.OK {
			t.Fatalf("%s (%s): no profile: %s", tg.Component, tg.File, r.Why)
		}
		wantParts := []int{2, 1}
		if tg.Component == "client" {
			wantParts = []int{3}
		}
		if !reflect.DeepEqual(r.Parts, wantParts) || r.Seconds < 2.5 || r.Seconds > 3.5 || r.Samples <= 0 || r.CPUs <= 0 {
			t.Errorf("%s: parts %v seconds %g samples %d cpu %g", tg.Component, r.Parts, r.Seconds, r.Samples, r.CPUs)
		}
		// one window: started together, each its 3 s long
		if r.Start-rs[0].Start > 300 || rs[0].Start-r.Start > 300 || r.End-r.Start < 2900 {
			t.Errorf("%s: window [%d, %d] against tidb's [%d, %d]", tg.Component, r.Start, r.End, rs[0].Start, rs[0].End)
		}
		fns := functionsOf(t, tg.File)
		own, other := "helperBusyWork", "clientBusyWork"
		if tg.Component == "client" {
			own, other = other, own
		}
		if !hasSuffix(fns, "."+own) || hasSuffix(fns, "."+other) {
			t.Errorf("%s: the profile is not its own process' (%s in it: %v, %s: %v)", tg.Component, own,
				hasSuffix(fns, "."+own), other, hasSuffix(fns, "."+other))
		}
	}
	if rs[1].Source != sources["tikv"].name || !strings.Contains(rs[3].Source, "/pd/api/v1/") {
		t.Errorf("sources %q, %q", rs[1].Source, rs[3].Source)
	}
}

func hasSuffix(fns map[string]bool, suffix string) bool {
	for f := range fns {
		if strings.HasSuffix(f, suffix) {
			return true
		}
	}
	return false
}

// pprof-rs' shapes (TiKV): a newer one writes samples/count and cpu/nanoseconds with its period
// and duration, as Go does; an older one writes cpu/count alone, no period, no duration, which
// normalize() fills from the 99 Hz and the seconds asked for.
func TestOlderPprofRsProfileIsNormalized(t *testing.T) {
	old := func(seconds int) []byte {
		fn := &profile.Function{ID: 1, Name: "tikv::storage::txn::scheduler::process"}
		loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
		p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "count"}},
			Function: []*profile.Function{fn}, Location: []*profile.Location{loc},
			Sample: []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{int64(seconds) * 99}}}}
		var b bytes.Buffer
		if err := p.WriteUncompressed(&b); err != nil { // pprof-rs does not gzip
			t.Fatal(err)
		}
		return b.Bytes()
	}
	var header, shape string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Get("Content-Type") + " " + r.URL.Query().Get("frequency")
		s, _ := strconv.Atoi(r.URL.Query().Get("seconds"))
		if shape == "newer" { // as cpuProfile writes, at 99 Hz: samples/count and cpu/nanoseconds
			_, _ = w.Write(cpuProfile(t, s, s*99, "tikv::server::f"))
			return
		}
		_, _ = w.Write(old(s))
	}))
	defer srv.Close()
	for _, shape = range []string{"older", "newer"} {
		path := filepath.Join(t.TempDir(), "step-8.tikv-1.pb.gz")
		r := TakeProfiles(context.Background(), []ProfileTarget{{"tikv", strings.TrimPrefix(srv.URL, "http://"), path}}, 4, 2, 5)[0]
		// 4 s at 99 Hz: 396 samples; the older shape's CPU is its samples at 1/99 s each, the newer's
		// its cpu/nanoseconds values (10 ms each in cpuProfile)
		wantCPU := 4.0
		if shape == "newer" {
			wantCPU = 3.96
		}
		if !r.OK || r.Samples != 4*99 || r.Seconds != 4 || r.CPUs < wantCPU-0.01 || r.CPUs > wantCPU+0.01 {
			t.Fatalf("%s: ok %v (%s), samples %d, seconds %g, cpu %g: want 396 samples, 4 s, %g CPU s", shape, r.OK, r.Why,
				r.Samples, r.Seconds, r.CPUs, wantCPU)
		}
		if header != "application/protobuf 99" {
			t.Errorf("TiKV was asked with Content-Type and frequency %q, want application/protobuf 99", header)
		}
		p, err := profile.Parse(bytes.NewReader(mustRead(t, path)))
		if err != nil || p.PeriodType.Unit != "nanoseconds" || (shape == "older" && p.Period != int64(1e9)/99) {
			t.Errorf("%s: kept profile: %v, period %d", shape, err, p.Period)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The reasons of TiKV's, PD's and the client's profiles name no address or port, one line each.
func TestComponentFaultsSayWhyWithoutTheAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	_ = ln.Close()
	_, port, _ := net.SplitHostPort(refused)
	dir := t.TempDir()
	busyDir := filepath.Join(dir, "busy")
	var b bytes.Buffer
	if err := pprof.StartCPUProfile(&b); err != nil {
		t.Fatal(err)
	}
	rs := TakeProfiles(context.Background(), []ProfileTarget{
		{"tikv", refused, filepath.Join(dir, "a")},
		{"pd", "pd-secret-host.invalid:2379", filepath.Join(dir, "b")},
		{"pd", "user:secret@pd:2379", filepath.Join(dir, "c")},
		{"client", "", filepath.Join(busyDir, "d")},
		{"tiflash", refused, filepath.Join(dir, "e")},
	}, 1, 30, 1)
	pprof.StopCPUProfile()
	want := []string{"refused the connection", "", "not host:port", "another CPU profile of this process is running", "unknown component"}
	for i, r := range rs {
		if r.OK || (want[i] != "" && !strings.Contains(r.Why, want[i])) || r.Why == "" {
			t.Errorf("%d: ok %v why %q, want %q", i, r.OK, r.Why, want[i])
		}
		for _, leak := range []string{"127.0.0.1", port, "secret", "\n"} {
			if strings.Contains(r.Why, leak) {
				t.Errorf("%d: the reason holds %q: %q", i, leak, r.Why)
			}
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files written: %v", ents)
	}
}
