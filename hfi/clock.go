package hfi

import (
	"time"
	"unsafe"
)

// Clock is what the wire's timers read: monotonic nanoseconds. Tests
// inject one they drive.
type Clock interface{ Now() int64 }

type monoClock struct{ t0 time.Time }

func (c monoClock) Now() int64 { return int64(time.Since(c.t0)) }

// SystemClock is the monotonic clock.
var SystemClock Clock = monoClock{time.Now()}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
