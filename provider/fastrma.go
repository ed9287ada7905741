package provider

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// The atomic fast path at the target. A small atomic request (one whose
// operands and answer fit in a cell or two) that arrives in an endpoint's
// ring while the domain is otherwise idle is served by C inside fi_cq_read
// (fast.h: psm2_fast_serve): C checks the key against the domain's MR
// table below, applies the op under the process's atomic lock and pushes
// the answer into the initiator's ring, without entering Go. Anything
// else (an unknown key, an access the table does not grant, a datatype C
// does not apply, a fault, no room for the answer, a counter or RMA event
// to report) stays in the ring for Go, which serves it as before.
//
// The domain page holds (fastpath.go has the rest):
//
//	+224 address of the process's atomic lock (a uint32: 0 free, 1
//	     held), which Go's atomicApply takes too, so that C's and Go's
//	     ops on the same memory are atomic with respect to each other
//	+1024 the MR table: domMRCap entries of 48 bytes (key, base, length,
//	     offset, access, 0); an entry is empty while its access is 0. An
//	     MR is entered at slot key mod domMRCap when it has one segment,
//	     remote access and no counter, and that slot is free; it leaves
//	     before its registration ends or a counter is bound to it.
//
// The endpoint page holds epfServe (1 while C may serve for it: enabled,
// with a ring and no remote-access counter) and epfServed (requests C
// served, for the endpoint's statistics). Every word is written under the
// domain lock, which C holds while it serves.
const (
	domALock = 224
	domMRs   = 1024
	domMRCap = 16

	mrfKey    = 0
	mrfBase   = 8
	mrfLen    = 16
	mrfOffset = 24
	mrfAccess = 32
	mrfSize   = 48
)

// The MR table ends inside the page (a compile error otherwise).
var _ = [1]struct{}{}[(domMRs+domMRCap*mrfSize)/4097]

// atomicLock is the process's atomic lock word, in a page outside the Go
// heap so that C can take it (nil if that page could not be had: then
// atomicMu serves Go alone, and no domain offers C the lock).
var atomicLock = sync.OnceValue(func() *uint32 {
	if p := fastPage(); p != nil {
		return fastWord32(p, 0)
	}
	return nil
})

// lockAtomics takes the process's atomic lock. Holders keep it for one
// op on a few elements, so a short spin is the common wait.
func lockAtomics() {
	w := atomicLock()
	if w == nil {
		atomicMu.Lock()
		return
	}
	for i := 0; !atomic.CompareAndSwapUint32(w, 0, 1); i++ {
		if i >= 64 {
			runtime.Gosched()
		}
	}
}

func unlockAtomics() {
	if w := atomicLock(); w != nil {
		atomic.StoreUint32(w, 0)
		return
	}
	atomicMu.Unlock()
}

// publishALock records the lock's address in the domain page.
func (d *Domain) publishALock() {
	if w := atomicLock(); w != nil && d.fast != nil {
		atomic.StoreUint64(fastWord(d.fast, domALock), uint64(uintptr(unsafe.Pointer(w))))
	}
}

// mrSlot is the table entry of key.
func mrSlot(key uint64) int { return domMRs + int(key%domMRCap)*mrfSize }

// publishMR enters mr in the C table if it qualifies and its slot is
// free. The caller holds the domain lock.
func (d *Domain) publishMR(mr *MR) {
	if d.fast == nil || !d.fastLock || len(mr.iov) != 1 || mr.access&(fi.REMOTE_READ|fi.REMOTE_WRITE) == 0 {
		return
	}
	s := mrSlot(mr.key)
	if atomic.LoadUint64(fastWord(d.fast, s+mrfAccess)) != 0 {
		return // taken: this MR's requests go to Go
	}
	atomic.StoreUint64(fastWord(d.fast, s+mrfKey), mr.key)
	atomic.StoreUint64(fastWord(d.fast, s+mrfBase), uint64(mr.iov[0].Base))
	atomic.StoreUint64(fastWord(d.fast, s+mrfLen), mr.iov[0].Len)
	atomic.StoreUint64(fastWord(d.fast, s+mrfOffset), mr.offset)
	atomicx.StoreRel64(fastWord(d.fast, s+mrfAccess), mr.access)
	mr.published = true
}

// unpublishMR takes mr out of the C table. The caller holds the domain
// lock.
func (d *Domain) unpublishMR(mr *MR) {
	if !mr.published || d.fast == nil {
		return
	}
	s := mrSlot(mr.key)
	atomic.StoreUint64(fastWord(d.fast, s+mrfAccess), 0)
	atomic.StoreUint64(fastWord(d.fast, s+mrfKey), 0)
	mr.published = false
}

// serveOK says whether C may serve atomic requests for the endpoint.
func (ep *Endpoint) serveOK() bool {
	return ep.enabled && !ep.closed && ep.hasRing && ep.remReadCntr == nil && ep.remWriteCntr == nil
}

// syncServeLocked republishes serveOK.
func (ep *Endpoint) syncServeLocked() {
	if p := ep.fast.page; p != nil {
		if v := b2u(ep.serveOK()); atomic.LoadUint64(fastWord(p, epfServe)) != v {
			atomicx.StoreRel64(fastWord(p, epfServe), v)
		}
	}
}

// serveFrom lets C answer initiator src's later requests itself: it
// records the descriptor of the connection back to it in the senders'
// table, where C finds it (Go has just served one of its requests).
func (ep *Endpoint) serveFrom(src uint64, c transport.Conn) {
	if ep.fast.page == nil {
		return
	}
	if fs, ok := ep.tp.(transport.FastSender); ok {
		desc := fs.FastPeer(c)
		if desc != nil && atomic.LoadUint64(fastWord(ep.fast.page, epfSenders+8*senderSlot(src))) != uint64(uintptr(desc)) {
			ep.setFastSender(src, desc)
		}
	}
}

// cServed is the number of requests C served for the endpoint.
func (ep *Endpoint) cServed() uint64 {
	if p := ep.fast.page; p != nil {
		return atomic.LoadUint64(fastWord(p, epfServed))
	}
	return 0
}
