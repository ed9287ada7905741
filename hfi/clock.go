package hfi

import "github.com/gopsm2/libfabric-psm2/internal/clock"

// Clock is what the wire's timers read (internal/clock). Tests inject one
// they drive.
type Clock = clock.Clock

// SystemClock is the monotonic clock.
var SystemClock = clock.System
