package provider

import (
	bits64 "math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// The posting fast path. Besides the idle check (fastpath.go), the C side
// does two data-path calls without entering Go, each under the domain lock,
// which is a futex word C and Go share (lock.go):
//
//   - fi_inject and its tagged/data variants to a peer whose wire offers a
//     fast-peer descriptor (transport.FastSender): C builds the inline
//     cells and pushes them into the peer's ring itself.
//   - fi_recv/fi_trecv with plain flags: C appends the receive to the
//     endpoint's receive queue below. Go posts the queued receives, in
//     order, before it does anything else under the lock (Domain.lock), so
//     every later event sees them exactly as if they had been posted by a
//     call into Go; the C idle check calls into Go while any is queued.
//
// Anything else, or any doubt (a full ring, a peer not yet connected, a
// counter to update), goes through Go as before. The endpoint page, one
// page outside the Go heap, holds what C needs (native-endian uint64s):
//
//	+0   send ok: C may do injects (enabled, a fast wire, no send counter)
//	+8   recv ok: C may queue receives (enabled)
//	+16  tag mask
//	+24  inject size
//	+32  caps
//	+40  entries in the peer table
//	+48  address of the peer table: per fi_addr, the fast-peer descriptor
//	     (at slot fastSlot(fi_addr, the AV's rx_ctx_bits))
//	     of its connection, or 0
//	+56  address of the domain page
//	+64  receives queued
//	+72  deliver ok: C may match arrived inline messages against the
//	     queued receives itself (see deliverOK)
//	+80  address of the receive CQ's page
//	+88  1 with FI_SELECTIVE_COMPLETION on the receive CQ
//	+96  the endpoint's receive ring: its transport.RingProbe word
//	     (base | log2 of the cell count)
//	+104 address of the transmit CQ's page
//	+112 1 with FI_SELECTIVE_COMPLETION on the transmit CQ
//	+120 where send completions may go from C: 1 the transmit CQ's page
//	     (it has no wait object to signal), 2 nowhere (no transmit CQ),
//	     0 C must leave sends that complete to Go
//	+128 address of the receive queue, a mapping of its own: rqCap
//	     entries of 64 bytes (buf, len, src, tag, ignore, context,
//	     flags), the receives C queued at entries head..head+count-1
//	     (fast/deliver.c takes one out by moving the shorter side)
//	+136 head: the queue's first entry
//	+144 Go's unexpected messages: how many (uxKeys+1: more than the
//	     keys below hold), then +152 up to uxKeys keys of 24 bytes:
//	     space (0 untagged, 1 tagged), tag, sender's endpoint id. C
//	     queues no receive that takes one (it leaves it to Go), so it may
//	     deliver to its receives while they wait (deliverOK).
//	+248 the senders' table: 1<<sendersLog2 fast-peer descriptors (or
//	     0), at slot senderSlot(epid) of the peer they describe, so that a
//	     C delivery finds the bounce buffers of an eager message's sender.
//	     A later peer whose slot collides replaces an earlier one; C checks
//	     that the descriptor it finds names the sender, else leaves the
//	     message to Go. Descriptors stay valid until the wire closes.
//	+760 serve ok: C may serve small atomic requests (fastrma.go)
//	+768 atomic requests C served
//	+776 atomics armed for C to complete, +784 C may post fetches,
//	     +792 C's tag counter, and from +800 the armed table
//	     (fastrma.go)
//	+1136 the AV's rx_ctx_bits (fastSlot)
//	+1144 the address of the endpoint's lock slot (lockgroup.go; 0: a
//	     page given back, call Go)
//
// Every word is written under the domain lock.
const (
	epfSendOK  = 0
	epfRecvOK  = 8
	epfTagMask = 16
	epfInject  = 24
	epfCaps    = 32
	epfNPeers  = 40
	epfPeers   = 48
	epfDomain  = 56
	epfRQCount = 64
	epfDeliver = 72
	epfRxCQ    = 80
	epfRxSel   = 88
	epfRing    = 96
	epfTxCQ    = 104
	epfTxSel   = 112
	epfTxCQOK  = 120
	epfRQ      = 128
	epfRQHead  = 136

	rqEntrySize  = 64
	rqCap        = 128
	maxFastPeers = 4096 // fi_addrs the peer table covers

	epfUXCount = epfRQHead + 8
	epfUX      = epfUXCount + 8
	uxKeys     = 4
	uxKeySize  = 24

	epfSenders  = epfUX + uxKeys*uxKeySize
	sendersLog2 = 6
	senderHash  = 0x9E3779B97F4A7C15 // Fibonacci hashing

	epfServe  = epfSenders + 8<<sendersLog2
	epfServed = epfServe + 8
	epfArmed  = epfServed + 8
	epfAPost  = epfArmed + 8
	epfCSeq   = epfAPost + 8
	epfAOps   = epfCSeq + 8
	epfRxBits = epfAOps + aoCap*aoSize
	epfLock   = epfRxBits + 8
	// The RMA writes, reads and atomics C posted: counts, then bytes
	// (each kind's three words after its count).
	epfCWrites      = epfLock + 8
	epfCReads       = epfCWrites + 8
	epfCAtomics     = epfCReads + 8
	epfCWriteBytes  = epfCAtomics + 8
	epfCReadBytes   = epfCWriteBytes + 8
	epfCAtomicBytes = epfCReadBytes + 8
)

// senderSlot is the slot of the senders' table for endpoint id epid.
func senderSlot(epid uint64) int { return int((epid * senderHash) >> (64 - sendersLog2)) }

// The senders' table ends inside the page (a compile error otherwise).
var _ = [1]struct{}{}[(epfLock+8)/4097]

// rqEntry is one queued receive, as C writes it (under the domain lock,
// so plain reads are enough here).
type rqEntry struct {
	buf                               unsafe.Pointer
	len, src, tag, ignore, ctx, flags uint64
	_                                 uint64
}

// Offsets in a queued receive (bytes), for the C side (layout.go).
const (
	rqBuf     = int(unsafe.Offsetof(rqEntry{}.buf))
	rqLen     = int(unsafe.Offsetof(rqEntry{}.len))
	rqSrc     = int(unsafe.Offsetof(rqEntry{}.src))
	rqTag     = int(unsafe.Offsetof(rqEntry{}.tag))
	rqIgnore  = int(unsafe.Offsetof(rqEntry{}.ignore))
	rqContext = int(unsafe.Offsetof(rqEntry{}.ctx))
	rqFlags   = int(unsafe.Offsetof(rqEntry{}.flags))
)

// An entry is exactly rqEntrySize bytes (a compile error otherwise).
var _ = [1]struct{}{}[rqEntrySize-unsafe.Sizeof(rqEntry{})]

// fastEP is an endpoint's page and peer table.
type fastEP struct {
	page  []byte
	peers []byte // maxFastPeers uint64s
	rq    []byte // rqCap entries
}

// openFast maps the endpoint's page; without it C sends everything to Go.
func (ep *Endpoint) openFast() {
	d := ep.dom
	if d.fast == nil || !d.fastLock {
		return
	}
	page := fastPage()
	if page == nil {
		return
	}
	peers, err := sys.MapAnon(maxFastPeers * 8)
	if err != nil {
		freeFastPage(page)
		return
	}
	rq, err := sys.MapAnon(rqCap * rqEntrySize)
	if err != nil {
		sys.Unmap(peers)
		freeFastPage(page)
		return
	}
	ep.fast = fastEP{page: page, peers: peers, rq: rq}
	atomic.StoreUint64(fastWord(page, epfRQ), uint64(uintptr(unsafe.Pointer(&rq[0]))))
	atomic.StoreUint64(fastWord(page, epfTagMask), ep.tagMask)
	atomic.StoreUint64(fastWord(page, epfInject), ep.injectSize)
	atomic.StoreUint64(fastWord(page, epfCaps), ep.caps)
	atomic.StoreUint64(fastWord(page, epfNPeers), maxFastPeers)
	atomic.StoreUint64(fastWord(page, epfPeers), uint64(uintptr(unsafe.Pointer(&peers[0]))))
	atomic.StoreUint64(fastWord(page, epfDomain), uint64(uintptr(unsafe.Pointer(&d.fast[0]))))
	atomic.StoreUint64(fastWord(page, epfLock), d.slotAddr(0))
}

// FastPath returns the endpoint's page for the C side (nil: always Go).
func (ep *Endpoint) FastPath() unsafe.Pointer {
	if ep.fast.page == nil {
		return nil
	}
	return unsafe.Pointer(&ep.fast.page[0])
}

// syncFastLocked republishes whether C may post for the endpoint, after
// anything that decides it changed (enable, bind, close). The caller holds
// the domain lock.
func (ep *Endpoint) syncFastLocked() {
	p := ep.fast.page
	if p == nil {
		return
	}
	_, wireOK := ep.tp.(transport.FastSender)
	send := ep.enabled && !ep.closed && wireOK && ep.sendCntr == nil && ep.engine.sendQ.n == 0
	recv := ep.enabled && !ep.closed
	atomic.StoreUint64(fastWord(p, epfRxBits), uint64(ep.rxBits()))
	atomic.StoreUint64(fastWord(p, epfSendOK), b2u(send))
	atomic.StoreUint64(fastWord(p, epfRecvOK), b2u(recv))
	var cqPage uintptr
	if ep.rxCQ != nil && ep.rxCQ.fast != nil {
		cqPage = uintptr(unsafe.Pointer(&ep.rxCQ.fast[0]))
	}
	atomic.StoreUint64(fastWord(p, epfRxCQ), uint64(cqPage))
	atomic.StoreUint64(fastWord(p, epfRxSel), b2u(ep.rxSel))
	ring := ringProbe(ep.tp)
	ep.hasRing = ring != 0
	atomic.StoreUint64(fastWord(p, epfRing), ring)
	ep.syncServeLocked()
	ep.syncAPostLocked()
	var txPage uintptr
	txOK := uint64(2)
	if cq := ep.txCQ; cq != nil {
		txOK = 0
		// A CQ with a wait object too: a thread blocking in fi_cq_sread
		// first raises the page's sleepers word, which sends C away.
		// Not FI_WAIT_FD or a wait set: their signals come from Go.
		if cq.fast != nil && cq.efd < 0 && cq.ws == nil {
			txPage, txOK = uintptr(unsafe.Pointer(&cq.fast[0])), 1
		}
	}
	atomic.StoreUint64(fastWord(p, epfTxCQ), uint64(txPage))
	atomic.StoreUint64(fastWord(p, epfTxSel), b2u(ep.txSel))
	atomic.StoreUint64(fastWord(p, epfTxCQOK), txOK)
	ep.syncDeliverLocked()
}

// deliverOK reports whether C may deliver arrived inline messages to the
// receives it queued, without Go: only when Go holds nothing they could be
// ordered against or that C cannot do. No receive posted in Go (those
// come first), no claimed message and no more unexpected ones than the
// page holds the keys of (an older message might match: C queues no
// receive that takes one of those), no operation in flight, no receive counter, and a receive CQ
// without a wait object to signal. (C delivers only inside fi_cq_read,
// whose entries carry no source, so FI_SOURCE does not matter; as in
// psm2, an unknown sender is an error only for fi_cq_readfrom.)
// The caller holds the domain lock; Domain.unlock republishes it.
func (ep *Endpoint) deliverOK() bool {
	e := &ep.engine
	cq := ep.rxCQ
	return ep.enabled && !ep.closed && e.NonePosted() &&
		// Unexpected messages only as many as the page holds the keys
		// of, which C checks every receive it queues against: one early
		// message (a collective's, from a third rank) sent every receive
		// through Go until its own receive came (a ping-pong of two of
		// four ranks on 2 cores called into Go 1.4 times a message).
		e.Queued() <= uxKeys && e.NoneClaimed() &&
		e.pending == 0 && ep.recvCntr == nil &&
		cq != nil && cq.fast != nil && cq.efd < 0 && cq.ws == nil && ep.hasRing
}

// publishUXLocked writes the keys of Go's unexpected messages into the
// page (or uxKeys+1 for more than it holds). The caller holds the domain
// lock.
func (ep *Endpoint) publishUXLocked() {
	p := ep.fast.page
	n := 0
	for sp := range uint8(2) {
		for u := ep.engine.Unexpected(sp); u != nil && n <= uxKeys; u = u.Next() {
			if n < uxKeys {
				off := epfUX + n*uxKeySize
				atomic.StoreUint64(fastWord(p, off), uint64(sp))
				atomic.StoreUint64(fastWord(p, off+8), u.Hdr.Tag)
				atomic.StoreUint64(fastWord(p, off+16), u.Src)
			}
			n++
		}
	}
	atomic.StoreUint64(fastWord(p, epfUXCount), uint64(n))
}

// syncDeliverLocked republishes deliverOK.
func (ep *Endpoint) syncDeliverLocked() {
	if p := ep.fast.page; p != nil {
		ep.publishUXLocked()
		if v := b2u(ep.deliverOK()); atomic.LoadUint64(fastWord(p, epfDeliver)) != v {
			atomicx.StoreRel64(fastWord(p, epfDeliver), v)
		}
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// setFastPeer records (or, with desc nil, clears) the descriptor of
// fi_addr a. The caller holds the domain lock.
func (ep *Endpoint) setFastPeer(a uint64, desc unsafe.Pointer) {
	slot := fastSlot(a, ep.rxBits())
	if ep.fast.peers == nil || slot >= maxFastPeers {
		return
	}
	atomic.StoreUint64(fastWord(ep.fast.peers, int(slot)*8), uint64(uintptr(desc)))
}

// fastSlot is the peer table's slot of fi_addr a in an AV with bits
// receive-context bits: a rotated left by bits, so that the contexts of
// one scalable peer (fi_rx_addr) sit next to each other after its base
// address's. C computes the same (fast/send.c).
func fastSlot(a uint64, bits int) uint64 { return bits64.RotateLeft64(a, bits) }

// fastAddr is the fi_addr whose slot is s (fastSlot's inverse).
func fastAddr(s uint64, bits int) uint64 { return bits64.RotateLeft64(s, -bits) }

// forgetFastPeer clears every slot of base address a: its own and, in an
// AV with receive-context bits, those of its contexts.
func (ep *Endpoint) forgetFastPeer(a uint64) {
	bits := ep.rxBits()
	ep.setFastPeer(a, nil)
	for rx := uint64(1); bits > 0 && rx < 1<<bits; rx++ {
		ep.setFastPeer(a|rx<<(64-bits), nil)
	}
}

// rxBits is the receive-context bits of the endpoint's AV (0: none bound).
func (ep *Endpoint) rxBits() int {
	if ep.av == nil {
		return 0
	}
	return ep.av.bits
}

// setFastSender records descriptor desc of peer epid in the senders'
// table. The caller holds the domain lock.
func (ep *Endpoint) setFastSender(epid uint64, desc unsafe.Pointer) {
	if ep.fast.page == nil || desc == nil {
		return
	}
	atomic.StoreUint64(fastWord(ep.fast.page, epfSenders+8*senderSlot(epid)), uint64(uintptr(desc)))
}

// closeFast gives back the page and unmaps the table; the endpoint is
// closed and its flags are off, so no C caller acts on them (one that
// read the page's address before may still read the page: fastPage).
func (ep *Endpoint) closeFast() {
	freeFastPage(ep.fast.page)
	if ep.fast.peers != nil {
		sys.Unmap(ep.fast.peers)
	}
	if ep.fast.rq != nil {
		sys.Unmap(ep.fast.rq)
	}
	ep.fast = fastEP{}
}

// drainLocked posts the receives C queued on every endpoint. Domain.lock
// calls it, so nothing under the lock runs before them.
func (d *Domain) drainLocked() {
	d.clearSlots(slotQueued)
	for _, ep := range d.eps {
		ep.drainFast()
	}
}

// drainFast posts the endpoint's queued receives in queue order. C only
// queues a receive Go would accept (an enabled endpoint, plain flags, a
// usable buffer, a known source); one that Go refuses anyway (its source
// was removed from the AV since) completes with that error.
func (ep *Endpoint) drainFast() {
	p := ep.fast.page
	if p == nil {
		return
	}
	n := atomic.LoadUint64(fastWord(p, epfRQCount))
	if n == 0 {
		return
	}
	head := atomic.LoadUint64(fastWord(p, epfRQHead))
	if n > rqCap || head > rqCap-n {
		// C never queues past the end; do not trust a torn word.
		head, n = 0, min(n, rqCap)
	}
	for i := 0; i < int(n); i++ {
		r := (*rqEntry)(unsafe.Pointer(&ep.fast.rq[(int(head)+i)*rqEntrySize]))
		iov := [1]Iovec{{Base: r.buf, Len: r.len}}
		src, tag, ign, ctx, flags := r.src, r.tag, r.ignore, uintptr(r.ctx), r.flags
		if errno := ep.recvLocked(iov[:], src, tag, ign, ctx, flags); errno != 0 {
			cflags := fi.RECV | fi.MSG
			if flags&fi.TAGGED != 0 {
				cflags = fi.RECV | fi.TAGGED
			}
			if ep.rxCQ != nil {
				ep.rxCQ.completeErr(ctx, cflags, 0, 0, 0, tag, errno, 0, nil)
			}
			if ep.recvCntr != nil {
				ep.recvCntr.incErr()
			}
		}
	}
	atomic.StoreUint64(fastWord(p, epfRQCount), 0)
	atomic.StoreUint64(fastWord(p, epfRQHead), 0)
}
