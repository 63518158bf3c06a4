package tbs

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite k6/contract.json's latency_histogram from histogram.go")

const contractPath = "../../contract.json"

// sectionBounds finds `  "latency_histogram": {` .. its closing `  }` in the contract's text.
func sectionBounds(t *testing.T, text string) (int, int) {
	t.Helper()
	const open = "\n  \"latency_histogram\": {"
	i := strings.Index(text, open)
	if i < 0 {
		t.Fatalf("%s has no top-level \"latency_histogram\"", contractPath)
	}
	i++
	j := strings.Index(text[i:], "\n  }")
	if j < 0 {
		t.Fatalf("%s: latency_histogram is not closed at two spaces", contractPath)
	}
	return i, i + j + len("\n  }")
}

// k6/contract.json's latency_histogram is generated from histogram.go: the same text, and
// the same numbers read back as JSON (what the report's Python reads).
func TestContractLatencyHistogram(t *testing.T) {
	want, err := contractSection()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(contractPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	a, b := sectionBounds(t, text)
	if *update {
		if text[a:b] != want {
			if err := os.WriteFile(contractPath, []byte(text[:a]+want+text[b:]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if text[a:b] != want {
		t.Fatalf("%s's latency_histogram is not k6/x/tbs's histogram.go: run `cd k6 && go generate ./ext/tbs`", contractPath)
	}
	var c struct {
		H HistogramSpec `json:"latency_histogram"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	h := c.H
	if h.Buckets != histBuckets || h.MinMs != histMinMs || h.MaxMs != histMaxMs || h.Mult != histMult || h.Deduct != histDeduct {
		t.Fatalf("constants read back: %+v", h)
	}
	if len(h.ValuesMs) != histBuckets {
		t.Fatalf("%d values", len(h.ValuesMs))
	}
	for i, v := range h.ValuesMs {
		if v != bucketValue(i) || bucketOf(v) != i {
			t.Fatalf("values_ms[%d] = %v, bucketValue = %v", i, v, bucketValue(i))
		}
	}
	// the width ratio sysbench's buckets have: exp((ln 1e5 - ln 1e-3) / 1023), about 1.8%
	if r := math.Exp((math.Log(1e5) - math.Log(1e-3)) / 1023); math.Abs(h.BucketRatio-r) > 1e-15 {
		t.Fatalf("bucket_ratio %v, want %v", h.BucketRatio, r)
	}
}
