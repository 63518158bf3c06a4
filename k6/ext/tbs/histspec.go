package tbs

// The histogram's definition as data, for everything outside this package that needs it:
// k6/contract.json's `latency_histogram` is generated from it (`cd k6 && go generate
// ./ext/tbs`; histspec_test.go fails when the file drifts), so the report's Python reads the
// same constants, and tbs.latencyHistogram() gives it to the scripts. histogram.go's
// constants stay the one definition.

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
)

//go:generate go test -run TestContractLatencyHistogram -update .

// HistogramSpec is sysbench's latency histogram as data. ValuesMs[i] is bucketValue(i),
// exactly (Go's math.Exp and C's exp differ in the last bit for about one value in seven:
// a reader that wants the figures k6 reports takes them from here).
type HistogramSpec struct {
	Comment     string    `json:"$comment"`
	Scheme      string    `json:"scheme"`
	Buckets     int       `json:"buckets"`
	MinMs       float64   `json:"min_ms"`
	MaxMs       float64   `json:"max_ms"`
	Deduct      float64   `json:"deduct"`
	Mult        float64   `json:"mult"`
	BucketRatio float64   `json:"bucket_ratio"`
	Bucket      string    `json:"bucket"`
	Value       string    `json:"value"`
	Percentile  string    `json:"percentile"`
	ValuesMs    []float64 `json:"values_ms,omitempty"`
}

func latencyHistogramSpec() HistogramSpec {
	vals := make([]float64, histBuckets)
	for i := range vals {
		vals[i] = bucketValue(i)
	}
	return HistogramSpec{
		Comment: "Generated from k6/x/tbs (k6/ext/tbs/histogram.go, the one definition): cd k6 && go generate ./ext/tbs. " +
			"sysbench 1.0.20's latency histogram (sb_histogram.c, sb_logger.c). Read it, do not edit it.",
		Scheme:      "sysbench",
		Buckets:     histBuckets,
		MinMs:       histMinMs,
		MaxMs:       histMaxMs,
		Deduct:      histDeduct,
		Mult:        histMult,
		BucketRatio: math.Exp(1 / histMult),
		Bucket:      "floor((ln(ms) - deduct) * mult + 0.5), clamped to 0 .. buckets - 1; 0 when ms is not above 0",
		Value:       "values_ms[i] = exp(i / mult + deduct), as computed by Go",
		Percentile:  "nearest rank: values_ms of the first bucket at which the running count reaches floor(count * p / 100 + 0.5); 0 when count is 0",
		ValuesMs:    vals,
	}
}

// LatencyHistogram returns the histogram's definition (HistogramSpec) as plain data.
func (m *Module) LatencyHistogram() map[string]any {
	var out map[string]any
	b, _ := json.Marshal(latencyHistogramSpec())
	_ = json.Unmarshal(b, &out)
	return out
}

// contractSection is k6/contract.json's `"latency_histogram": {...}`, at the file's
// indentation, values_ms eight to a line.
func contractSection() (string, error) {
	s := latencyHistogramSpec()
	vals := s.ValuesMs
	s.ValuesMs = nil
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	if err := enc.Encode(s); err != nil {
		return "", err
	}
	head := strings.TrimSuffix(strings.TrimRight(b.String(), "\n"), "\n  }")
	var sb strings.Builder
	sb.WriteString(`  "latency_histogram": `)
	sb.WriteString(head)
	sb.WriteString(",\n    \"values_ms\": [")
	for i, v := range vals {
		if i%8 == 0 {
			sb.WriteString("\n      ")
		} else {
			sb.WriteString(" ")
		}
		x, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		sb.Write(x)
		if i < len(vals)-1 {
			sb.WriteString(",")
		}
	}
	sb.WriteString("\n    ]\n  }")
	return sb.String(), nil
}
