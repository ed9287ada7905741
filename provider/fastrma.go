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
// operands and answer fit in a cell or two), or a small RMA write or read
// request (serve.c: psm2_serve_rma), that arrives in an endpoint's
// ring while the domain is otherwise idle is served by C inside fi_cq_read
// (cmd/libfabric-psm2/fast/serve.c: psm2_fast_serve): C checks the key against the domain's MR
// table below, applies the op under the process's atomic lock and pushes
// the answer into the initiator's ring, without entering Go. Anything
// else (an unknown key, an access the table does not grant, a datatype C
// does not apply, a fault, no room for the answer, a counter or RMA event
// to report) stays in the ring for Go, which serves it as before.
//
// At the initiator, C completes an atomic whose answer (an ack, or the
// old values of a fetch or compare; no error) reaches the head of the endpoint's ring while fi_cq_read
// reads its transmit CQ with no older entry (psm2_fast_answers): Go arms
// the op when it posts it, in a table of the endpoint page, with what C
// needs (the result buffer, the length, the context); C copies the old
// values there, writes the completion straight into the caller's buffer
// and marks the entry done; Go frees the op (reapLocked) first thing under
// the lock the next time it runs. Ops that must count on a counter, that
// scatter their results, or whose CQ signals a wait object are not armed.
//
// The domain page holds (fastpath.go has the rest):
//
//	+224 address of the process's atomic lock (a uint32: 0 free, 1
//	     held), which Go's atomicApply takes too, so that C's and Go's
//	     ops on the same memory are atomic with respect to each other
//	+232 answers C completed that Go has not reaped
//	+240 ops C posted that Go has not adopted
//	+1024 the MR table: domMRCap entries of 48 bytes (key, base, length,
//	     offset, access, 0); an entry is empty while its access is 0. An
//	     MR is entered at slot key mod domMRCap when it has one segment,
//	     remote access and no counter, and that slot is free; it leaves
//	     before its registration ends or a counter is bound to it.
//
// The endpoint page holds epfServe (1 while C may serve for it: enabled,
// with a ring and no remote-access counter), epfServed (requests C
// served, for the endpoint's statistics), epfArmed (entries armed),
// epfAPost (1 while C may post atomics itself), epfCSeq (C's tag counter)
// and the armed table at epfAOps: aoCap entries of 48 bytes (state; the
// op's id, its answer's tag; result buffer; length; context; the peer
// table's slot of a C-posted op's fi_addr (fastSlot: an fi_rx_addr's
// context index is in its top bits, which this word gives to the rest),
// with in bits 48-55 one more than the index of the bounce buffer its
// request went in, if it went eager, and aoRMA), op id i at entry i mod
// aoCap.
//
// C posts an fi_atomic, fi_fetch_atomic or fi_compare_atomic itself
// (psm2_fast_atomic), and a small fi_write or fi_read (psm2_fast_rma: its
// entry's aoDest says aoRMA, and the page counts them, epfCWrites on), when the endpoint
// allows it (no counters, a transmit CQ C writes, no selective
// completion), the domain has no work of Go's queued (so it overtakes
// nothing), the peer is a fast one and the operands are small integers:
// it pushes the request and arms an entry as C-posted, with a tag of its
// own (cTagGen). Its answer normally completes it in C, and Go never
// hears of it. Go adopts the C-posted entries it finds when it takes the
// lock (adoptLocked): an op for each, watched like its own, so that an
// answer Go takes itself, or a target that dies, completes it. Every word is written under the
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

	aoCap   = 7
	aoState = 0
	aoID    = 8
	aoBuf   = 16
	aoLen   = 24
	aoCtx   = 32
	aoDest  = 40

	// aoDestMask takes the peer's slot out of an entry's aoDest word; aoRMA
	// marks a C-posted RMA read or write (psm2_fast_rma), whose
	// completion says FI_RMA, not FI_ATOMIC.
	aoDestMask = 1<<48 - 1
	aoRMA      = 1 << 56
	aoSize     = 48

	// Entry states.
	aoFree    = 0
	aoArmed   = 1 // a Go op's
	aoDone    = 2 // completed by C; Go frees the op
	aoCPosted = 3 // an op C posted (psm2_fast_atomic), unknown to Go
	aoAdopted = 4 // an op C posted, which Go now watches (adoptLocked)

	// cTagGen is the generation (the tag's high half) of the ops C posts:
	// Go's generations never reach it. The low half is k*aoCap + entry.
	cTagGen = 0xffffffff
)

