package tbs

import "time"

// The module's clock: epoch milliseconds on the monotonic clock.

var (
	clockBase   = time.Now()
	clockBaseMs = float64(clockBase.UnixNano()) / 1e6
)

// now is epoch milliseconds on the monotonic clock (differences never jump with NTP).
func now() float64 { return clockBaseMs + float64(time.Since(clockBase).Nanoseconds())/1e6 }

// Now returns epoch milliseconds (monotonic, microsecond resolution).
func (m *Module) Now() float64 { return now() }
