//go:build linux

package shm

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// The doorbell is a Dekker handshake: a producer publishes a cell, then
// reads the receiver's waiter count; a receiver going to sleep raises its
// waiter count, then looks at the ring again. Each side must see the
// other's first store, which on x86 needs a StoreLoad fence between store
// and load on both sides. A fence on the producer's side is costly: it
// waits for the cell's cache line to arrive from the receiver's core, on
// every message. So the fence is asymmetric. Every process that uses the
// package registers with membarrier(2) (GLOBAL_EXPEDITED); a receiver
// about to sleep calls membarrier, which runs a full fence on every running
// thread of every registered process, and producers need none. Where
// membarrier is not available, producers of this process fence
// (producerFence), and this process's sleepers wake at least every
// fallbackWait in case a producer elsewhere did not.
const (
	fallbackWait = 10 * time.Millisecond

	// safetyWait bounds every sleep in Wait (endpoint.go).
	safetyWait = 100 * time.Millisecond
)

var asym struct {
	once sync.Once
	ok   bool
}

// fenceDummy is the target of producerFence's locked instruction.
var fenceDummy atomic.Uint64

// asymFences registers the process for membarrier once and reports
// whether receivers' fences cover producers.
func asymFences() bool {
	asym.once.Do(func() {
		asym.ok = sys.MembarrierRegister()
	})
	return asym.ok
}

// receiverFence is the sleeper's half: after raising the waiter count and
// before looking at the ring.
func receiverFence() {
	if asymFences() {
		sys.Membarrier()
	}
}

// producerFence is the producer's half: after publishing, before reading
// the waiter count. Free when membarrier covers it.
func producerFence() {
	if !asym.ok {
		fenceDummy.Add(1)
	}
}