// The armed table ends inside the page (a compile error otherwise).
var _ = [1]struct{}{}[(epfAOps+aoCap*aoSize)/4097]

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

// freeMRSlot is a slot of the C table that is free now (a hint: a
// registration racing this one may take it first), -1 if none is or the
// domain has no table.
func (d *Domain) freeMRSlot() int {
	if d.fast == nil || !d.fastLock {
		return -1
	}
	for k := 0; k < domMRCap; k++ {
		if atomic.LoadUint64(fastWord(d.fast, domMRs+k*mrfSize+mrfAccess)) == 0 {
			return k
		}
	}
	return -1
}

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

// syncServeLocked republishes serveOK (with syncFastLocked, as above).
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

// cCounts are what C did for the endpoint, for its statistics: the
// requests it served, and the RMA writes, reads and atomics it posted
// with their bytes.
type cCounts struct {
	served                             uint64
	writes, reads, atomics             uint64
	writeBytes, readBytes, atomicBytes uint64
}

func (ep *Endpoint) cCounts() (c cCounts) {
	if p := ep.fast.page; p != nil {
		c.served = atomic.LoadUint64(fastWord(p, epfServed))
		c.writes = atomic.LoadUint64(fastWord(p, epfCWrites))
		c.reads = atomic.LoadUint64(fastWord(p, epfCReads))
		c.atomics = atomic.LoadUint64(fastWord(p, epfCAtomics))
		c.writeBytes = atomic.LoadUint64(fastWord(p, epfCWriteBytes))
		c.readBytes = atomic.LoadUint64(fastWord(p, epfCReadBytes))
		c.atomicBytes = atomic.LoadUint64(fastWord(p, epfCAtomicBytes))
	}
	return c
}

// aoEntry is the offset of armed entry i in the endpoint page.
func aoEntry(i int) int { return epfAOps + i*aoSize }

// armAnswer lets C complete atomic op o when its answer comes (an ack,
// or for a fetch or compare the old values), if o qualifies and its entry
// is free. The caller holds the domain lock.
func (ep *Endpoint) armAnswer(o *op) {
	p, cq := ep.fast.page, ep.txCQ
	n, cntr := o.Len, ep.readCntr
	if o.Proto.write {
		n, cntr = 0, ep.writeCntr // (an ack carries no bytes)
	}
	if p == nil || !ep.dom.fastLock || (n > 0 && o.Buf == 0) || o.Proto.iov != nil || cntr != nil ||
		cq == nil || cq.fast == nil || cq.efd >= 0 || cq.ws != nil ||
		o.Flags&NoCompletion != 0 || (ep.txSel && o.Flags&fi.COMPLETION == 0) {
		return
	}
	i := int(o.ID % aoCap)
	e := aoEntry(i)
	if atomic.LoadUint64(fastWord(p, e+aoState)) != 0 {
		return
	}
	atomic.StoreUint64(fastWord(p, e+aoID), rmaID(o))
	atomic.StoreUint64(fastWord(p, e+aoBuf), uint64(o.Buf))
	atomic.StoreUint64(fastWord(p, e+aoLen), n)
	atomic.StoreUint64(fastWord(p, e+aoCtx), uint64(o.Ctx))
	atomic.StoreUint64(fastWord(p, e+aoDest), 0) // an atomic (not aoRMA)
	atomicx.StoreRel64(fastWord(p, e+aoState), aoArmed)
	atomic.AddUint64(fastWord(p, epfArmed), 1)
	o.Proto.aslot = i + 1
}

// disarm takes o out of the armed table: Go completes it after all. The
// caller holds the domain lock (so C is not completing it meanwhile).
func (ep *Endpoint) disarm(o *op) {
	if o.Proto.aslot == 0 {
		return
	}
	i := o.Proto.aslot - 1
	if p := ep.fast.page; p != nil {
		e := aoEntry(i)
		if st := atomic.LoadUint64(fastWord(p, e+aoState)); st == aoArmed || st == aoAdopted {
			atomic.AddUint64(fastWord(p, epfArmed), ^uint64(0))
		}
		atomic.StoreUint64(fastWord(p, e+aoState), aoFree)
	}
	if ep.cops[i] == o {
		ep.cops[i] = nil
	}
	o.Proto.aslot = 0
}

