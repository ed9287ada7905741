package provider

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/transport"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// The idle fast path. An application polling an empty CQ should not pay a
// call into Go (about 55 ns) each time, so the provider keeps, in memory
// outside the Go heap, what C needs to answer "nothing to do" by itself:
//
//	CQ page:     +0  entries queued (successes and errors)
//	             +8  address of the domain block
//	             +16 the entry size: 8, 24, 40 or 48 (the CQ format)
//	             +24 completions C queued (fast/send.c, psm2_fast_send), newer
//	                 than every entry in the Go ring; Go takes them over
//	                 (CQ.absorb) first thing under the lock
//	             +32 threads about to block or blocked in fi_cq_sread
//	                 (CQ.block); while nonzero, C queues no completion
//	                 (a Go send wakes them)
//	             +1024 those completions: cqCCap entries of 16 bytes,
//	                 context and flags (a send's other fields are 0), so
//	                 that a window of sends as message-rate tests post
//	                 (64) completes in C
//	             +64 the err_data buffer of fi_cq_readerr (cq.go)
//	domain page: +0  busy: nonzero while Go has work the rings do not show
//	                 (operations in flight, queued control traffic, a due
//	                 liveness check)
//	             +132 1 if the domain locks at all (uint32)
//	             +208 number of endpoint pages listed at +256 (0 when the
//	                  domain has more than maxFastEPs endpoints)
//	             +256 the pages of the domain's endpoints, for C delivery
//	             +2048 the lock slots (lockgroup.go), slotSize bytes each:
//	                  +0  the lock word (uint32 futex; lock.go)
//	                  +8  receives C queued and Go has not posted yet
//	                      (fastep.go); nonzero means "not idle" unless
//	                      every endpoint holding some may have them
//	                      delivered by C
//	                  +16 completions C queued in some CQ of the slot
//	                  +24, +32 atomics C completed and posted (fastrma.go)
//	                  +40 number of rings of the slot's endpoints
//	                      (slotBlind: more than the slot lists)
//	                  +64 those rings, as transport.Endpoint.Probes
//	                      words (base | log2 cells), 0 past the count
//	             Endpoint and CQ pages name their slot (epfLock, cqLock).
//
// All words are written under the domain lock, with release stores on the
// data path (atomicx.StoreRel64: a sequentially consistent store would make
// the thread wait for every ring cell it just freed to reach the peer's
// core), and read with acquire loads. C calls into Go whenever any word says
// there may be work; "idle" is only ever a fast no, and a word a C reader
// sees late only delays that no by one poll.

const maxFastRings = 8

// fastPageBytes is the size the domain, endpoint and CQ pages are laid
// out in (layout.go checks that every field fits and none overlaps):
// the smallest page, which fastPage's mapping is at least.
const fastPageBytes = 4096

// Offsets in the domain page (bytes).
const (
	domBusy    = 0
	domLocking = 132
	domNEPs    = 208
	domEPs     = 256
	domSlots   = 2048
)

// A lock slot (lockgroup.go): the lock of a group of endpoints and CQs,
// and the words C writes for Go under it, on the lock word's cache line;
// the group's rings on the next.
const (
	maxSlots     = 8
	slotSize     = 128
	slotLock     = 0
	slotQueued   = 8
	slotCQueued  = 16
	slotADone    = 24
	slotCPosted  = 32
	slotNRings   = 40
	slotRings    = 64
	slotMaxRings = maxFastRings
	slotBlind    = ^uint64(0)
)

// maxFastEPs is how many endpoint pages the domain page lists for C
// delivery (psm2_fast_deliver); a domain with more leaves every receive to
// Go.
const maxFastEPs = 8

// cqErrDataOff is where a CQ page keeps its err_data buffer.
const cqErrDataOff = 64

// Offsets in a CQ page (bytes), and the completions C queues there.
const (
	cqCount      = 0
	cqDomain     = 8
	cqStride     = 16
	cqCQueued    = 24
	cqSleepers   = 32
	cqLock       = 40
	cqCEntries   = 1024
	cqCEntrySize = 16
	cqCCap       = 192
)

