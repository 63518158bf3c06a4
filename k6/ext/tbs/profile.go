package tbs

// profile.go: the CPU profiles of a step's measured window (k6/lib/profiles.js calls profiles()
// from the profile VU), every target's at once, over the same window:
//
//   - tidb: TiDB serves Go's pprof on its status port (/debug/pprof/profile?seconds=N, TiDB's
//     cpuprofile.ProfileHTTPHandler). That handler refuses only a duration longer than the status
//     server's WriteTimeout, which TiDB does not set.
//   - tikv: TiKV's status port (20180) serves /debug/pprof/profile?seconds=N&frequency=F
//     (pprof-rs; TiKV's status_server dump_cpu_prof_to_resp): a flame graph SVG unless the request's
//     Content-Type header is exactly application/protobuf, then the profile in pprof's protobuf.
//     One profile at a time (a second gets HTTP 500 "Already in Profiling", e.g. while TiDB
//     Dashboard's continuous profiling takes one). We ask for its default 99 Hz by name; an older
//     pprof-rs writes no period and no duration, which normalize() fills from what we asked.
//   - pd: PD serves Go's net/http/pprof Profile under its API, /pd/api/v1/debug/pprof/profile on
//     the client port (2379); a follower forwards API requests to the leader unless the request
//     says PD-Allow-follower-handle: true (as TiDB Dashboard's profiler sends), so each member
//     given is profiled itself.
//   - client: our own k6 process (runtime/pprof, started and stopped here), for "does the client
//     set the pace?".
//
// TiKV's and PD's requests are tested against real Go pprof servers only (profile_test.go): no
// TiKV or PD runs on the machines the tests run on.
//
// A remote window longer than partMax seconds is taken in parts back to back (a connection lost
// loses one part's request, and a server that caps the length still answers) and merged with
// github.com/google/pprof/profile.Merge, pprof's own merge.
//
// Nothing here may stall a step or leak an address: every request has a deadline (its seconds
// plus slack), the VU's context cancels it when k6 stops, and the reason given for a missing
// profile names the failure, never the URL (which could hold a user or an internal host name).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
)

const profileMaxBytes = 256 << 20 // a part's answer at most (a CPU profile of a minute is a few MB)

// parts splits seconds into as few parts of at most partMax seconds as there can be, as even as
// they can be (70 s at 30: 24, 23, 23).
func parts(seconds, partMax int) []int {
	if seconds <= 0 {
		return nil
	}
	if partMax <= 0 {
		partMax = seconds
	}
	n := (seconds + partMax - 1) / partMax
	out := make([]int, n)
	for i := range out {
		out[i] = seconds / n
		if i < seconds%n {
			out[i]++
		}
	}
	return out
}

// statusAddr checks a status address: host:port, nothing else (no scheme, path or user).
func statusAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" || strings.ContainsAny(addr, "/@?#") {
		return fmt.Errorf("not host:port")
	}
	return nil
}

// whyFailed: why a part failed, in words that name no address.
func whyFailed(err error, seconds, slack int) string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return "the run ended while the profile was being taken"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the status port refused the connection (is it the server's status port, and is it listening?)"
	case errors.As(err, &dns):
		return "the status address's host name does not resolve"
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return fmt.Sprintf("the status port gave no profile within %d s (a %d-s profile plus %d s)", seconds+slack, seconds, slack)
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "the status port closed the connection before the profile was complete"
	}
	return "fetching the profile failed (" + errClass(err) + ")"
}

// errClass is the innermost error's text with anything that looks like an address cut off.
func errClass(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			break
		}
		err = u
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// source: where and how a component serves its CPU profile.
type source struct {
	path   string            // the profile's path; ?seconds=N is added
	query  string            // more of the query
	header map[string]string // request headers the server reads
	hz     int               // the sampling rate asked for (0: the server's own, which it records)
	name   string            // the component, for the manifest's `source`
}

var sources = map[string]source{
	"tidb": {path: "/debug/pprof/profile", name: "TiDB status port /debug/pprof/profile"},
	"tikv": {path: "/debug/pprof/profile", query: "&frequency=99", hz: 99,
		header: map[string]string{"Content-Type": "application/protobuf"},
		name:   "TiKV status port /debug/pprof/profile (Content-Type: application/protobuf)"},
	"pd": {path: "/pd/api/v1/debug/pprof/profile", header: map[string]string{"PD-Allow-follower-handle": "true"},
		name: "PD client port /pd/api/v1/debug/pprof/profile"},
}