// eachEntry calls fn for every armed-table entry in state st of the
// domain's endpoints (e its offset in the endpoint page p).
func (d *Domain) eachEntry(st uint64, fn func(ep *Endpoint, p []byte, i, e int)) {
	for _, ep := range d.eps {
		if p := ep.fast.page; p != nil {
			for i := 0; i < aoCap; i++ {
				if e := aoEntry(i); atomic.LoadUint64(fastWord(p, e+aoState)) == st {
					fn(ep, p, i, e)
				}
			}
		}
	}
}

// reapLocked frees the ops C completed. Domain.lock calls it, so no Go
// code sees those ops as still waiting.
func (d *Domain) reapLocked() {
	d.clearSlots(slotADone)
	d.eachEntry(aoDone, func(ep *Endpoint, p []byte, i, e int) {
		o := ep.engine.rmaByID(atomic.LoadUint64(fastWord(p, e+aoID)))
		atomic.StoreUint64(fastWord(p, e+aoState), aoFree)
		if o == nil || o.Proto.aslot != i+1 {
			return
		}
		ep.cops[i] = nil
		o.Proto.aslot = 0
		o.Proto.answered = true
		ep.rmaWatch(o, false)
		ep.engine.Free(o)
	})
}

// adoptLocked makes a Go op of every op C posted and Go has not seen:
// watched, so that a dead target fails it, and found by its tag
// (rmaByID), so that an answer Go takes completes it. Domain.lock calls
// it before anything could take such an answer.
func (d *Domain) adoptLocked() {
	d.clearSlots(slotCPosted)
	d.eachEntry(aoCPosted, func(ep *Endpoint, p []byte, i, e int) {
		dw := atomic.LoadUint64(fastWord(p, e+aoDest))
		c, errno := ep.conn(fastAddr(dw&aoDestMask, ep.rxBits()))
		o := ep.engine.New(opRMA)
		o.Ctx = uintptr(atomic.LoadUint64(fastWord(p, e+aoCtx)))
		o.Len = atomic.LoadUint64(fastWord(p, e+aoLen))
		o.Buf = uintptr(atomic.LoadUint64(fastWord(p, e+aoBuf)))
		// (an fi_atomic's or fi_write's entry has no length: its answer
		// is an ack)
		o.Proto.atomic, o.Proto.write, o.Proto.conn, o.Proto.aslot = dw&aoRMA == 0, o.Len == 0, c, i+1
		switch {
		case o.Proto.atomic:
			o.Flags = fi.ATOMIC | fi.READ | fi.COMPLETION
		case o.Proto.write:
			o.Flags = fi.RMA | fi.WRITE | fi.COMPLETION
		default:
			o.Flags = fi.RMA | fi.READ | fi.COMPLETION
		}
		ep.cops[i] = o
		atomic.StoreUint64(fastWord(p, e+aoState), aoAdopted)
		if errno != 0 {
			// (C sent it over this very connection, so this is not
			// expected.)
			o.Proto.err, o.Proto.answered = errno, true
			ep.rmaMaybeDone(o)
			return
		}
		ep.rmaWatch(o, true)
	})
}

// cOp returns the adopted op with C's tag id, or nil.
func (ep *Endpoint) cOp(id uint64) *op {
	p := ep.fast.page
	if p == nil {
		return nil
	}
	i := int(uint32(id) % aoCap)
	e := aoEntry(i)
	if o := ep.cops[i]; o != nil && atomic.LoadUint64(fastWord(p, e+aoID)) == id {
		return o
	}
	return nil
}

// syncAPostLocked republishes whether C may post atomics for ep (with
// syncFastLocked: what it depends on is fixed once the endpoint is enabled).
func (ep *Endpoint) syncAPostLocked() {
	p, cq := ep.fast.page, ep.txCQ
	if p == nil {
		return
	}
	_, wireOK := ep.tp.(transport.FastSender)
	ok := ep.enabled && !ep.closed && wireOK && ep.dom.fastLock && ep.readCntr == nil && ep.writeCntr == nil && !ep.txSel &&
		cq != nil && cq.fast != nil && cq.efd < 0 && cq.ws == nil
	if v := b2u(ok); atomic.LoadUint64(fastWord(p, epfAPost)) != v {
		atomicx.StoreRel64(fastWord(p, epfAPost), v)
	}
}
