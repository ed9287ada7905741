package shm

import (
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/transport"
	"golang.org/x/sys/unix"
)

// Fast-peer descriptors: what code outside Go (the library's C side) needs
// to push an inline message into a peer's ring by itself. The endpoint
// keeps one descriptor per peer, in memory it maps outside the Go
// heap, at index*FastPeerSize (128); FastPeer hands out its address.
// Layout (native-endian uint64 words):
//
//	+0   ok: 1 while a C producer may push inline cells to this peer (it
//	     is connected, not dead, and has no queued control cells that a
//	     new message would overtake); 0 sends everything through Go
//	+8   address of the peer's receive ring (a Ring, version 3)
//	+16  address of the peer's doorbell waiter count (uint32)
//	+24  address of the peer's doorbell sequence (uint32, a shared futex)
//	+32  address of the peer's segment state word (segOpen = 0)
//	+40  the sender id to put in cells: this endpoint's id
//	+48  messages the C producer sent (folded into Stats.Sent/Inline)
//	+56  1 if the producer must fence (a full barrier) between publishing
//	     its cells and reading the waiter count, 0 if membarrier covers
//	     it (fence.go)
//	+64  the peer's endpoint id (what its cells carry as sender id)
//	+72  the ring's cell count minus one, as validated when the segment
//	     was mapped: the only cell count a producer may use (the count in
//	     the ring's header is the peer's to rewrite)
//	+80  address of this endpoint's producer slot in that ring (slots.go):
//	     the pos word, with n at +8; written before every reservation
//
// A C producer holds the endpoint owner's lock (the provider's domain
// lock) while it reads a descriptor and uses the memory it points to: the
// endpoint changes descriptors and unmaps peer segments only under that
// lock too. It must build cells exactly as sendInline does (cell.go), push
// them as TryPushCells does (ring.go), ring the doorbell as ring2 does,
// and leave everything else (a full ring, a closed peer, a long message)
// to Send.
const (
	FastPeerSize = 128
	maxFastPeers = 1024

	fpOK    = 0
	fpRing  = 8
	fpWait  = 16
	fpSeq   = 24
	fpState = 32
	fpEPID  = 40
	fpSent  = 48
	fpFence = 56
	fpPeer  = 64
	fpMask  = 72
	fpSlot  = 80
)

// FastPeer implements transport.FastSender.
func (e *Endpoint) FastPeer(c transport.Conn) unsafe.Pointer {
	p := e.conn(c)
	if p == nil || e.closed || int(p.idx) >= maxFastPeers {
		return nil
	}
	if e.fast == nil {
		b, err := unix.Mmap(-1, 0, maxFastPeers*FastPeerSize, unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil
		}
		e.fast = b
		for _, q := range e.peers {
			e.syncFast(q)
		}
	}
	return unsafe.Pointer(&e.fast[int(p.idx)*FastPeerSize])
}

// syncFast rewrites p's descriptor from p's state. Every change to a
// peer's connection, liveness, control queue or mapping calls it.
func (e *Endpoint) syncFast(p *peer) {
	if e.fast == nil || int(p.idx) >= maxFastPeers {
		return
	}
	d := e.fast[int(p.idx)*FastPeerSize:][:FastPeerSize]
	ok := p.connected && p.dead == nil && p.ctlHead == len(p.ctl) && p.ring != nil && !e.closed &&
		p.ring.slotAddr() != 0
	if !ok {
		wordAt(d, fpOK).Store(0)
		return
	}
	wordAt(d, fpRing).Store(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p.ring.mem)))))
	wordAt(d, fpWait).Store(uint64(uintptr(unsafe.Pointer(p.bellWait))))
	wordAt(d, fpSeq).Store(uint64(uintptr(unsafe.Pointer(p.bellSeq))))
	wordAt(d, fpState).Store(uint64(uintptr(unsafe.Pointer(wordAt(p.seg.mem, offSegState)))))
	wordAt(d, fpEPID).Store(e.epid)
	wordAt(d, fpPeer).Store(p.epid)
	wordAt(d, fpFence).Store(b2u(!asymFences()))
	wordAt(d, fpMask).Store(p.ring.mask)
	wordAt(d, fpSlot).Store(uint64(p.ring.slotAddr()))
	wordAt(d, fpOK).Store(1)
}

// fastSent is what C producers sent through the descriptors.
func (e *Endpoint) fastSent() uint64 {
	var n uint64
	for i := 0; i < len(e.fast); i += FastPeerSize {
		n += wordAt(e.fast, i+fpSent).Load()
	}
	return n
}

// closeFast turns every descriptor off and unmaps them; Close calls it
// under the owner's lock, so no C producer is using one.
func (e *Endpoint) closeFast() {
	if e.fast == nil {
		return
	}
	e.fastClosed = e.fastSent()
	_ = unix.Munmap(e.fast)
	e.fast = nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func fastWord(b []byte, off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&b[off : off+8 : off+8][0]))
}