// fastPage returns one zeroed page outside the Go heap: a page an earlier
// object gave back, or a new mapping.
//
// Pages are never unmapped. C reads some of them without the domain lock
// (the idle check reads the pages of the endpoints the domain page lists,
// and so does psm2_fast_deliver before it takes the lock), so a thread closing an
// endpoint cannot know that no other thread is between loading the page's
// address and reading it. A page given back (freeFastPage) is zeroed,
// which every reader takes for "off, call Go", and reused; a stale reader
// sees zeros or another live object's page, and re-checks under the lock
// before it acts.
func fastPage() []byte {
	fastPages.mu.Lock()
	if n := len(fastPages.free); n > 0 {
		b := fastPages.free[n-1]
		fastPages.free = fastPages.free[:n-1]
		fastPages.mu.Unlock()
		return b
	}
	fastPages.mu.Unlock()
	b, err := sys.MapAnon(sys.PageSize())
	if err != nil {
		return nil
	}
	return b
}

// freeFastPage gives page b back to fastPage, zeroed word by word with
// atomic stores (C may be reading it).
func freeFastPage(b []byte) {
	if b == nil {
		return
	}
	for off := 0; off < len(b); off += 8 {
		atomic.StoreUint64(fastWord(b, off), 0)
	}
	fastPages.mu.Lock()
	fastPages.free = append(fastPages.free, b)
	fastPages.mu.Unlock()
}

// fastPages is the process's pool of pages given back. It only grows to
// the most pages this process had in use at once.
var fastPages struct {
	mu   sync.Mutex
	free [][]byte
}

func fastWord(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }

func fastWord32(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// FastPath returns the CQ's page for the C side (nil: always call Go).
func (cq *CQ) FastPath() unsafe.Pointer {
	if cq.fast == nil {
		return nil
	}
	return unsafe.Pointer(&cq.fast[0])
}

// setAvail publishes the CQ's entry count.
func (cq *CQ) setAvail() {
	if cq.fast != nil {
		atomicx.StoreRel64(fastWord(cq.fast, cqCount), uint64(cq.n))
	}
}

// absorbLocked takes over the completions C queued in every CQ.
func (d *Domain) absorbLocked() {
	d.clearSlots(slotCQueued)
	for _, cq := range d.cqs {
		cq.absorb()
	}
}

// ringWire is a wire whose arrivals wait in rings the C side reads
// itself (route.Endpoint: shm's): it tells whether it has work besides
// the messages there.
type ringWire interface {
	IdleBesidesRings() bool
}

// idleBesidesRings is w.Idle but for the messages in the rings the C side
// reads, where w tells them apart.
func idleBesidesRings(w transport.Endpoint) bool {
	if r, ok := w.(ringWire); ok {
		return r.IdleBesidesRings()
	}
	return w.Idle()
}

// refreshFast publishes whether Go has work beyond the rings. The caller
// holds the domain lock.
func (d *Domain) refreshFast() {
	if d.fast == nil {
		return
	}
	busy := uint64(0)
	if d.blind || d.trigPending > 0 {
		busy = 1 // (triggers: a counter may reach them on any poll)
	}
	for _, ep := range d.eps {
		if ep.engine.pending > 0 || !idleBesidesRings(ep.tp) {
			busy = 1
			break
		}
	}
	if atomic.LoadUint64(fastWord(d.fast, domBusy)) != busy {
		atomicx.StoreRel64(fastWord(d.fast, domBusy), busy)
	}
}

// publishRings records the rings of the enabled endpoints. The caller
// holds the domain lock.
func (d *Domain) publishRings() {
	if d.fast == nil {
		return
	}
	d.regroup = true
	atomic.StoreUint64(fastWord(d.fast, domBusy), 1) // busy while the list changes
	// The rings themselves are listed per lock slot (regroupLocked).
	blind := false
	var words [maxFastRings]uint64
	for _, ep := range d.eps {
		if len(probes(ep.tp, words[:0])) == 0 {
			blind = true // a queue C cannot see: never call the domain idle
		}
	}
	// The endpoints C may deliver for: the count first goes to 0, so a
	// reader without the lock never pairs the new count with old pages
	// past it (C re-reads the list under the lock before it delivers).
	atomic.StoreUint64(fastWord(d.fast, domNEPs), 0)
	neps := 0
	if len(d.eps) <= maxFastEPs {
		for _, ep := range d.eps {
			if ep.fast.page != nil {
				atomic.StoreUint64(fastWord(d.fast, domEPs+8*neps), uint64(uintptr(unsafe.Pointer(&ep.fast.page[0]))))
				neps++
			}
		}
	}
	for i := neps; i < maxFastEPs; i++ {
		atomic.StoreUint64(fastWord(d.fast, domEPs+8*i), 0)
	}
	atomicx.StoreRel64(fastWord(d.fast, domNEPs), uint64(neps))
	d.blind = blind
	d.refreshFast()
}
