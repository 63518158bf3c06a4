package tbs

// profile.go: the database's own CPU profile over a step's measured window (k6/lib/profiles.js
// calls it from the profile VU). TiDB serves Go's pprof on its status port
// (/debug/pprof/profile?seconds=N, TiDB's cpuprofile.ProfileHTTPHandler). That handler refuses
// only a duration longer than the status server's WriteTimeout, which TiDB does not set, so the
// parts are our choice: a window longer than partMax seconds is taken in parts back to back
// (a connection lost loses one part's request, and a server that caps the length still answers)
// and merged with github.com/google/pprof/profile.Merge, pprof's own merge.
//
// Nothing here may stall a step or leak an address: every request has a deadline (its seconds
// plus slack), the VU's context cancels it when k6 stops, and the reason given for a missing
// profile names the failure, never the URL (which could hold a user or an internal host name).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// fetchPart takes one profile of `seconds` from base (http://host:port).
func fetchPart(ctx context.Context, base string, seconds, slack int) (*profile.Profile, string) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds+slack)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, seconds), nil)
	if err != nil {
		return nil, "the status address is not usable in a URL"
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
		return nil, fmt.Sprintf("the status port answered HTTP %d to /debug/pprof/profile (%s)", resp.StatusCode,
			oneLine(string(body), 120))
	}
	if len(body) > profileMaxBytes {
		return nil, fmt.Sprintf("the status port's answer is larger than %d MiB", profileMaxBytes>>20)
	}
	p, err := profile.ParseData(body)
	if err != nil || len(p.SampleType) == 0 {
		return nil, "the status port's answer is not a pprof profile (" + oneLine(string(body), 60) + ")"
	}
	return p, ""
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
}

// TakeProfile takes a CPU profile of `seconds` from the pprof server at addr (host:port), in
// parts of at most partMax seconds, each allowed slack seconds beyond its length, merges the
// parts and writes them to path (gzipped protobuf, pprof's format; its folder made). It blocks
// for the profile's length; a part that fails ends it: no file, and why.
func TakeProfile(ctx context.Context, addr string, seconds, partMax, slack int, path string) ProfileResult {
	r := ProfileResult{Parts: parts(seconds, partMax)}
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
		p, why := fetchPart(ctx, base, n, slack)
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
	if err := writeProfile(merged, path); err != nil {
		r.Why = "writing the profile failed (" + errClass(err) + ")"
		return r
	}
	r.OK, r.File = true, path
	r.Seconds = float64(merged.DurationNanos) / 1e9
	r.Samples, r.CPUs = sampleTotals(merged)
	if st, err := os.Stat(path); err == nil {
		r.Bytes = st.Size()
	}
	return r
}

// sampleTotals: the samples and the CPU seconds of a CPU profile (its samples/count and
// cpu/nanoseconds values; a profile without them counts samples only).
func sampleTotals(p *profile.Profile) (int64, float64) {
	ci, ni := -1, -1
	for i, st := range p.SampleType {
		if st.Type == "samples" {
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

// Profile is TakeProfile for JavaScript, with the VU's context (k6 stopping the VU cancels it).
func (m *Module) Profile(addr string, seconds, partMax, slack int, path string) ProfileResult {
	ctx := context.Background()
	if m.vu != nil && m.vu.Context() != nil {
		ctx = m.vu.Context()
	}
	return TakeProfile(ctx, addr, seconds, partMax, slack, path)
}