// fetchPart takes one profile of `seconds` from base (http://host:port).
func fetchPart(ctx context.Context, src source, base string, seconds, slack int) (*profile.Profile, string) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds+slack)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s%s?seconds=%d%s", base, src.path, seconds, src.query), nil)
	if err != nil {
		return nil, "the status address is not usable in a URL"
	}
	for k, v := range src.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, whyFailed(err, seconds, slack)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, profileMaxBytes+1))
	if err != nil {
		return nil, whyFailed(err, seconds, slack)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Sprintf("the status port answered HTTP %d to %s (%s)", resp.StatusCode, src.path,
			oneLine(string(body), 120))
	}
	if len(body) > profileMaxBytes {
		return nil, fmt.Sprintf("the status port's answer is larger than %d MiB", profileMaxBytes>>20)
	}
	p, err := profile.ParseData(body)
	if err != nil || len(p.SampleType) == 0 {
		return nil, "the status port's answer is not a pprof profile (" + oneLine(string(body), 60) + ")"
	}
	normalize(p, seconds, src.hz)
	return p, ""
}

// normalize fills what an older pprof-rs (TiKV) leaves out: the duration (the seconds asked) and,
// given the rate asked for, the period of one sample in CPU nanoseconds.
func normalize(p *profile.Profile, seconds, hz int) {
	if p.DurationNanos == 0 {
		p.DurationNanos = int64(seconds) * 1e9
	}
	if p.Period == 0 && hz > 0 {
		p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
		p.Period = 1e9 / int64(hz)
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "?")), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// ProfileResult is what profile() gives JavaScript: the profile's file and figures, or why
// there is none.
type ProfileResult struct {
	OK      bool    `js:"ok"`
	Why     string  `js:"why"`
	File    string  `js:"file"`
	Parts   []int   `js:"parts"`
	Seconds float64 `js:"seconds"` // the profile's own duration (the merged parts')
	Samples int64   `js:"samples"`
	CPUs    float64 `js:"cpuSeconds"`
	Bytes   int64   `js:"bytes"`
	Start   int64   `js:"start"` // epoch ms: the first request sent (the client's profile started)
	End     int64   `js:"end"`   // epoch ms: the last answer read (the client's profile stopped)
	Source  string  `js:"source"`
}

// TakeProfile takes a CPU profile of `seconds` from the pprof server at addr (host:port), in
// parts of at most partMax seconds, each allowed slack seconds beyond its length, merges the
// parts and writes them to path (gzipped protobuf, pprof's format; its folder made). It blocks
// for the profile's length; a part that fails ends it: no file, and why.
func TakeProfile(ctx context.Context, addr string, seconds, partMax, slack int, path string) ProfileResult {
	return takeRemote(ctx, sources["tidb"], addr, seconds, partMax, slack, path)
}

func takeRemote(ctx context.Context, src source, addr string, seconds, partMax, slack int, path string) ProfileResult {
	r := ProfileResult{Parts: parts(seconds, partMax), Source: src.name}
	if err := statusAddr(addr); err != nil {
		r.Why = "the status address is not host:port"
		return r
	}
	if len(r.Parts) == 0 {
		r.Why = "the window is empty"
		return r
	}
	base := "http://" + addr
	got := make([]*profile.Profile, 0, len(r.Parts))
	for i, n := range r.Parts {
		p, why := fetchPart(ctx, src, base, n, slack)
		if why != "" {
			if len(r.Parts) > 1 {
				why = fmt.Sprintf("part %d of %d: %s", i+1, len(r.Parts), why)
			}
			r.Why = why
			return r
		}
		got = append(got, p)
	}
	merged, err := profile.Merge(got)
	if err != nil {
		r.Why = "the parts do not merge (" + errClass(err) + ")"
		return r
	}
	return kept(r, merged, path)
}

