package clock

import (
	"sync/atomic"
	"time"
)

// Clock is monotonic time in nanoseconds from an arbitrary start.
type Clock interface{ Now() int64 }

type mono struct{ t0 time.Time }

func (c mono) Now() int64 { return int64(time.Since(c.t0)) }

// System is the monotonic clock of the machine.
var System Clock = mono{time.Now()}

// Manual is a clock that moves only when told: tests' time. The zero
// value reads 1 s (so that a timer armed at "0" is never mistaken for one
// that is not armed). Safe for concurrent use.
type Manual struct{ t atomic.Int64 }

// Now is the manual time.
func (m *Manual) Now() int64 { return int64(time.Second) + m.t.Load() }

// Advance moves the clock forward by d.
func (m *Manual) Advance(d time.Duration) { m.t.Add(int64(d)) }
