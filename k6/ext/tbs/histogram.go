package tbs

// sysbench 1.0.20's latency histogram (sb_histogram.c): 1,024 logarithmic buckets from
// 0.001 ms to 100 s, percentiles by nearest rank; one per thread step, merged over every VU of
// the process as events end. Bounded: no sample is kept.

import (
	"math"
	"sync"
	"sync/atomic"
)

// sysbench's latency histogram (sb_logger.c: OPER_LOG_GRANULARITY, _MIN_VALUE, _MAX_VALUE).
const (
	histBuckets = 1024
	histMinMs   = 1e-3
	histMaxMs   = 1e5
)

var (
	histDeduct = math.Log(histMinMs)
	histMult   = (histBuckets - 1) / (math.Log(histMaxMs) - histDeduct)
)

// bucketOf is sb_histogram_update's slot: floor((ln v - ln min) * mult + 0.5), clamped.
func bucketOf(ms float64) int {
	if !(ms > 0) {
		return 0
	}
	i := math.Floor((math.Log(ms)-histDeduct)*histMult + 0.5)
	if i < 0 {
		return 0
	}
	if i >= histBuckets {
		return histBuckets - 1
	}
	return int(i)
}

// bucketValue is the value sysbench reports for bucket i: exp(i / mult + ln min).
func bucketValue(i int) float64 { return math.Exp(float64(i)/histMult + histDeduct) }

// Histogram is one step's latencies (ms), plus when its events ended: the last end and the
// longest time in which no event ended (an outage shows there).
type Histogram struct {
	buckets  [histBuckets]atomic.Uint64
	count    atomic.Uint64
	sum      atomicFloat
	min, max atomicFloat
	firstEnd atomicFloat
	lastEnd  atomicFloat
	maxGap   atomicFloat
	gapStart atomicFloat
	gapMu    sync.Mutex
	threads  threadsOf // each thread's events and execution time (fairness.go)
}

func newHistogram() *Histogram {
	h := &Histogram{}
	h.min.store(math.Inf(1))
	h.max.store(math.Inf(-1))
	return h
}

// Add records one latency (ms) of an event that ended at `end` (epoch ms, 0: unknown).
func (h *Histogram) Add(ms, end float64) { h.add(bucketOf(ms), ms, end) }

// add is Add with the bucket of ms already known (the recorder computes it once per event).
func (h *Histogram) add(b int, ms, end float64) {
	h.buckets[b].Add(1)
	h.count.Add(1)
	h.sum.add(ms)
	h.min.min(ms)
	h.max.max(ms)
	if end > 0 {
		h.ended(end)
	}
}

// ended follows event ends: the longest gap between two consecutive ends.
func (h *Histogram) ended(end float64) {
	prev := h.lastEnd.swap(end)
	if prev == 0 {
		h.firstEnd.bits.CompareAndSwap(0, math.Float64bits(end))
		return
	}
	if prev > end { // two VUs ended at once and swapped in the other order
		h.lastEnd.max(prev)
		return
	}
	if gap := end - prev; gap > h.maxGap.load() {
		h.gapMu.Lock()
		if gap > h.maxGap.load() {
			h.maxGap.store(gap)
			h.gapStart.store(prev)
		}
		h.gapMu.Unlock()
	}
}

// Percentile is sysbench's: the value of the first bucket at which the running count
// reaches floor(count * p / 100 + 0.5) (nearest rank). 0 when the histogram is empty.
func (h *Histogram) Percentile(p float64) float64 {
	var counts [histBuckets]uint64
	var n uint64
	for i := range counts {
		counts[i] = h.buckets[i].Load()
		n += counts[i]
	}
	return percentileOf(counts[:], n, p)
}

func percentileOf(counts []uint64, n uint64, p float64) float64 {
	if n == 0 {
		return 0
	}
	nmax := uint64(math.Floor(float64(n)*p/100 + 0.5))
	var cur uint64
	i := 0
	for ; i < len(counts); i++ {
		cur += counts[i]
		if cur >= nmax {
			break
		}
	}
	if i == len(counts) {
		i = len(counts) - 1
	}
	return bucketValue(i)
}

// Count is the number of latencies recorded.
func (h *Histogram) Count() float64 { return float64(h.count.Load()) }

// Snapshot returns the histogram as plain data: count, sum_ms, min, max, the non-empty
// buckets as [index, count] pairs, and the event-end figures.
func (h *Histogram) Snapshot() map[string]any {
	pairs := [][2]uint64{}
	var n uint64
	for i := range h.buckets {
		if c := h.buckets[i].Load(); c > 0 {
			pairs = append(pairs, [2]uint64{uint64(i), c})
			n += c
		}
	}
	out := map[string]any{
		"scheme": "sysbench", "buckets": histBuckets, "min_ms": histMinMs, "max_ms": histMaxMs,
		"count": n, "sum_ms": h.sum.load(), "counts": pairs,
		"first_end": h.firstEnd.load(), "last_end": h.lastEnd.load(),
		"max_gap_ms": h.maxGap.load(), "max_gap_start": h.gapStart.load(),
	}
	if n > 0 {
		out["min"] = h.min.load()
		out["max"] = h.max.load()
	} else {
		out["min"] = 0.0
		out["max"] = 0.0
	}
	return out
}

// Histogram returns the process-wide histogram called name (made on first use).
func (m *Module) Histogram(name string) *Histogram {
	return shared(m.r, m.r.hists, name, newHistogram)
}

// PercentileOf computes sysbench's percentile over sparse [index, count] pairs (for merged
// histograms).
func (m *Module) PercentileOf(pairs [][]float64, p float64) float64 {
	counts := make([]uint64, histBuckets)
	var n uint64
	for _, pc := range pairs {
		if len(pc) != 2 || pc[0] < 0 || int(pc[0]) >= histBuckets {
			continue
		}
		counts[int(pc[0])] += uint64(pc[1])
		n += uint64(pc[1])
	}
	return percentileOf(counts, n, p)
}

// BucketOf is the sysbench bucket of a latency in ms (for tests).
func (m *Module) BucketOf(ms float64) int { return bucketOf(ms) }
