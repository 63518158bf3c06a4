package tbs

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
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
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("the kept file is not a profile: %v", err)
	}
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
