package provider

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// domLock is the domain lock. Normally it is the futex words of the
// domain page's lock slots (lockgroup.go), so the C fast paths (fastep.go)
// take the very same locks as Go: 0 free, 1 held, 2 held with possible
// sleepers (the three-state futex mutex; C implements the same protocol in
// cmd/libfabric-psm2/fast/lock.h). Without a domain page, and in
// race-detector builds (whose tests have no C side and want the detector
// to see the lock), it is a sync.Mutex.
//
// One change to the textbook protocol: an uncontended unlock (the word is
// 1) is a plain release store, not an atomic exchange. An exchange is a
// full barrier, which makes the thread wait until the ring cells it just
// wrote have reached the receiver's core; that wait was most of the cost
// of an inject. The price is a race: a waiter that raises the word to 2
// and sleeps between the owner's load and store is not woken. So waiters
// never sleep for longer than lockNap, then look again.
type domLock struct {
	w    *uint32   // slot 0's word (nil: mu)
	more []*uint32 // the words of the other slots in use, taken after w in this order
	mu   sync.Mutex
}

// lockSpins is how many times a contended lock is retried before sleeping;
// lockNap is the longest a waiter sleeps before it looks again.
const (
	lockSpins = 64
	lockNap   = 200 * time.Microsecond
)

// lock takes every slot's word: C takes one (the slot of the endpoint or
// CQ it acts for, lockgroup.go), Go all of them. Only a holder of w
// takes more than one, so their order cannot deadlock.
func (l *domLock) lock() {
	if l.w == nil {
		l.mu.Lock()
		return
	}
	lockWord(l.w)
	for _, w := range l.more {
		lockWord(w)
	}
}

func (l *domLock) unlock() {
	if l.w == nil {
		l.mu.Unlock()
		return
	}
	for i := len(l.more) - 1; i >= 0; i-- {
		unlockWord(l.more[i])
	}
	unlockWord(l.w)
}

func lockWord(w *uint32) {
	if atomic.CompareAndSwapUint32(w, 0, 1) {
		return
	}
	lockWordSlow(w)
}

func lockWordSlow(w *uint32) {
	for range lockSpins {
		if atomic.LoadUint32(w) == 0 && atomic.CompareAndSwapUint32(w, 0, 1) {
			return
		}
	}
	for atomic.SwapUint32(w, 2) != 0 {
		sys.FutexWait(unsafe.Pointer(w), 2, lockNap, true)
	}
}

func unlockWord(w *uint32) {
	if atomic.LoadUint32(w) == 1 {
		atomicx.StoreRel32(w, 0)
		return
	}
	if atomic.SwapUint32(w, 0) == 2 {
		sys.FutexWake(unsafe.Pointer(w), 1, true)
	}
}
