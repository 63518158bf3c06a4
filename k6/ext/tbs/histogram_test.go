package tbs

import (
	"math"
	"math/rand"
	"sort"
	"testing"
)

// sysbench's sb_histogram, transcribed from sb_histogram.c as a reference: the bucket of a
// value and the nearest-rank percentile over buckets.
func refBucket(v float64) int {
	deduct := math.Log(1e-3)
	mult := 1023 / (math.Log(1e5) - deduct)
	i := int(math.Floor((math.Log(v)-deduct)*mult + 0.5))
	if i < 0 {
		return 0
	}
	if i > 1023 {
		return 1023
	}
	return i
}

func TestBucketEdges(t *testing.T) {
	cases := map[float64]int{1e-3: 0, 1e-4: 0, 1e5: 1023, 1e6: 1023, 0: 0}
	for v, want := range cases {
		if got := bucketOf(v); got != want {
			t.Errorf("bucketOf(%g) = %d, want %d", v, got, want)
		}
	}
	// each bucket's reported value falls back into the same bucket, and buckets are
	// about 1.8% wide (sysbench's resolution)
	for i := 0; i < histBuckets; i++ {
		if got := bucketOf(bucketValue(i)); got != i {
			t.Fatalf("bucketOf(bucketValue(%d)) = %d", i, got)
		}
	}
	if r := bucketValue(501) / bucketValue(500); r < 1.017 || r > 1.019 {
		t.Errorf("bucket width ratio %f, want about 1.018", r)
	}
}

func TestPercentileMatchesSysbenchMethod(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 20; round++ {
		h := newHistogram()
		n := 1 + rng.Intn(5000)
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = math.Exp(rng.NormFloat64()*1.5 + 1) // log-normal latencies around 2.7 ms
			h.Add(vals[i], 0)
		}
		for _, p := range []float64{50, 95, 99, 99.9, 100} {
			// reference: buckets counted from the raw values, then nearest rank
			var counts [1024]uint64
			for _, v := range vals {
				counts[refBucket(v)]++
			}
			nmax := uint64(math.Floor(float64(n)*p/100 + 0.5))
			var cur uint64
			i := 0
			for ; i < 1024; i++ {
				cur += counts[i]
				if cur >= nmax {
					break
				}
			}
			want := math.Exp(float64(i)/(1023/(math.Log(1e5)-math.Log(1e-3))) + math.Log(1e-3))
			if got := h.Percentile(p); got != want {
				t.Fatalf("round %d p%g: got %g want %g", round, p, got, want)
			}
			// and it is the bucket of the value of that rank among the raw values
			sorted := append([]float64(nil), vals...)
			sort.Float64s(sorted)
			k := int(math.Floor(float64(n)*p/100+0.5)) - 1
			if k < 0 {
				k = 0
			}
			if bucketOf(h.Percentile(p)) != bucketOf(sorted[k]) {
				t.Fatalf("round %d p%g: %g is not in the bucket of the rank-%d value %g", round, p, h.Percentile(p), k+1, sorted[k])
			}
		}
		if h.Count() != float64(n) {
			t.Fatalf("count %v want %d", h.Count(), n)
		}
	}
	if got := newHistogram().Percentile(95); got != 0 {
		t.Errorf("empty histogram p95 = %g, want 0", got)
	}
}

func TestGapsBetweenEventEnds(t *testing.T) {
	h := newHistogram()
	for _, end := range []float64{1000, 1010, 1020, 3020, 3030, 3025} {
		h.Add(1, end)
	}
	s := h.Snapshot()
	if s["max_gap_ms"].(float64) != 2000 || s["max_gap_start"].(float64) != 1020 {
		t.Errorf("gap %v from %v, want 2000 from 1020", s["max_gap_ms"], s["max_gap_start"])
	}
	if s["last_end"].(float64) != 3030 || s["first_end"].(float64) != 1000 {
		t.Errorf("first/last end %v/%v", s["first_end"], s["last_end"])
	}
}