// kept writes p to path and fills r's figures from it.
func kept(r ProfileResult, p *profile.Profile, path string) ProfileResult {
	if err := writeProfile(p, path); err != nil {
		r.Why = "writing the profile failed (" + errClass(err) + ")"
		return r
	}
	r.OK, r.File = true, path
	r.Seconds = float64(p.DurationNanos) / 1e9
	r.Samples, r.CPUs = sampleTotals(p)
	if st, err := os.Stat(path); err == nil {
		r.Bytes = st.Size()
	}
	return r
}

// clientMu: one client profile at a time in this process (Go's runtime has one CPU profiler).
var clientMu sync.Mutex

// takeClient profiles this process for `seconds` (runtime/pprof at Go's 100 Hz), or until ctx
// ends, and writes the profile to path.
func takeClient(ctx context.Context, seconds int, path string) ProfileResult {
	r := ProfileResult{Parts: parts(seconds, seconds), Source: "k6's own process (runtime/pprof)"}
	if seconds <= 0 {
		r.Why = "the window is empty"
		return r
	}
	if !clientMu.TryLock() {
		r.Why = "k6's own CPU profile is already being taken"
		return r
	}
	defer clientMu.Unlock()
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		r.Why = "k6's own CPU profile could not start (another CPU profile of this process is running: k6's --profiling-enabled?)"
		return r
	}
	t := time.NewTimer(time.Duration(seconds) * time.Second)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		pprof.StopCPUProfile()
		r.Why = "the run ended while the profile was being taken"
		return r
	}
	pprof.StopCPUProfile()
	p, err := profile.Parse(&buf)
	if err != nil {
		r.Why = "k6's own CPU profile does not parse (" + errClass(err) + ")"
		return r
	}
	return kept(r, p, path)
}

// ProfileTarget is one profile of a step's window: a component (tidb, tikv, pd: its pprof
// server at addr, host:port; client: this k6 process, no addr) and the file it is written to.
type ProfileTarget struct {
	Component string `js:"component"`
	Addr      string `js:"addr"`
	File      string `js:"file"`
}

// TakeProfiles takes every target's profile of `seconds` at once (each remote one in parts of at
// most partMax seconds, each part allowed slack seconds beyond its length) and gives their
// results in the targets' order. It blocks for the longest of them.
func TakeProfiles(ctx context.Context, targets []ProfileTarget, seconds, partMax, slack int) []ProfileResult {
	out := make([]ProfileResult, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now().UnixMilli()
			src, ok := sources[t.Component]
			switch {
			case t.Component == "client":
				out[i] = takeClient(ctx, seconds, t.File)
			case ok:
				out[i] = takeRemote(ctx, src, t.Addr, seconds, partMax, slack, t.File)
			default:
				out[i] = ProfileResult{Why: fmt.Sprintf("unknown component %q (valid: client, pd, tidb, tikv)", t.Component)}
			}
			out[i].Start, out[i].End = start, time.Now().UnixMilli()
		}()
	}
	wg.Wait()
	return out
}

// sampleTotals: the samples and the CPU seconds of a CPU profile (its first value counted in
// samples, unit count, and its cpu/nanoseconds value; without the latter, the samples times
// the period when that is in nanoseconds, as an older pprof-rs writes: cpu/count only).
func sampleTotals(p *profile.Profile) (int64, float64) {
	ci, ni := -1, -1
	for i, st := range p.SampleType {
		if st.Unit == "count" && ci < 0 {
			ci = i
		}
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			ni = i
		}
	}
	var n, ns int64
	for _, s := range p.Sample {
		if ci >= 0 {
			n += s.Value[ci]
		}
		if ni >= 0 {
			ns += s.Value[ni]
		}
	}
	if ni < 0 && p.PeriodType != nil && p.PeriodType.Unit == "nanoseconds" {
		ns = n * p.Period
	}
	return n, float64(ns) / 1e9
}

func writeProfile(p *profile.Profile, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // beside the run's results
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp) //nolint:gosec // the run's results folder
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil { // gzipped, as pprof writes it
		_ = f.Close()
		_ = os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// Profiles is TakeProfiles for JavaScript, with the VU's context (k6 stopping the VU cancels it).
func (m *Module) Profiles(targets []ProfileTarget, seconds, partMax, slack int) []ProfileResult {
	ctx := context.Background()
	if m.vu != nil && m.vu.Context() != nil {
		ctx = m.vu.Context()
	}
	return TakeProfiles(ctx, targets, seconds, partMax, slack)
}
