// Package tbs is the k6/x/tbs module of tidb-bench-stack: the state that sysbench keeps for
// all its threads at once, which k6's VUs (each its own JavaScript runtime) cannot share
// without help.
//
//   - Histogram: sysbench 1.0.20's latency histogram (sb_histogram.c: 1,024 logarithmic
//     buckets from 0.001 ms to 100 s, percentiles by nearest rank), one per thread step,
//     merged over every VU of the process as events end. Bounded: no sample is kept.
//   - Recorder: ends an event: one call takes the clock, adds the latency to the step's
//     histogram and sends the k6 sample (oltp_latency, a Trend, for Prometheus' native
//     histograms). The Trend's end-of-test sink is replaced by a bounded one, so a run's
//     memory stays flat however long it runs (k6's own Trend sink keeps every sample).
//   - Queue: sysbench's --rate: events arrive as a Poisson process and are taken, in order,
//     by whichever VU is free; the queue holds at most 131,072 events (sysbench's
//     MAX_QUEUE_LEN), arrivals beyond it are counted as dropped.
//   - Unique: sysbench.rand.unique(), one sequence for the whole process.
//   - Counter: a number shared by the VUs of the process (ready VUs, and so on).
//   - cpuSeconds / rssBytes: the process' own resource use.
package tbs

import (
	"context"
	"math"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/grafana/sobek"
	"go.k6.io/k6/js/modules"
	"go.k6.io/k6/metrics"
)

// ImportPath is the module's JS import path.
const ImportPath = "k6/x/tbs"

func init() { modules.Register(ImportPath, newRoot()) }

type root struct {
	mu       sync.Mutex
	hists    map[string]*Histogram
	queues   map[string]*Queue
	uniques  map[string]*Unique
	counters map[string]*Counter
	bounded  map[*metrics.Metric]bool
	marks    map[string]float64
}

func newRoot() *root {
	return &root{
		hists: map[string]*Histogram{}, queues: map[string]*Queue{}, uniques: map[string]*Unique{},
		counters: map[string]*Counter{}, bounded: map[*metrics.Metric]bool{},
	}
}

func (r *root) NewModuleInstance(vu modules.VU) modules.Instance { return &Module{r: r, vu: vu} }

// Module is what a VU sees as the default export of k6/x/tbs.
type Module struct {
	r  *root
	vu modules.VU
}

// Exports implements modules.Instance.
func (m *Module) Exports() modules.Exports { return modules.Exports{Default: m} }

// ---------------------------------------------------------------- clock

var (
	clockBase   = time.Now()
	clockBaseMs = float64(clockBase.UnixNano()) / 1e6
)

// now is epoch milliseconds on the monotonic clock (differences never jump with NTP).
func now() float64 { return clockBaseMs + float64(time.Since(clockBase).Nanoseconds())/1e6 }

// Now returns epoch milliseconds (monotonic, microsecond resolution).
func (m *Module) Now() float64 { return now() }

// ---------------------------------------------------------------- histogram

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

type atomicFloat struct{ bits atomic.Uint64 }

