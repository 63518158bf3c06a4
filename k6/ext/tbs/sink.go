package tbs

import (
	"time"

	"go.k6.io/k6/metrics"
)

// boundedSink replaces a Trend's end-of-test sink: count, sum, min and max only. The
// percentiles a run reports come from the per-step Histograms.
type boundedSink struct {
	count    uint64
	sum      float64
	min, max float64
}

func (s *boundedSink) Add(sm metrics.Sample) {
	if s.count == 0 || sm.Value < s.min {
		s.min = sm.Value
	}
	if s.count == 0 || sm.Value > s.max {
		s.max = sm.Value
	}
	s.count++
	s.sum += sm.Value
}

func (s *boundedSink) Format(time.Duration) map[string]float64 {
	avg := 0.0
	if s.count > 0 {
		avg = s.sum / float64(s.count)
	}
	return map[string]float64{"count": float64(s.count), "avg": avg, "min": s.min, "max": s.max}
}

func (s *boundedSink) IsEmpty() bool { return s.count == 0 }
