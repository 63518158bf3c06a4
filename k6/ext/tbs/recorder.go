package tbs

import (
	"time"

	"github.com/grafana/sobek"
	"go.k6.io/k6/metrics"
)

// Recorder ends events for one sysbench thread (a VU has one per thread: Fork): latency into the step's histogram and one k6 sample.
// The samples are sent to k6 in batches (one channel send per Flush or per batchSamples
// events, not one per event; each sample keeps its own time and tags), which takes a
// channel operation and, with GOMAXPROCS=1, a switch to k6's sample goroutine off every
// event. The script flushes with its query counters (every flush_ms and at every step's end).
type Recorder struct {
	m                  *Module
	metric, respMetric *metrics.Metric
	h, rh              *Histogram
	th                 *threadTally // the thread's events and time in h's step (fairness.go)
	tally              *Tally
	buf                []metrics.Sample
	last               int // samples of the last batch sent: the next batch's first room
}

// batchSamples bounds a Recorder's unsent samples (a VU that never flushes still sends).
const batchSamples = 512

// minBatch is the least room a new batch starts with. A batch starts with room for as many
// samples as the last one had, not batchSamples: a VU's batch is handed to k6 and a new one
// made at every flush (every flush_ms), and at 1,500 VUs on one core a VU ends a few events
// per flush, where 512 samples' room (28 KiB) per VU and flush was 42 MiB held and 200 MiB/s
// allocated for nothing (docs/bench.md).
const minBatch = 8

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

// Fork makes a recorder for another sysbench thread of the VU (threads_per_vu): the same
// metrics and tally, samples of its own, so that each thread's goroutine (group.go) records
// into its own. Use sets its histograms.
func (r *Recorder) Fork() *Recorder {
	return &Recorder{m: r.m, metric: r.metric, respMetric: r.respMetric, tally: r.tally}
}

// Tally makes every event's latency, warm-up included, go to the tally too (null: no more).
func (r *Recorder) Tally(t *TallyHandle) {
	if t == nil {
		r.tally = nil
		return
	}
	r.tally = t.t
}

// Use sets the histograms the next events go to (nil: none, e.g. during warm-up), for
// sysbench thread `thread` (its events and execution time in h's step: fairness.go). The
// samples of the events before are sent first.
func (r *Recorder) Use(h, rh *Histogram, thread int) {
	r.Flush()
	r.h, r.rh, r.th = h, rh, nil
	if h != nil {
		r.th = h.thread(thread)
	}
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
		r.buf = make([]metrics.Sample, 0, min(max(r.last, minBatch), batchSamples))
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
	r.last = len(batch)
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
	if r.h != nil || r.tally != nil {
		b := bucketOf(lat)
		if r.h != nil {
			r.h.add(b, lat, t)
			r.th.events.Add(1)
			r.th.busy.add(lat)
		}
		if r.tally != nil {
			r.tally.latency(b)
		}
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