func (a *atomicFloat) load() float64   { return math.Float64frombits(a.bits.Load()) }
func (a *atomicFloat) store(v float64) { a.bits.Store(math.Float64bits(v)) }
func (a *atomicFloat) add(v float64) {
	for {
		old := a.bits.Load()
		if a.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}
func (a *atomicFloat) max(v float64) bool {
	for {
		old := a.bits.Load()
		if math.Float64frombits(old) >= v {
			return false
		}
		if a.bits.CompareAndSwap(old, math.Float64bits(v)) {
			return true
		}
	}
}
func (a *atomicFloat) min(v float64) {
	for {
		old := a.bits.Load()
		if math.Float64frombits(old) <= v {
			return
		}
		if a.bits.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}
func (a *atomicFloat) swap(v float64) float64 {
	return math.Float64frombits(a.bits.Swap(math.Float64bits(v)))
}

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
}

func newHistogram() *Histogram {
	h := &Histogram{}
	h.min.store(math.Inf(1))
	h.max.store(math.Inf(-1))
	return h
}

// Add records one latency (ms) of an event that ended at `end` (epoch ms, 0: unknown).
func (h *Histogram) Add(ms, end float64) {
	h.buckets[bucketOf(ms)].Add(1)
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
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	h, ok := m.r.hists[name]
	if !ok {
		h = newHistogram()
		m.r.hists[name] = h
	}
	return h
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

// ---------------------------------------------------------------- bounded Trend sink

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

// ---------------------------------------------------------------- recorder

// Recorder ends events for one VU: latency into the step's histogram and one k6 sample.
// The samples are sent to k6 in batches (one channel send per Flush or per batchSamples
// events, not one per event; each sample keeps its own time and tags), which takes a
// channel operation and, with GOMAXPROCS=1, a switch to k6's sample goroutine off every
// event. The script flushes with its query counters (every flush_ms and at every step's end).
type Recorder struct {
	m                  *Module
	metric, respMetric *metrics.Metric
	h, rh              *Histogram
	buf                []metrics.Sample
}

// batchSamples bounds a Recorder's unsent samples (a VU that never flushes still sends).
const batchSamples = 512

// trend returns the registry's Trend `name` (time-valued), with a bounded end-of-test sink.
func (m *Module) trend(name string) (*metrics.Metric, error) {
	env := m.vu.InitEnv()
	if env == nil {
		return nil, errInit
	}
	mt, err := env.Registry.NewMetric(name, metrics.Trend, metrics.Time)
	if err != nil {
		return nil, err
	}
	m.r.mu.Lock()
	if !m.r.bounded[mt] {
		mt.Sink = &boundedSink{}
		m.r.bounded[mt] = true
	}
	m.r.mu.Unlock()
	return mt, nil
}

type initError string

func (e initError) Error() string { return string(e) }

const errInit = initError("k6/x/tbs: recorder() must be called in the init context")

// Recorder makes a VU's recorder for the Trend `name` (and `respName` for response
// latencies in rate mode; "" for none). Init context only.
func (m *Module) Recorder(name, respName string) (*Recorder, error) {
	mt, err := m.trend(name)
	if err != nil {
		return nil, err
	}
	r := &Recorder{m: m, metric: mt}
	if respName != "" {
		if r.respMetric, err = m.trend(respName); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Use sets the histograms the next events go to (nil: none, e.g. during warm-up). The
// samples of the events before are sent first.
func (r *Recorder) Use(h, rh *Histogram) {
	r.Flush()
	r.h, r.rh = h, rh
}

func (r *Recorder) push(mt *metrics.Metric, v float64) {
	if mt == nil {
		return
	}
	state := r.m.vu.State()
	if state == nil {
		return
	}
	ctm := state.Tags.GetCurrentValues()
	if r.buf == nil {
		r.buf = make([]metrics.Sample, 0, batchSamples)
	}
	r.buf = append(r.buf, metrics.Sample{
		TimeSeries: metrics.TimeSeries{Metric: mt, Tags: ctm.Tags},
		Time:       time.Now(), Metadata: ctm.Metadata, Value: v,
	})
	if len(r.buf) >= batchSamples {
		r.Flush()
	}
}

// Flush sends the samples gathered since the last Flush to k6 as one container. The slice
// goes to k6's outputs, which may keep it: the next batch starts a new one.
func (r *Recorder) Flush() {
	if len(r.buf) == 0 {
		return
	}
	batch := r.buf
	r.buf = nil
	state := r.m.vu.State()
	if state == nil {
		return
	}
	metrics.PushIfNotDone(r.m.vu.Context(), state.Samples, metrics.Samples(batch))
}

// Done ends an event that started at t0 (epoch ms from now()): records its latency and
// returns the end time.
func (r *Recorder) Done(t0 float64) float64 {
	t := now()
	lat := t - t0
	if r.h != nil {
		r.h.Add(lat, t)
	}
	r.push(r.metric, lat)
	return t
}

// DoneFn returns Done as a native function (start) -> end, and DoneDueFn DoneDue as one
// (start, due) -> end: the per-event calls without sobek's reflection wrapper (exec.go says
// why that matters at tens of thousands of events per second).
func (r *Recorder) DoneFn() sobek.Value {
	rt := r.m.vu.Runtime()
	return rt.ToValue(func(call sobek.FunctionCall) sobek.Value {
		return rt.ToValue(r.Done(call.Argument(0).ToFloat()))
	})
}

// DoneDueFn: see DoneFn.
func (r *Recorder) DoneDueFn() sobek.Value {
	rt := r.m.vu.Runtime()
	return rt.ToValue(func(call sobek.FunctionCall) sobek.Value {
		return rt.ToValue(r.DoneDue(call.Argument(0).ToFloat(), call.Argument(1).ToFloat()))
	})
}

// DoneDue ends an event of rate mode: service latency from t0 (when the VU took it) and
// response latency from due (when it was due: queue time included).
func (r *Recorder) DoneDue(t0, due float64) float64 {
	t := r.Done(t0)
	resp := t - due
	if r.rh != nil {
		r.rh.Add(resp, 0)
	}
	r.push(r.respMetric, resp)
	return t
}

// ---------------------------------------------------------------- rate queue

// maxQueue is sysbench's MAX_QUEUE_LEN.
const maxQueue = 131072

// Queue is sysbench's event queue for --rate: arrivals at exponentially distributed
// intervals (a Poisson process of `rate` per second) from `start` to `end` (epoch ms).
type Queue struct {
	mu      sync.Mutex
	rng     *rand.Rand
	meanMs  float64
	next    float64 // the next arrival not yet generated into pending
	end     float64
	pending []float64 // arrived, not taken (due times)
	head    int
	taken   uint64
	dropped uint64
	busy    atomic.Int64
}

func (q *Queue) exp() float64 { return -q.meanMs * math.Log(1-q.rng.Float64()) }

// fill moves arrivals due by t into pending (dropping those beyond maxQueue).
func (q *Queue) fill(t float64) {
	for q.next <= t && q.next < q.end {
		if len(q.pending)-q.head >= maxQueue {
			q.dropped++
		} else {
			q.pending = append(q.pending, q.next)
		}
		q.next += q.exp()
	}
	if q.head > 4096 && q.head*2 > len(q.pending) {
		q.pending = append(q.pending[:0], q.pending[q.head:]...)
		q.head = 0
	}
}

// take returns the due time (epoch ms) of the next event, waiting until it is due, or -1
// when none is due before `deadline` (epoch ms) or the queue's end.
func (q *Queue) take(ctx context.Context, deadline float64) float64 {
	q.mu.Lock()
	t := now()
	q.fill(t)
	var due float64
	if q.head < len(q.pending) {
		due = q.pending[q.head]
		q.head++
	} else {
		if q.next >= q.end || q.next >= deadline {
			// every arrival before the deadline is taken by a VU that asked earlier: this
			// one has nothing to do until then
			q.mu.Unlock()
			sleepUntil(ctx, deadline)
			return -1
		}
		due = q.next
		q.next += q.exp()
	}
	q.taken++
	q.mu.Unlock()
	if !sleepUntil(ctx, due) {
		return -1
	}
	q.busy.Add(1)
	return due
}

// sleepUntil waits until epoch ms t; false when ctx ended first.
func sleepUntil(ctx context.Context, t float64) bool {
	wait := t - now()
	if wait <= 0 {
		return true
	}
	timer := time.NewTimer(time.Duration(wait * 1e6))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// QueueHandle is a VU's view of a Queue (its waits end when k6 stops the VU).
type QueueHandle struct {
	q *Queue
	m *Module
}

// Take returns the due time (epoch ms) of the next event, waiting until it is due, or -1
// when none is due before `deadline` (epoch ms) or the queue's end.
func (h *QueueHandle) Take(deadline float64) float64 {
	ctx := h.m.vu.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return h.q.take(ctx, deadline)
}

// Release marks an event taken by this VU as finished.
func (h *QueueHandle) Release() { h.q.Release() }

// Stats are the queue's figures.
func (h *QueueHandle) Stats() map[string]float64 { return h.q.Stats() }

// Release marks the event taken last by this VU as finished (concurrency).
func (q *Queue) Release() { q.busy.Add(-1) }

// Stats: length (events due, not yet taken), concurrency (events running), taken, dropped.
func (q *Queue) Stats() map[string]float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fill(now())
	return map[string]float64{
		"length": float64(len(q.pending) - q.head), "concurrency": float64(q.busy.Load()),
		"taken": float64(q.taken), "dropped": float64(q.dropped),
	}
}

// Queue returns the process-wide queue called name, made on first use with `rate` events
// per second from start to end (epoch ms); seed 0 seeds from the clock.
func (m *Module) Queue(name string, rate, start, end float64, seed int64) *QueueHandle {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	if q, ok := m.r.queues[name]; ok {
		return &QueueHandle{q: q, m: m}
	}
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	q := &Queue{rng: rand.New(rand.NewSource(seed)), meanMs: 1000 / rate, end: end}
	q.next = start + q.exp()
	m.r.queues[name] = q
	return &QueueHandle{q: q, m: m}
}

// ---------------------------------------------------------------- unique ids

// Unique is sysbench.rand.unique() (sb_rand.c, after preshing's RandomSequence): one
// index for the whole process; `stride` and `lane` interleave the indices of several
// processes (load generators) so that no two of them ever give the same number.
type Unique struct {
	index        atomic.Uint32
	offset       uint32
	stride, lane uint32
}

const uniquePrime = uint32(4294967291)

func permute(x uint32) uint32 {
	if x >= uniquePrime {
		return x
	}
	residue := uint32((uint64(x) * uint64(x)) % uint64(uniquePrime))
	if x <= uniquePrime/2 {
		return residue
	}
	return uniquePrime - residue
}

// Next returns the next number of the sequence.
func (u *Unique) Next() uint32 {
	i := u.index.Add(1) - 1
	return permute((permute(i*u.stride+u.lane) + u.offset) ^ 0x5bf03635)
}

// Unique returns the process-wide sequence called name, seeded as sysbench seeds it
// (rand_unique_seed(index, offset)) on first use.
func (m *Module) Unique(name string, seedIndex, seedOffset uint32, stride, lane int) *Unique {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	if u, ok := m.r.uniques[name]; ok {
		return u
	}
	if stride < 1 {
		stride = 1
	}
	u := &Unique{stride: uint32(stride), lane: uint32(lane)}
	// sysbench's start index is permute(permute(index) + 0x682f0161); with a stride the
	// sequence index i maps to start + i*stride + lane, so the start is divided out.
	start := permute(permute(seedIndex) + 0x682f0161)
	u.index.Store(start / uint32(stride))
	u.offset = permute(permute(seedOffset) + 0x46790905)
	m.r.uniques[name] = u
	return u
}

// ---------------------------------------------------------------- shared counters

// Counter is a number shared by the VUs of the process.
type Counter struct{ v atomic.Int64 }

// Add adds n and returns the new value.
func (c *Counter) Add(n int64) int64 { return c.v.Add(n) }

// Get returns the value.
func (c *Counter) Get() int64 { return c.v.Load() }

// Counter returns the process-wide counter called name.
func (m *Module) Counter(name string) *Counter {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	c, ok := m.r.counters[name]
	if !ok {
		c = &Counter{}
		m.r.counters[name] = c
	}
	return c
}

// ---------------------------------------------------------------- marks

// Mark records a time or figure under name; the first write wins (every VU crossing a step
// boundary offers it, one of them is first).
func (m *Module) Mark(name string, v float64) {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	if m.r.marks == nil {
		m.r.marks = map[string]float64{}
	}
	if _, ok := m.r.marks[name]; !ok {
		m.r.marks[name] = v
	}
}

// Marks returns every mark.
func (m *Module) Marks() map[string]float64 {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	out := make(map[string]float64, len(m.r.marks))
	for k, v := range m.r.marks {
		out[k] = v
	}
	return out
}

// ---------------------------------------------------------------- process figures

// CpuSeconds is the CPU time (user + system) the process has used.
func (m *Module) CpuSeconds() float64 { //nolint:revive // JS name cpuSeconds
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// RssBytes is the process' resident memory (Linux /proc/self/statm), 0 where unknown.
func (m *Module) RssBytes() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		return 0
	}
	return pages * float64(os.Getpagesize())
}

// Cores is the number of CPUs the process may run on (its affinity mask at start).
func (m *Module) Cores() int { return runtime.NumCPU() }
