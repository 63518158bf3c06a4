package tbs

import "sync/atomic"

// Counter is a number shared by the VUs of the process.
type Counter struct{ v atomic.Int64 }

// Add adds n and returns the new value.
func (c *Counter) Add(n int64) int64 { return c.v.Add(n) }

// Max raises the value to n if it is lower, and returns the value.
func (c *Counter) Max(n int64) int64 {
	for {
		v := c.v.Load()
		if v >= n || c.v.CompareAndSwap(v, n) {
			return max(v, n)
		}
	}
}

// Get returns the value.
func (c *Counter) Get() int64 { return c.v.Load() }

// Counter returns the process-wide counter called name.
func (m *Module) Counter(name string) *Counter {
	return shared(m.r, m.r.counters, name, func() *Counter { return &Counter{} })
}
